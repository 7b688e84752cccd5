#!/bin/sh
# Checks systemd/nddd.service with systemd-analyze verify, against the
# daemon just built (the unit names the installed path, which may not
# exist here), after checking that it sets the resource ceilings
# docs/operations.md documents.  Skips the verification, saying so, where
# systemd-analyze is absent.
set -eu

unit=systemd/nddd.service
bin=${NDDD_BIN:-$(pwd)/daemon/nddd}

for key in MemoryMax TasksMax; do
	if ! grep -Eq "^$key=[^[:space:]]+" "$unit"; then
		echo "systemd-verify: $unit sets no $key="
		echo "systemd-verify: FAILED"
		exit 1
	fi
done

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "systemd-verify: SKIPPED: systemd-analyze is not installed"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|/usr/local/bin/nddd|$bin|" "$unit" > "$tmp/nddd.service"
# verify prints problems but may exit 0 for warnings: fail on any output
# that concerns our unit.
out=$(systemd-analyze verify "$tmp/nddd.service" 2>&1 || echo "exit status $?")
if printf '%s\n' "$out" | grep -q 'nddd'; then
	printf '%s\n' "$out"
	echo "systemd-verify: FAILED"
	exit 1
fi
echo "systemd-verify: $unit passed systemd-analyze verify"

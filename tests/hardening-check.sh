#!/bin/sh
# Checks that the release build is hardened as the Makefile asks
# (HARDEN_CFLAGS_release and the flags after it), by reading the ELF files
# with readelf:
#   nddd, nddctl   position-independent executables (ELF type DYN, flagged
#                  PIE), full RELRO (a GNU_RELRO segment and BIND_NOW),
#                  stack canaries (they call __stack_chk_fail) and
#                  fortified C library calls (they call some __*_chk);
#   libnddd.so and the plugins   full RELRO.
# Skips, saying so, where readelf is absent (tools/install-deps test
# installs it).
#
#   tests/hardening-check.sh [BUILD_DIR]       (default build/release)
set -eu

dir=${1:-build/release}

if ! command -v readelf >/dev/null 2>&1; then
	echo "hardening-check: SKIPPED: readelf is not installed (binutils)"
	exit 0
fi

failed=0
fail() {
	echo "hardening-check: $1: $2"
	failed=1
}

# Full RELRO: the relocations are resolved at start-up (BIND_NOW, or NOW
# among the FLAGS or FLAGS_1 bits), and the GNU_RELRO segment is then
# made read-only.
check_relro() {
	readelf -lW "$1" | grep -q 'GNU_RELRO' ||
		fail "$1" "no GNU_RELRO segment (link with -z relro)"
	readelf -dW "$1" | grep -Eq '\(BIND_NOW\)|\(FLAGS(_1)?\).*[[:space:]]NOW' ||
		fail "$1" "no BIND_NOW (link with -z now): partial RELRO only"
}

check_program() {
	if [ ! -f "$1" ]; then
		fail "$1" "missing (make it first)"
		return
	fi
	readelf -hW "$1" | grep -Eq 'Type:[[:space:]]+DYN' &&
	    readelf -dW "$1" | grep -Eq '\(FLAGS_1\).*[[:space:]]PIE' ||
		fail "$1" "not a position-independent executable (-fPIE -pie)"
	check_relro "$1"
	syms=$(readelf --dyn-syms -W "$1")
	printf '%s\n' "$syms" | grep -Eq '[[:space:]]__stack_chk_fail(@|$)' ||
		fail "$1" "no stack protector (__stack_chk_fail; -fstack-protector-strong)"
	printf '%s\n' "$syms" | grep -Eq '[[:space:]]__[a-z0-9_]+_chk(@|$)' ||
		fail "$1" "no fortified call (__*_chk; -D_FORTIFY_SOURCE=2 -O2)"
}

check_program "$dir/bin/nddd"
check_program "$dir/bin/nddctl"
n=2
for so in "$dir/libnddd.so" "$dir"/accel/nddd-accel-*.so \
    "$dir"/plugins/nddd-accel-*.so; do
	[ -f "$so" ] || continue
	check_relro "$so"
	n=$((n + 1))
done

if [ "$failed" -ne 0 ]; then
	echo "hardening-check: FAILED"
	exit 1
fi
echo "hardening-check: nddd and nddctl are PIE with full RELRO, stack" \
    "canaries and fortified calls; $((n - 2)) shared objects have full RELRO"

#!/bin/bash
# Runs the test programs given as arguments at the same time (make check:
# the unit tests beside the integration tests, which spend much of their
# time waiting for daemons), each one's output kept apart and printed
# whole, in the order given, once all are done.  Fails if any failed,
# naming which.
#
#   tests/run-together.sh PROGRAM...
set -u
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
progs=("$@")
pids=()
for i in "${!progs[@]}"; do
	"${progs[$i]}" > "$out/$i" 2>&1 &
	pids+=($!)
done
failed=()
for i in "${!pids[@]}"; do
	if ! wait "${pids[$i]}"; then
		failed+=("$(basename "${progs[$i]}")")
	fi
done
for i in "${!pids[@]}"; do
	cat "$out/$i"
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "run-together: failed: ${failed[*]}" >&2
	exit 1
fi

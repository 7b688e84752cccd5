#!/bin/bash
# Durable submits with the host index on (the default configuration) and
# off (`[urls] host_index = no`), against Redis with appendfsync always,
# in the same run: url_bench and redis_bench, N new URLs each (default
# 2,000,000), 2 clients with 32 batches of 1,000 in flight each, on fresh
# stores, in ROUNDS rounds (default 3; Redis first in odd rounds, last in
# even ones: the machine's speed drifts, only a round's figures compare).
# For nddd, the bytes the daemon wrote to the disk per URL meanwhile
# (/proc/PID/io: the journal's frames, the segments, the host index).
# The default configuration holds 10,000,000 URLs: larger N grow its index.
#
#   tests/bench/submit_bench.sh [BIN]       (default build/release/bin)
#   N=10000000 ROUNDS=1 tests/bench/submit_bench.sh
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "${1:-$root/build/release/bin}" && pwd)
n=${N:-2000000}
rounds=${ROUNDS:-3}
. "$root/tests/bench/common.sh"

written() { awk '/^write_bytes:/ { print $2 }' "/proc/$1/io"; }

run_nddd() {	# round, host_index (yes or no)
	local w0 line
	start_nddd "[urls]
host_index = $2"
	w0=$(written "$nddd_pid")
	line=$("$bin/url_bench" -H "127.0.0.1:$nddd_port" -n "$n" -c 2 \
	    -w 32 --phase submit | grep phase=)
	echo "round $1 nddd host_index=$2 $line disk_bytes_per_url=$(( ($(written "$nddd_pid") - w0) / n ))"
	eval "nddd_$2=$(sed -n 's/.*urls_per_s=\([0-9]*\).*/\1/p' <<<"$line")"
	kill -TERM "$nddd_pid"
	wait "$nddd_pid" || true
}

run_redis() {	# round
	local line
	start_redis_durable
	line=$("$bin/redis_bench" -p "$redis_port" -n "$n" -c 2 -w 32 |
	    grep "phase=submit")
	echo "round $1 redis $line"
	redis=$(sed -n 's/.*urls_per_s=\([0-9]*\).*/\1/p' <<<"$line")
	kill -TERM "$redis_pid"
	wait "$redis_pid" || true
}

if ! command -v redis-server > /dev/null; then
	echo "redis: skipped (no redis-server)"
	run_nddd 1 yes
	run_nddd 1 no
	exit 0
fi
for r in $(seq "$rounds"); do
	[ $((r % 2)) -eq 1 ] && run_redis "$r"
	run_nddd "$r" yes
	run_nddd "$r" no
	[ $((r % 2)) -eq 0 ] && run_redis "$r"
	echo "round $r durable submit / Redis appendfsync always: host index on $(ratio "$nddd_yes" "$redis"), off $(ratio "$nddd_no" "$redis")"
done

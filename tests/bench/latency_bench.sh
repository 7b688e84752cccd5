#!/bin/bash
# One URL per request and one request in flight: what a client that asks
# one URL at a time waits.  nddd (durable, the default configuration,
# host index on) through libnddd (url_bench -c 1 -w 1 -b 1) against Redis
# with appendfsync always through hiredis (redis_bench, SADD and
# SISMEMBER), N URLs each, in the same run.  With one request in flight,
# a rate is the inverse of the mean latency; both benches print each
# request's p50 and p99 too.
#
# ROUNDS rounds (default 3), each on fresh stores (a submit of a URL Redis
# already holds writes nothing to its log), nddd first in odd rounds and
# Redis first in even ones: on a shared machine the speed of both drifts
# from minute to minute, and a ratio is only worth the pair measured
# together.
#
#   tests/bench/latency_bench.sh [BIN]     (default build/release/bin)
#   N=20000 ROUNDS=3 tests/bench/latency_bench.sh
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "${1:-$root/build/release/bin}" && pwd)
n=${N:-20000}
rounds=${ROUNDS:-3}
. "$root/tests/bench/common.sh"

run_nddd() {
	start_nddd
	"$bin/url_bench" -H "127.0.0.1:$nddd_port" -n "$n" -c 1 -w 1 -b 1 \
	    --phase all | grep phase= | sed "s/^/round $1 nddd /"
	kill -TERM "$nddd_pid"
	wait "$nddd_pid" || true
}

run_redis() {
	start_redis_durable
	"$bin/redis_bench" -p "$redis_port" -n "$n" -c 1 -w 1 -b 1 |
	    grep phase= | sed "s/^/round $1 redis /"
	kill -TERM "$redis_pid"
	wait "$redis_pid" || true
}

if ! command -v redis-server > /dev/null; then
	echo "redis: skipped (no redis-server)"
	run_nddd 1
	exit 0
fi
for r in $(seq "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then
		run_nddd "$r"
		run_redis "$r"
	else
		run_redis "$r"
		run_nddd "$r"
	fi
done

#!/bin/bash
# One URL per request and one request in flight: what a client that asks
# one URL at a time waits.  nddd (durable, the default configuration,
# host index on) through libnddd (url_bench -c 1 -w 1 -b 1) against Redis
# with appendfsync always through hiredis (redis_bench, SADD and
# SISMEMBER), N URLs each, in the same run.  With one request in flight,
# a rate is the inverse of the mean latency; url_bench also prints each
# request's p50 and p99.
#
#   tests/bench/latency_bench.sh [BIN]     (default build/release/bin)
#   N=20000 tests/bench/latency_bench.sh
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "${1:-$root/build/release/bin}" && pwd)
n=${N:-20000}
. "$root/tests/bench/common.sh"

p=$(free_port)
cat > "$tmp/c.conf" <<CONF
[server]
listen = 127.0.0.1:$p
[store]
data_dir = $tmp/data
[simhash]
stopwords = $root/conf/stopwords.txt
CONF
"$bin/nddd" -c "$tmp/c.conf" --allow-root 2>"$tmp/log" &
pid=$!
pids+=("$pid")
wait_listening "$p"
"$bin/url_bench" -H "127.0.0.1:$p" -n "$n" -c 1 -w 1 -b 1 --phase all |
	grep phase= | sed 's/^/nddd /'
kill -TERM "$pid"
wait "$pid" || true

if ! command -v redis-server > /dev/null; then
	echo "redis: skipped (no redis-server)"
	exit 0
fi
rp=$(free_port)
mkdir "$tmp/redis"
redis-server --port "$rp" --dir "$tmp/redis" --logfile "$tmp/redis.log" \
	--appendonly yes --appendfsync always --save "" &
pids+=($!)
for i in $(seq 500); do
	redis-cli -p "$rp" ping > /dev/null 2>&1 && break
	sleep 0.02
done
"$bin/redis_bench" -p "$rp" -n "$n" -c 1 -w 1 -b 1 | grep phase= |
	sed 's/^/redis /'

#!/bin/bash
# URL checks and durable submits per second through libnddd's shard
# routing, with 1, 2 and 3 shards on this machine (every daemon and the
# client share its cores), and one daemon called directly (nddd_urls, the
# URLs as text) as the reference of the same run.
#
#   tests/bench/shards_bench.sh [BIN_DIR]
#
# Each configuration gets fresh daemons (sync = full), takes BENCH_URLS
# (default 2,000,000) synthetic URLs as durable submits, then checks them
# all, from BENCH_CLIENTS (default 2) client threads handing chunks of
# 10,000 URLs to nddd_shards_urls (batches of 1,000, 4 in flight per
# shard), the URLs as text; "3d" is 3 shards sent digests instead.  Prints
# a line per configuration and phase (shards_bench's), and the rates
# against the direct daemon's.  BENCH_SHARD_CONFS picks the
# configurations (default "direct 1 2 3 3d").
set -euo pipefail

bin=$(cd "${1:-build/release/bin}" && pwd)
as_root=()
[ "$(id -u)" -eq 0 ] && as_root=(--allow-root)
urls=${BENCH_URLS:-2000000}
clients=${BENCH_CLIENTS:-2}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/bench/common.sh
. "$root/tests/bench/common.sh"

# Starts n fresh daemons; their addresses, comma-separated, in $list.
start_shards() {
	local n=$1 i port dir
	list=""
	for i in $(seq 1 "$n"); do
		port=$(free_port)
		dir="$tmp/run$RANDOM-$i"
		mkdir -p "$dir"
		printf '[server]\nlisten = 127.0.0.1:%s\n[store]\ndata_dir = %s\nsync = full\n[urls]\ncapacity = %s\n' \
			"$port" "$dir/data" "$urls" > "$dir/nddd.conf"
		"$bin/nddd" -c "$dir/nddd.conf" "${as_root[@]}" 2> "$dir/nddd.log" &
		pids+=($!)
		for _ in $(seq 1 600); do
			port_free "$port" || break
			sleep 0.05
		done
		list="${list:+$list,}127.0.0.1:$port"
	done
}
stop_shards() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
}
field() { sed -n "s/.*$2=\([0-9.]*\).*/\1/p" <<<"$1"; }

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "== $urls URLs, $clients client threads"
declare -A rate
for conf in ${BENCH_SHARD_CONFS:-direct 1 2 3 3d}; do
	n=$conf
	extra=()
	if [ "$conf" = direct ]; then n=1; extra=(--direct); fi
	if [ "$conf" = 3d ]; then n=3; extra=(--digests); fi
	start_shards "$n"
	for phase in submit check; do
		line=$("$bin/shards_bench" -H "$list" -n "$urls" -c "$clients" \
			--phase "$phase" "${extra[@]}")
		echo "$line"
		rate[$conf.$phase]=$(field "$line" urls_per_s)
	done
	stop_shards
done
for phase in submit check; do
	for conf in ${BENCH_SHARD_CONFS:-1 2 3 3d}; do
		[ "$conf" = direct ] && continue
		awk -v p="$phase" -v c="$conf" -v a="${rate[$conf.$phase]}" \
			-v b="${rate[direct.$phase]}" \
			'BEGIN { printf "%s, %s shard(s): %.0f URLs/s, %.2f x one daemon called directly\n", p, c, a, a / b }'
	done
done

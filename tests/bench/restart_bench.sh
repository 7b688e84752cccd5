#!/bin/bash
# Restart times, cold and warm (issue: a daemon ready in seconds after a
# reboot).  A store of URLS synthetic URLs (url_bench's) and the
# Reuters-21578 bodies times REP as documents is made with BIN's daemon;
# then it is restarted 3 times warm and once cold (the page cache dropped:
# root only, skipped otherwise), each time timed from the start of nddd to
# its first accepted connection, and its log's start-up lines printed.
#
#   tests/bench/restart_bench.sh [BIN]     (default build/release/bin)
#   URLS=10000000 REP=5 DATA=../shared/data tests/bench/restart_bench.sh
#
# BIN's nddd is measured; the store is filled by url_bench and doc_bench
# of build/release/bin (TOOLS), so that an older build can be compared.
# With verified answers each document is compared with its copies: many
# copies of one body (a large REP) make the filling slow, not the start.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "${1:-$root/build/release/bin}" && pwd)
data=${DATA:-${NDDD_TEST_DATA:-$root/../shared/data}}
urls=${URLS:-10000000}
rep=${REP:-5}
tools=$(cd "${TOOLS:-$root/build/release/bin}" && pwd)
. "$root/tests/bench/common.sh"

p=$(free_port)
cat > "$tmp/c.conf" <<CONF
[server]
listen = 127.0.0.1:$p
[store]
data_dir = $tmp/data
[urls]
capacity = $((urls + urls / 10 + 1000000))
[simhash]
stopwords = $root/conf/stopwords.txt
CONF

# Starts nddd; sets secs to the seconds until it accepts a connection.
start() {
	local t0
	t0=$(date +%s.%N)
	"$bin/nddd" -c "$tmp/c.conf" --allow-root 2>>"$tmp/log" &
	pid=$!
	pids+=("$pid")
	wait_listening "$p"
	secs=$(echo "$(date +%s.%N) - $t0" | bc)
}
stop() { kill -TERM "$pid"; wait "$pid" || true; }

echo "# $bin: $urls URLs, the Reuters bodies x $rep"
start
"$tools/url_bench" -H "127.0.0.1:$p" -n "$urls" -c 2 -w 32 --phase submit |
	grep -o 'phase=submit urls=[0-9]* seconds=[0-9.]* urls_per_s=[0-9]*'
"$tools/doc_bench" -H "127.0.0.1:$p" --reuters "$data/text_corpora/reuters21578" \
	-r "$rep" -b 256 -w 4 -L 0 -S "$root/conf/stopwords.txt" 2>&1 |
	grep -E '^phase=doc-submit ' || true
stop
echo "store $(du -sm "$tmp/data" | cut -f1) MB"
: > "$tmp/log"
for r in 1 2 3; do
	start
	printf "warm %.2f s\n" "$secs"
	stop
done
grep -E 'rebuilt|documents in|listening' "$tmp/log" | tail -3
if [ "$(id -u)" -eq 0 ] && [ -w /proc/sys/vm/drop_caches ]; then
	: > "$tmp/log"
	sync
	echo 3 > /proc/sys/vm/drop_caches
	start
	printf "cold %.2f s\n" "$secs"
	stop
	grep -E 'rebuilt|documents in|listening' "$tmp/log" | tail -3
else
	echo "cold: skipped (dropping the page cache needs root)"
fi

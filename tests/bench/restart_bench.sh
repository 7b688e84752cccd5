#!/bin/bash
# Restart times, warm and cold (issue: a daemon ready in seconds after a
# reboot).  A store of URLS synthetic URLs (url_bench's) and DOCS short
# documents (30 words drawn from 20,000, one per URL of 100,000 hosts,
# sent with nddctl doc-submit --jsonl) is made with BIN's daemon; then it
# is restarted warm, in turns, through the restart image its clean stop
# left and from the records (the image removed first, as after a crash),
# 3 times each, then once each cold (the page cache dropped: root only,
# skipped otherwise).  Each start is timed from the start of nddd to its
# first accepted connection, and its log's start-up lines printed.
#
#   tests/bench/restart_bench.sh [BIN]     (default build/release/bin)
#   URLS=10000000 DOCS=10000000 tests/bench/restart_bench.sh
#
# BIN's nddd is measured; the store is filled by url_bench and nddctl of
# build/release/bin (TOOLS), so that an older build can be compared (one
# without the image reads the records every time).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "${1:-$root/build/release/bin}" && pwd)
urls=${URLS:-10000000}
docs=${DOCS:-10000000}
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

# The documents, one JSON line each; the same for a given count.
short_docs() {
	awk -v n="$1" 'BEGIN {
		srand(7)
		for (i = 0; i < n; i++) {
			line = "{\"url\": \"http://host" i % 100000 \
			    ".example.org/doc/" i "\", \"text\": \""
			for (w = 0; w < 30; w++)
				line = line (w ? " " : "") "w" \
				    int(rand() * 20000)
			print line "\"}"
		}
	}'
}

# One start and stop: $1 "warm" or "cold", $2 "image" or "records".
restart() {
	[ "$2" = image ] || rm -f "$tmp/data/docs.image"
	: > "$tmp/log"
	if [ "$1" = cold ]; then
		sync
		echo 3 > /proc/sys/vm/drop_caches
	fi
	start
	printf "%s, %s: %.2f s (" "$1" "$2" "$secs"
	grep -oE 'from the (restart image|records) in [0-9.]+ s' "$tmp/log" |
		tr -d '\n'
	printf "; URLs %s)\n" "$(grep -oE 'segments in [0-9.]+ s' "$tmp/log" |
		sed 's/^segments //')"
	stop
	grep -oE 'kept in docs.image for the next start, in [0-9.]+ s' \
		"$tmp/log" | sed 's/^/    stop: /' || true
}

echo "# $bin: $urls URLs, $docs short documents"
start
"$tools/url_bench" -H "127.0.0.1:$p" -n "$urls" -c 2 -w 32 --phase submit |
	grep -o 'phase=submit urls=[0-9]* seconds=[0-9.]* urls_per_s=[0-9]*'
t0=$(date +%s)
short_docs "$docs" | "$tools/nddctl" -H "127.0.0.1:$p" doc-submit --jsonl \
	--batch 1024 - > /dev/null
echo "documents submitted in $(( $(date +%s) - t0 )) s"
stop
echo "store $(du -sm "$tmp/data/data.mdb" | cut -f1) MB; restart image" \
	"$(du -sm "$tmp/data/docs.image" 2>/dev/null | cut -f1) MB"
for r in 1 2 3; do
	restart warm image
	restart warm records
done
if [ "$(id -u)" -eq 0 ] && [ -w /proc/sys/vm/drop_caches ]; then
	restart cold image
	restart cold records
else
	echo "cold: skipped (dropping the page cache needs root)"
fi

#!/bin/bash
# Bulk URL checks past RAM (docs/urlstore.md, "Bulk checks").  URLS
# synthetic URLs (url_bench's; default 50,000,000) are submitted with
# `nddctl url-submit --bulk` to a daemon in memory (host index on, as the
# default configuration has it); then the daemon is restarted in a memory
# cgroup of 1/FRACTION of its store (default 5), the page cache dropped,
# and every URL is checked with `nddctl url-check --bulk`: URLs a second
# over the whole command (hashing, sorting, answers printed in input
# order), and the disk's bytes read a second meanwhile (/proc/diskstats:
# the store; the URL file is read into the cache before), against fio's
# sequential and 4 KiB random (queue depth 32) reads of the same disk in
# the same run; the answers go to a file, as a user keeps them.  Every
# 1000th answer is compared with an online check of the same URL by the
# same daemon.  Root only (a cgroup, dropping the
# page cache): skipped with a message otherwise.
#
#   tests/bench/bulk_bench.sh [BIN]     (default build/release/bin)
#   URLS=5000000 FRACTION=5 tests/bench/bulk_bench.sh
#   KEEP=/var/tmp/bulk50m tests/bench/bulk_bench.sh   (the store kept there,
#                                                      and reused if there)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "${1:-$root/build/release/bin}" && pwd)
urls=${URLS:-50000000}
fraction=${FRACTION:-5}
keep=${KEEP:-}
. "$root/tests/bench/common.sh"

if [ "$(id -u)" != 0 ] || ! [ -w /proc/sys/vm/drop_caches ]; then
	echo "bulk: skipped: needs root (a memory cgroup, the page cache dropped)"
	exit 0
fi
if [ -d /sys/fs/cgroup/memory ]; then
	cg=/sys/fs/cgroup/memory/nddd-bulk-$$
	limit_file=memory.limit_in_bytes
elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	cg=/sys/fs/cgroup/nddd-bulk-$$
	limit_file=memory.max
else
	echo "bulk: skipped: no memory controller (cgroup v1's or v2's)"
	exit 0
fi
dev=$(basename "$(df --output=source "$tmp" | tail -1)")
sectors_read() { awk -v d="$dev" '$3 == d { print $6 }' /proc/diskstats; }
now() { date +%s.%N; }

echo "== bulk check past RAM: $urls URLs, the daemon in 1/$fraction of its store ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, avx512f $(grep -qw avx512f /proc/cpuinfo && echo yes || echo no), disk $dev)"
seq_mbs=0 rand_iops=0
if command -v fio > /dev/null; then
	fio --name=seqread --filename="$tmp/fio.dat" --size=2G --rw=read \
		--bs=1M --iodepth=8 --ioengine=libaio --direct=1 --runtime=10 \
		--time_based --output-format=terse --terse-version=3 > "$tmp/fio.out"
	seq_mbs=$(awk -F';' '{ printf "%.0f", $7 / 1024 }' "$tmp/fio.out")
	fio --name=randread --filename="$tmp/fio.dat" --size=2G --rw=randread \
		--bs=4k --iodepth=32 --ioengine=libaio --direct=1 --runtime=10 \
		--time_based --output-format=terse --terse-version=3 > "$tmp/fio.out"
	rand_iops=$(awk -F';' '{ print $8 }' "$tmp/fio.out")
	rm -f "$tmp/fio.dat"
	echo "disk seqread_1m_mb_per_s=$seq_mbs randread_4k_qd32_iops=$rand_iops (fio)"
else
	echo "disk: no fio (Debian: fio); no disk rates to compare"
fi

"$bin/url_bench" --phase print -n "$urls" > "$tmp/urls.txt"
p=$(free_port)
data=${keep:-$tmp/data}
cat > "$tmp/c.conf" <<CONF
[server]
listen = 127.0.0.1:$p
[store]
data_dir = $data
[urls]
capacity = $((urls + urls / 20 + 1000000))
host_index = yes
[simhash]
stopwords = $root/conf/stopwords.txt
CONF
start() {	# the cgroup to start in, or nothing
	if [ -n "${1:-}" ]; then
		sh -c "echo \$\$ > $1/cgroup.procs && exec $bin/nddd -c $tmp/c.conf --allow-root" \
			2>> "$tmp/log" &
	else
		"$bin/nddd" -c "$tmp/c.conf" --allow-root 2>> "$tmp/log" &
	fi
	pid=$!
	pids+=("$pid")
	wait_listening "$p"
}
stop() { kill -TERM "$pid"; wait "$pid" || true; }
ctl() { "$bin/nddctl" -H "127.0.0.1:$p" "$@"; }

start
if [ -n "$keep" ] && [ "$(ctl stats | awk '$1 == "urls" { print $2 }')" = "$urls" ]; then
	echo "bulk_submit: the store of $keep reused"
else
	t0=$(now)
	ctl --relaxed url-submit --bulk "$tmp/urls.txt" --spill-dir "$tmp" > /dev/null
	t1=$(now)
	echo "bulk_submit urls=$urls seconds=$(echo "$t1 - $t0" | bc) urls_per_s=$(echo "$urls / ($t1 - $t0)" | bc) (in memory, relaxed)"
fi
anon=$(( $(awk '/^Anonymous:/ { print $2 }' "/proc/$pid/smaps_rollup") * 1024 ))
stop
store=$(stat -c %s "$data/data.mdb")
limit=$((store / fraction))
echo "store_mb=$((store / 1048576)) daemon_anon_mb=$((anon / 1048576)) cgroup_limit_mb=$((limit / 1048576))"
if [ "$limit" -lt $((anon + 64 * 1048576)) ]; then
	echo "bulk: skipped: 1/$fraction of the store leaves the daemon's own memory no room"
	exit 0
fi
mkdir "$cg"
trap 'cleanup; rmdir "$cg" 2>/dev/null || true' EXIT
echo "$limit" > "$cg/$limit_file"
sync
echo 3 > /proc/sys/vm/drop_caches
t0=$(now)
start "$cg"
echo "cold_start_s=$(echo "$(now) - $t0" | bc)"
sync
echo 3 > /proc/sys/vm/drop_caches
cat "$tmp/urls.txt" > /dev/null	# the input from the cache, the store from the disk
r0=$(sectors_read)
t0=$(now)
ctl url-check --bulk "$tmp/urls.txt" --spill-dir "$tmp" --summary \
	> "$tmp/bulk.out" 2> "$tmp/summary"
t1=$(now)
r1=$(sectors_read)
cat "$tmp/summary"
answered=$(sed -n 's/.*answered in \([0-9.]*\) s.*/\1/p' "$tmp/summary")
awk 'NR % 1000 == 1' "$tmp/bulk.out" > "$tmp/sample.bulk"
rm "$tmp/bulk.out"
secs=$(echo "$t1 - $t0" | bc)
read_mb=$(( (r1 - r0) * 512 / 1048576 ))
rate=$(echo "$urls / $secs" | bc)
mbs=$(echo "$read_mb / $secs" | bc)
join_mbs=$(echo "$read_mb / $answered" | bc)
echo "bulk_check urls=$urls seconds=$secs urls_per_s=$rate disk_read_mb=$read_mb disk_read_mb_per_s=$mbs seen_in_sample=$(grep -c '^seen' "$tmp/sample.bulk" || true)"
echo "bulk_check answering: seconds=$answered urls_per_s=$(echo "$urls / $answered" | bc) disk_read_mb_per_s=$join_mbs"
if [ "$seq_mbs" != 0 ]; then
	echo "bulk_check disk read / fio sequential: whole command $(ratio "$mbs" "$seq_mbs"), answering $(ratio "$join_mbs" "$seq_mbs")"
fi
awk 'NR % 1000 == 1' "$tmp/urls.txt" > "$tmp/sample.urls"
ctl url-check - < "$tmp/sample.urls" > "$tmp/sample.online" || true
if cmp -s "$tmp/sample.bulk" "$tmp/sample.online"; then
	echo "bulk_check sample=$(wc -l < "$tmp/sample.online") equal to the online checks"
else
	echo "bulk_check sample DIFFERS from the online checks"
	exit 1
fi
stop

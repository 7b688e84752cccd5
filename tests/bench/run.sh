#!/bin/bash
# make bench: the benchmarks, with their peers measured in the same run.
#
#   tests/bench/run.sh BIN_DIR
#
# URL service: a real nddd on loopback (sync = full: every acknowledged
# submit is on disk) takes url_bench's pipelined batches of 1,000: durable
# submits, checks of stored URLs (in a random order), checks of unseen URLs,
# for BENCH_URLS synthetic URLs (default 5,000,000) plus the real URL lists
# of the shared test data; the bytes the disk took per URL (the device's
# own count), the anonymous memory per URL at rest, a batch's latency with
# one in flight, the restart.  Then relaxed submits, and the three phases
# with digests (the client canonicalizes and hashes before the clock, as
# redis_bench does for Redis), each on a fresh nddd.  BENCH_BASELINE_NDDD,
# the path of another nddd binary (an earlier release), runs the same
# durable phases on it first, in the same run, for a before and after.
#
# The cost curve: one nddd filled in steps of a million URLs; submit and
# check rates at each of BENCH_CURVE_LEVELS stored (default 1M 5M 20M 50M;
# BENCH_CURVE=0 skips it).
#
# Past RAM: BENCH_PAST_RAM_URLS (default 8,000,000) URLs in memory, then the
# same in a memory cgroup that leaves the store's pages a quarter of the
# store; the disk's 4 KiB random reads at queue depth 32 measured by fio
# (BENCH_PAST_RAM=0 skips it; without root or a memory controller it says
# so and skips).
#
# Load: many connections (what an idle one costs, how many are held), and
# throughput of many small pipelining clients over plain TCP and over TLS.
#
# Redis, started here on loopback, the way crawlers use it today: SADD /
# SMISMEMBER of 16-byte MD5 digests in one set, same URLs, same batches and
# pipelining; once with its default persistence (periodic snapshots) and
# once durable (appendfsync always); the ratios against nddd.
#
# Documents end to end: doc_bench submits the Reuters-21578 bodies, then
# the L3S-GN1 HTML pages (BENCH_DOC_REPEAT times, default 5, under
# distinct URLs) to a fresh nddd with sync = full, then queries them by
# body, one document per request and in doc_batch requests, and measures
# the engine on the same documents in the same run (BENCH_SIMD, default
# auto, names the kernel of both: avx2 forces the AVX2 code on an AVX-512
# machine).  Then both corpora in bulk as users load them: `nddctl
# doc-submit --jsonl` and the Python client's submit_docs, stored then
# queried, against the engine in the same run (doc_bulk_bench.py).
#
# The batch job on Dask (tests/bench/dask_bench.py): `python3 -m
# nddd.dedup --local 2` on the Reuters-21578 bodies BENCH_DOC_REPEAT times,
# against one fresh nddd's bulk load of the same documents (the Python
# client's submit_docs), in the same run.
#
# The Python client against redis-py (tests/bench/python_bench.py):
# BENCH_PY_URLS (default 200,000) URLs in batches, BENCH_PY_SINGLE (default
# 10,000) one call per URL, each phase BENCH_PY_REPEAT (default 3) times.
#
# Scrapy crawls (tests/bench/scrapy_bench.py): a generated loopback site of
# 1,500 pages with 100 links each, crawled with Scrapy's own dupe filter,
# with nddd's filter and batch middleware, and with nddd's filter alone
# (each nddd fresh, sync = full), BENCH_SCRAPY_REPEAT (default 1) times.
#
# Shards (tests/bench/shards_bench.sh, shards_docs_bench.py): durable
# submits and checks through libnddd's shard routing over 1, 2 and 3
# daemons, against one daemon called directly, and the Reuters bodies
# through the Python client's ShardedClient against one daemon, and a
# fourth shard added by nddctl reshard under a load of checks
# (reshard_bench.py; BENCH_SHARDS=0 skips them).
#
# Durable submits with the host index on and off (submit_bench.sh: 3
# rounds of 2,000,000 URLs against Redis appendfsync always, and the bytes
# nddd wrote to the disk per URL); BENCH_SUBMIT=0 skips them.
#
# One URL per request (latency_bench.sh: nddd's durable submits and
# checks, one in flight, against Redis appendfsync always) and restarts
# (restart_bench.sh: BENCH_RESTART_URLS URLs and BENCH_RESTART_DOCS short
# documents, default 10,000,000 each, restarted warm and cold through the
# restart image and from the records); BENCH_LATENCY=0 skips them.
#
# Bulk checks past RAM (bulk_bench.sh): BENCH_BULK_URLS URLs (default
# 50,000,000) submitted with nddctl url-submit --bulk, then all checked
# with url-check --bulk by the daemon in a memory cgroup a fifth of its
# store, against fio's sequential and random reads (root only; 14 GB of
# disk and about 8 minutes; BENCH_BULK=0 skips it).
#
# Near duplicates (BENCH_NEARDUP=0 skips them): the labelled cases of
# neardup_bench.py (edited Reuters bodies, articles inside real page
# templates, the Clough-Stevenson answers) answered by nddd and by
# readability-lxml with MinHash LSH, for the seeds BENCH_NEARDUP_SEEDS
# (default 1 2); main-content extraction's F1 and speed against
# readability-lxml (extract_bench.py); the memory per stored document of
# the simhash tables and the sketch index at BENCH_SKETCH_DOCS (default
# 10,000,000) documents (sketchidx_bench).
#
# Near-duplicate index: nearidx_bench, in memory, with FAISS measured on
# the same data in the same process (BENCH_NEARIDX=0 skips it).
#
# Simhash engine: simhash_bench, every SIMD level on one thread and all
# cores, with the naive reference in the same run; then sketch_bench, a
# document's sketch against its simhash on one thread (BENCH_SIMHASH=0
# skips both).
#
# URL keys: md5_bench, URL digests a second on one thread, nddd's MD5 one
# at a time and eight at a time against OpenSSL's EVP, and whole keys
# (BENCH_MD5=0 skips it).
#
# The accelerator plugins' figures come after, from make bench-accel.
set -euo pipefail

bin=$(cd "${1:-build/release/bin}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
as_root=()
[ "$(id -u)" -eq 0 ] && as_root=(--allow-root)
data=${NDDD_TEST_DATA:-$root/../shared/data}
urls=${BENCH_URLS:-5000000}
clients=${BENCH_CLIENTS:-2}
window=${BENCH_WINDOW:-32}
files=(
	"$data/url_lists/ut1_blacklists/phishing_urls_2021-03-17.txt"
	"$data/url_lists/ut1_blacklists/all_categories_urls_HEAD.tsv"
	"$data/url_lists/ada_url_various_datasets/kasztp.txt"
	"$data/url_lists/ada_url_various_datasets/userbait.txt"
)
file_args=()
for f in "${files[@]}"; do file_args+=(--file "$f"); done

# shellcheck source=tests/bench/common.sh
. "$root/tests/bench/common.sh"
wait_port() {
	local i
	for i in $(seq 1 600); do
		if ! port_free "$1"; then return 0; fi
		sleep 0.05
	done
	echo "run.sh: nothing listens on $1; the newest logs:" >&2
	ls -t $(find "$tmp" -name '*.log') 2>/dev/null | head -2 | \
		xargs -r tail -n 5 >&2
	exit 1
}
field() { sed -n "s/.*phase=$2 .*$3=\([0-9.]*\).*/\1/p" <<<"$1"; }

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "== url service: $urls synthetic URLs + real lists, $clients clients x $window batches of 1000 in flight"

# An nddd's configuration, DIR/nddd.conf, listening on $port, its data
# in DIR/data, durable by default.
write_conf() {	# directory, URL capacity, extra configuration lines
	mkdir -p "$1"
	cat > "$1/nddd.conf" <<CONF
[server]
listen = 127.0.0.1:$port
[store]
data_dir = $1/data
sync = full
[urls]
capacity = $2
${3:-}
CONF
}

# A fresh nddd for each URL run below; $1 names its directory.  Data and
# configuration under $tmp/$1, URL capacity for $urls (common.sh's
# start_nddd starts one on the default configuration).
start_nddd_in() {	# name, extra configuration lines, binary
	local name=$1 extra=${2:-} exe=${3:-$bin/nddd}
	port=$(free_port)
	write_conf "$tmp/$name" $((urls + 200000)) "$extra"
	"$exe" -c "$tmp/$name/nddd.conf" "${as_root[@]}" \
		2> "$tmp/$name/nddd.log" &
	nddd=$!
	pids+=("$nddd")
	wait_port "$port"
}
stop_nddd() { kill -TERM "$nddd"; wait "$nddd"; }
# Sectors written to the device holding $tmp (the disk's own count: what
# reaches it, journals of the file system included, for the whole machine).
disk_dev=$(basename "$(df --output=source "$tmp" | tail -1)")
sectors() { awk '{ print $7 }' "/sys/class/block/$disk_dev/stat" 2>/dev/null || echo 0; }

# The durable phases on the nddd just started: submit, check of the stored
# URLs, check of unseen ones.  Sets out (their lines), stored (the URLs
# stored) and disk_bytes (per stored URL, the submit phase).
url_phases() {
	local s0 s1 sub chk unseen
	s0=$(sectors)
	sub=$("$bin/url_bench" -H "127.0.0.1:$port" -n "$urls" -c "$clients" \
		-w "$window" "${file_args[@]}" --phase submit)
	sync
	s1=$(sectors)
	chk=$("$bin/url_bench" -H "127.0.0.1:$port" -n "$urls" -c "$clients" \
		-w "$window" "${file_args[@]}" --phase check)
	unseen=$("$bin/url_bench" -H "127.0.0.1:$port" -n "$urls" -c "$clients" \
		-w "$window" --phase check-new)
	out=$(printf '%s\n%s\n%s\n' "$sub" "$chk" "$unseen" | grep phase=)
	stored=$("$bin/nddctl" -H "127.0.0.1:$port" stats | awk -F'\t' '$1 == "urls" { print $2 }')
	disk_bytes=$(( (s1 - s0) * 512 / stored ))
}

if [ -n "${BENCH_BASELINE_NDDD:-}" ]; then
	echo "== baseline: $BENCH_BASELINE_NDDD, the same durable phases"
	start_nddd_in baseline "" "$BENCH_BASELINE_NDDD"
	url_phases
	base_out=$out
	sed 's/^/baseline /' <<<"$out"
	echo "baseline disk_bytes_written_per_url=$disk_bytes (device $disk_dev, the submit phase)"
	sleep 11
	echo "baseline stored_urls=$stored anonymous_bytes=$(( $(awk '/^Anonymous:/ { print $2 }' "/proc/$nddd/smaps_rollup") * 1024 ))"
	stop_nddd
	rm -rf "$tmp/baseline"
	echo "== nddd"
fi
start_nddd_in durable
durable_port=$port
url_phases
echo "$out"
echo "nddd disk_bytes_written_per_url=$disk_bytes (device $disk_dev, the submit phase)"
"$bin/nddctl" -H "127.0.0.1:$port" stats | grep -E '^url_store\.(journal_bytes_written|store_bytes_written|flushes|merges|segments)' | sed 's/^/nddd /'
# Memory at rest: once nothing is in flight the daemon gives back what
# bursts left in its heaps (every 5 s, and the URL writer its buffers a
# second after its last group): two of those trims.
sleep 11
anon_kb=$(awk '/^Anonymous:/ { print $2 }' "/proc/$nddd/smaps_rollup")
filter_bytes=$("$bin/nddctl" -H "127.0.0.1:$port" stats | awk -F'\t' '$1 == "cbf.bytes" { print $2 }')
index_bytes=$("$bin/nddctl" -H "127.0.0.1:$port" stats | awk -F'\t' '$1 == "url_store.index_bytes" { print $2 }')
echo "nddd stored_urls=$stored capacity=$((urls + 200000)) anonymous_bytes=$((anon_kb * 1024)) filter_bytes=$filter_bytes index_bytes=$index_bytes bytes_per_url_of_capacity=$(ratio $((anon_kb * 1024)) $((urls + 200000))) bytes_per_stored_url=$(ratio $((anon_kb * 1024)) "$stored")"
# url_forget of small hosts in that store, against url_delete of as many
# listed URLs (forget_bench adds its own 4,000 URLs first).
"$bin/forget_bench" -H "127.0.0.1:$port" | sed 's/^/forget /'
# Latency: one batch of 1,000 stored URLs in flight at a time.
"$bin/url_bench" -H "127.0.0.1:$port" -n 200000 -c 1 -w 1 --phase check | \
	grep phase= | sed 's/^phase=check-seen/latency check-seen, one batch in flight:/'
stop_nddd
start=$(date +%s.%N)
"$bin/nddd" -c "$tmp/durable/nddd.conf" "${as_root[@]}" 2> "$tmp/durable/nddd2.log" &
nddd=$!
pids+=("$nddd")
wait_port "$port"
ready=$(date +%s.%N)
grep -o 'filter and index rebuilt from .*' "$tmp/durable/nddd2.log" | sed 's/^/nddd /'
echo "nddd restart_to_listening_seconds=$(awk -v a="$start" -v b="$ready" 'BEGIN { printf "%.2f", b - a }')"
stop_nddd

echo "== nddd, relaxed submits (acknowledged once written to the kernel)"
start_nddd_in relaxed
rout=$("$bin/url_bench" -H "127.0.0.1:$port" -n "$urls" -c "$clients" \
	-w "$window" "${file_args[@]}" --phase submit --relaxed | grep phase=)
echo "$rout"
stop_nddd

echo "== nddd, digests (the client canonicalizes and hashes before the clock, as for Redis)"
start_nddd_in digests
dg=$(for ph in submit check check-new; do "$bin/url_bench" \
	-H "127.0.0.1:$port" -n "$urls" -c "$clients" -w "$window" \
	"${file_args[@]}" --phase "$ph" --digests; done | grep phase=)
echo "$dg"
stop_nddd
echo "== load: connections and TLS"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=bench-ca \
	-keyout "$tmp/ca.key" -out "$tmp/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
	-keyout "$tmp/server.key" -out "$tmp/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' > "$tmp/ext"
openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
	-CAcreateserial -days 2 -extfile "$tmp/ext" -out "$tmp/server.pem" 2>/dev/null
tport=$(free_port)
port=$durable_port
cat >> "$tmp/durable/nddd.conf" <<CONF
[server]
max_connections = 20000
[tls]
listen = 127.0.0.1:$tport
cert = $tmp/server.pem
key = $tmp/server.key
CONF
"$bin/nddd" -c "$tmp/durable/nddd.conf" "${as_root[@]}" 2> "$tmp/nddd3.log" &
nddd=$!
pids+=("$nddd")
wait_port "$port"
conns=${BENCH_CONNS:-15000}
before=$(awk '/^Anonymous:/ { print $2 }' "/proc/$nddd/smaps_rollup")
"$bin/load_bench" -H "127.0.0.1:$port" -c "$conns" -d 6 --idle > "$tmp/idle.out" &
lpid=$!
sleep 4
held=$("$bin/nddctl" -H "127.0.0.1:$port" stats | awk -F'\t' '$1 == "connections" { print $2 }')
after=$(awk '/^Anonymous:/ { print $2 }' "/proc/$nddd/smaps_rollup")
wait "$lpid"
cat "$tmp/idle.out"
echo "nddd idle_connections_held=$((held - 1)) anonymous_bytes_per_idle_connection=$(( (after - before) * 1024 / (held - 1) ))"
plain=$("$bin/load_bench" -H "127.0.0.1:$port" -c 64 -w 4 -b 100 -d 10)
echo "$plain"
tls=$("$bin/load_bench" -H "127.0.0.1:$tport" --tls --ca "$tmp/ca.pem" -c 64 -w 4 -b 100 -d 10)
echo "$tls"
a=$(sed -n 's/.*urls_per_s=\([0-9]*\).*/\1/p' <<<"$tls")
b=$(sed -n 's/.*urls_per_s=\([0-9]*\).*/\1/p' <<<"$plain")
echo "tls/plain url_check throughput ratio $(ratio "$a" "$b")"
kill -TERM "$nddd"
wait "$nddd"

echo "== redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), default persistence"
rport=$(free_port)
mkdir -p "$tmp/redis"
redis-server --port "$rport" --dir "$tmp/redis" --logfile "$tmp/redis.log" &
rpid=$!
pids+=("$rpid")
wait_port "$rport"
redis_out=$("$bin/redis_bench" -p "$rport" -n "$urls" -c "$clients" \
	-w "$window" "${file_args[@]}")
echo "$redis_out"
kill -TERM "$rpid"
wait "$rpid" || true

echo "== redis, durable (appendonly yes, appendfsync always)"
rm -rf "$tmp/redis"
mkdir -p "$tmp/redis"
redis-server --port "$rport" --dir "$tmp/redis" --logfile "$tmp/redis.log" \
	--appendonly yes --appendfsync always --save "" &
rpid=$!
pids+=("$rpid")
wait_port "$rport"
dout=$("$bin/redis_bench" -p "$rport" -n "$urls" -c "$clients" \
	-w "$window" "${file_args[@]}")
echo "$dout"
kill -TERM "$rpid"
wait "$rpid" || true

echo "== summary (nddd / redis, same run)"
cmp_line() {	# label, nddd output, nddd phase, redis output, redis phase
	local a b
	a=$(field "$2" "$3" urls_per_s)
	b=$(field "$4" "$5" urls_per_s)
	echo "$1: nddd $a/s, redis $b/s, ratio $(ratio "$a" "$b")"
}
cmp_line "durable submit vs appendfsync always" "$out" submit "$dout" submit
cmp_line "relaxed submit vs default persistence" "$rout" submit "$redis_out" submit
cmp_line "check-seen (URLs)" "$out" check-seen "$redis_out" check-seen
cmp_line "check-unseen (URLs)" "$out" check-unseen "$redis_out" check-unseen
cmp_line "durable submit, digests, vs appendfsync always" "$dg" submit "$dout" submit
cmp_line "check-seen, digests" "$dg" check-seen "$redis_out" check-seen
cmp_line "check-unseen, digests" "$dg" check-unseen "$redis_out" check-unseen
if [ -n "${base_out:-}" ]; then
	for ph in submit check-seen check-unseen; do
		echo "$ph vs baseline: nddd $(field "$out" "$ph" urls_per_s)/s, baseline $(field "$base_out" "$ph" urls_per_s)/s, ratio $(ratio "$(field "$out" "$ph" urls_per_s)" "$(field "$base_out" "$ph" urls_per_s)")"
	done
fi

if [ "${BENCH_CURVE:-1}" != 0 ]; then
	# The cost curve: one nddd, in memory, filled in steps of a million
	# URLs; at each level, the rates of the next million submitted and
	# of a million stored ones checked (the first million, in a random
	# order) and a million unseen ones.
	levels=(${BENCH_CURVE_LEVELS:-1000000 5000000 20000000 50000000})
	top=${levels[${#levels[@]} - 1]}
	echo "== url cost curve: submit and check rates at ${levels[*]} stored URLs, in memory"
	port=$(free_port)
	write_conf "$tmp/curve" $((top + 1000000))
	"$bin/nddd" -c "$tmp/curve/nddd.conf" "${as_root[@]}" \
		2> "$tmp/curve/nddd.log" &
	nddd=$!
	pids+=("$nddd")
	wait_port "$port"
	have=0
	for level in "${levels[@]}"; do
		while [ $((have + 1000000)) -lt "$level" ]; do
			"$bin/url_bench" -H "127.0.0.1:$port" -n 1000000 \
				-c "$clients" -w "$window" --first "$have" \
				--phase submit > /dev/null
			have=$((have + 1000000))
		done
		s=$("$bin/url_bench" -H "127.0.0.1:$port" -n 1000000 \
			-c "$clients" -w "$window" --first "$have" \
			--phase submit | grep phase=)
		have=$((have + 1000000))
		c=$("$bin/url_bench" -H "127.0.0.1:$port" -n 1000000 \
			-c "$clients" -w "$window" --phase check | grep phase=)
		u=$("$bin/url_bench" -H "127.0.0.1:$port" -n 1000000 \
			-c "$clients" -w "$window" --phase check-new | grep phase=)
		echo "curve stored=$have submit_per_s=$(field "$s" submit urls_per_s) check_seen_per_s=$(field "$c" check-seen urls_per_s) check_unseen_per_s=$(field "$u" check-unseen urls_per_s)"
	done
	kill -TERM "$nddd"
	wait "$nddd"
	rm -rf "$tmp/curve"
fi

# A memory cgroup for a process started with its path: cgroup v1's memory
# controller or v2's.  Prints the cgroup's directory, or nothing.
make_cgroup() {
	local limit=$1 cg
	if [ -d /sys/fs/cgroup/memory ]; then
		cg=/sys/fs/cgroup/memory/nddd-bench-$$
		mkdir "$cg" 2>/dev/null && echo "$limit" > "$cg/memory.limit_in_bytes" \
			2>/dev/null && echo "$cg"
	elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		cg=/sys/fs/cgroup/nddd-bench-$$
		mkdir "$cg" 2>/dev/null && echo "$limit" > "$cg/memory.max" \
			2>/dev/null && echo "$cg"
	fi
}

if [ "${BENCH_PAST_RAM:-1}" != 0 ]; then
	# Past RAM: the daemon in a memory cgroup too small for its store.
	# Its anonymous memory (filter and index, about 14.5 bytes per URL of
	# capacity) must stay resident; the limit leaves the store's pages a
	# quarter of the store at most.  The same URLs in memory first, for
	# the rates to compare with; the disk's 4 KiB random reads at queue
	# depth 32 (fio), for the checks'.
	pn=${BENCH_PAST_RAM_URLS:-8000000}
	pcap=$((pn + 200000))
	echo "== url store past RAM: $pn URLs, the daemon in a memory cgroup"
	if command -v fio > /dev/null; then
		fio --name=randread --filename="$tmp/fio.dat" --size=2G \
			--rw=randread --bs=4k --iodepth=32 --ioengine=libaio \
			--direct=1 --runtime=10 --time_based --group_reporting \
			--output-format=terse --terse-version=3 > "$tmp/fio.out"
		iops=$(awk -F';' '{ print $8 }' "$tmp/fio.out")
		rm -f "$tmp/fio.dat"
		echo "disk randread_4k_qd32_iops=$iops (fio, $disk_dev)"
	else
		iops=0
		echo "disk: no fio (Debian: fio); no random-read rate to compare"
	fi
	past_run() {	# name, cgroup or empty
		local name=$1 cg=$2 s c u l
		port=$(free_port)
		write_conf "$tmp/$name" "$pcap"
		sync
		echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
		if [ -n "$cg" ]; then
			sh -c "echo \$\$ > $cg/cgroup.procs && exec $bin/nddd -c $tmp/$name/nddd.conf ${as_root[*]}" \
				2> "$tmp/$name/nddd.log" &
		else
			"$bin/nddd" -c "$tmp/$name/nddd.conf" "${as_root[@]}" \
				2> "$tmp/$name/nddd.log" &
		fi
		nddd=$!
		pids+=("$nddd")
		wait_port "$port"
		s=$("$bin/url_bench" -H "127.0.0.1:$port" -n "$pn" -c "$clients" \
			-w "$window" --phase submit | grep phase=)
		# Latency first, on stored URLs no phase has read back yet.
		l=$("$bin/url_bench" -H "127.0.0.1:$port" -n 200000 -c 1 -w 1 \
			--first $((pn / 4)) --phase check | grep phase=)
		c=$("$bin/url_bench" -H "127.0.0.1:$port" -n 2000000 \
			-c "$clients" -w "$window" --phase check | grep phase=)
		u=$("$bin/url_bench" -H "127.0.0.1:$port" -n 2000000 \
			-c "$clients" -w "$window" --phase check-new | grep phase=)
		store_mb=$(( $(stat -c %s "$tmp/$name/data/data.mdb") / 1048576 ))
		anon_mb=$(( $(awk '/^Anonymous:/ { print $2 }' "/proc/$nddd/smaps_rollup") / 1024 ))
		echo "$name submit_per_s=$(field "$s" submit urls_per_s) check_seen_per_s=$(field "$c" check-seen urls_per_s) check_unseen_per_s=$(field "$u" check-unseen urls_per_s) batch_p50_ms=$(sed -n 's/.*p50_ms=\([0-9.]*\).*/\1/p' <<<"$l") batch_p99_ms=$(sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p' <<<"$l") store_mb=$store_mb anon_mb=$anon_mb"
		eval "${name}_s=$(field "$s" submit urls_per_s)"
		eval "${name}_c=$(field "$c" check-seen urls_per_s)"
		eval "${name}_u=$(field "$u" check-unseen urls_per_s)"
		kill -TERM "$nddd"
		wait "$nddd"
		rm -rf "$tmp/$name"
	}
	past_run inmem ""
	# Anonymous memory at its peak (bursts included) plus a quarter of
	# the store (48.5 bytes per URL).
	limit=$(( pcap * 145 / 10 + 32 * 1048576 + pn * 485 / 40 ))
	cg=$(make_cgroup "$limit")
	if [ -z "$cg" ]; then
		echo "past RAM: skipped: cannot make a memory cgroup (needs root and cgroup v1's memory controller or v2's)"
	else
		echo "cgroup $cg limit_mb=$((limit / 1048576))"
		past_run pastram "$cg"
		rmdir "$cg" 2>/dev/null || true
		echo "past RAM / in memory: submit $(ratio "$pastram_s" "$inmem_s"), check-unseen $(ratio "$pastram_u" "$inmem_u"); check-seen / disk iops $( [ "$iops" != 0 ] && ratio "$pastram_c" "$iops" || echo -)"
	fi
fi

docrep=${BENCH_DOC_REPEAT:-5}
simd=${BENCH_SIMD:-auto}
# One fresh nddd per run: $1 the corpus option, $2 its directory, then
# doc_bench's options.
doc_run() {
	local opt=$1 dir=$2
	shift 2
	start_nddd "simd = $simd"
	(cd "$root" && "$bin/doc_bench" -H "127.0.0.1:$nddd_port" "$opt" \
	    "$dir" -l "$simd" "$@")
	"$bin/nddctl" -H "127.0.0.1:$nddd_port" stats |
	    grep -E '^(docs|accel\.)'
	kill -TERM "$nddd_pid"
	wait "$nddd_pid"
}
echo "== documents end to end, sync = full, simd = $simd: the Reuters-21578 bodies x $docrep"
echo "-- one document per request"
doc_run --reuters "$data/text_corpora/reuters21578" -r "$docrep"
echo "-- doc_batch, 256 documents per request"
doc_run --reuters "$data/text_corpora/reuters21578" -r "$docrep" -b 256 \
    -w 4 -L 0
echo "== documents end to end: the L3S-GN1 HTML pages x $docrep"
echo "-- one document per request"
doc_run --html "$data/text_corpora/l3s_gn1_html/original" -r "$docrep"
echo "-- doc_batch, 32 documents per request"
doc_run --html "$data/text_corpora/l3s_gn1_html/original" -r "$docrep" \
    -b 32 -w 4 -L 0

echo "== documents in bulk through nddctl --jsonl and the Python client (tests/bench/doc_bulk_bench.py)"
PYTHONPATH="$root/clients/python" /usr/bin/python3 \
	"$root/tests/bench/doc_bulk_bench.py" --bin "$bin" \
	--data "$data/text_corpora/reuters21578" \
	-r "$docrep" --simd "$simd"
PYTHONPATH="$root/clients/python" /usr/bin/python3 \
	"$root/tests/bench/doc_bulk_bench.py" --bin "$bin" \
	--data "$data/text_corpora/reuters21578" --html --batch 32 \
	-r "$docrep" --simd "$simd"

echo "== the batch job on Dask against one daemon's bulk load (tests/bench/dask_bench.py)"
PYTHONPATH="$root/clients/python" /usr/bin/python3 \
	"$root/tests/bench/dask_bench.py" --bin "$bin" \
	--data "$data/text_corpora/reuters21578" -r "$docrep" --simd "$simd"

echo "== clients that send and never read (tests/bench/slow_clients_bench.py)"
PYTHONPATH="$root/clients/python" /usr/bin/python3 \
	"$root/tests/bench/slow_clients_bench.py" --bin "$bin" --clients 20

echo "== python client (tests/bench/python_bench.py)"
PYTHONPATH="$root/clients/python" /usr/bin/python3 \
	"$root/tests/bench/python_bench.py" --bin "$bin" \
	--urls "${BENCH_PY_URLS:-200000}" --single "${BENCH_PY_SINGLE:-10000}" \
	--repeat "${BENCH_PY_REPEAT:-3}"

echo "== scrapy crawls (tests/bench/scrapy_bench.py)"
PYTHONPATH="$root/clients/python" /usr/bin/python3 \
	"$root/tests/bench/scrapy_bench.py" --bin "$bin" \
	--repeat "${BENCH_SCRAPY_REPEAT:-1}"

if [ "${BENCH_SHARDS:-1}" != 0 ]; then
	echo "== shards: URLs through libnddd's routing (tests/bench/shards_bench.sh)"
	"$root/tests/bench/shards_bench.sh" "$bin"
	echo "== shards: documents through the Python client's routing (tests/bench/shards_docs_bench.py)"
	NDDD_LIBRARY="$bin/../libnddd.so" PYTHONPATH="$root/clients/python" \
		/usr/bin/python3 "$root/tests/bench/shards_docs_bench.py" \
		--bin "$bin" --data "$data/text_corpora/reuters21578" \
		-r "$docrep"
	echo "== shards: a fourth added under load (tests/bench/reshard_bench.py)"
	NDDD_LIBRARY="$bin/../libnddd.so" PYTHONPATH="$root/clients/python" \
		/usr/bin/python3 "$root/tests/bench/reshard_bench.py" \
		--bin "$bin" --data "$data/text_corpora/reuters21578"
fi

if [ "${BENCH_SUBMIT:-1}" != 0 ]; then
	echo "== durable submits, host index on and off, against Redis (tests/bench/submit_bench.sh)"
	"$root/tests/bench/submit_bench.sh" "$bin"
fi

if [ "${BENCH_LATENCY:-1}" != 0 ]; then
	echo "== one URL per request against Redis (tests/bench/latency_bench.sh)"
	"$root/tests/bench/latency_bench.sh" "$bin"
	echo "== restarts, warm and cold (tests/bench/restart_bench.sh)"
	URLS="${BENCH_RESTART_URLS:-10000000}" \
		DOCS="${BENCH_RESTART_DOCS:-10000000}" \
		"$root/tests/bench/restart_bench.sh" "$bin"
fi

if [ "${BENCH_BULK:-1}" != 0 ]; then
	echo "== bulk checks past RAM (tests/bench/bulk_bench.sh)"
	URLS="${BENCH_BULK_URLS:-50000000}" "$root/tests/bench/bulk_bench.sh" "$bin"
fi

if [ "${BENCH_NEARDUP:-1}" != 0 ]; then
	echo "== near duplicates on labelled cases, against readability-lxml and MinHash LSH (tests/bench/neardup_bench.py)"
	for seed in ${BENCH_NEARDUP_SEEDS:-1 2}; do
		PYTHONPATH="$root/clients/python" /usr/bin/python3 \
			"$root/tests/bench/neardup_bench.py" --bin "$bin" \
			--data "$data" --seed "$seed"
	done
	echo "== main-content extraction against readability-lxml (tests/bench/extract_bench.py)"
	/usr/bin/python3 "$root/tests/bench/extract_bench.py" --bin "$bin" \
		--data "$data"
	echo "== memory per stored document: $bin/sketchidx_bench -n ${BENCH_SKETCH_DOCS:-10000000}"
	"$bin/sketchidx_bench" -n "${BENCH_SKETCH_DOCS:-10000000}"
fi

if [ "${BENCH_NEARIDX:-1}" != 0 ]; then
	echo "== near-duplicate index: $bin/nearidx_bench"
	"$bin/nearidx_bench"
fi

if [ "${BENCH_SIMHASH:-1}" != 0 ]; then
	echo "== simhash engine: $bin/simhash_bench"
	(cd "$root" && NDDD_TEST_DATA="$data" "$bin/simhash_bench" -s 0.1 -r 31 -B 300)
	echo "== sketches: $bin/sketch_bench"
	(cd "$root" && "$bin/sketch_bench" -d "$data")
fi

if [ "${BENCH_MD5:-1}" != 0 ]; then
	echo "== URL keys: $bin/md5_bench"
	"$bin/md5_bench" -d "$data" -s 0.3 -r 5
fi

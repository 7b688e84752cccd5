#!/bin/bash
# make bench: the benchmarks, with their peers measured in the same run.
#
#   tests/bench/run.sh BIN_DIR
#
# URL service: a real nddd on loopback (sync = full: every acknowledged
# submit is on disk) takes url_bench's pipelined batches of 1,000: durable
# submits, checks of stored URLs, checks of unseen URLs, for BENCH_URLS
# synthetic URLs (default 5,000,000) plus the real URL lists of the shared
# test data.  Then its anonymous memory per stored URL and the time to
# rebuild the filter at a restart.
#
# Load: many connections (what an idle one costs, how many are held), and
# throughput of many small pipelining clients over plain TCP and over TLS.
#
# Redis, started here on loopback, the way crawlers use it today: SADD /
# SMISMEMBER of 16-byte MD5 digests in one set, same URLs, same batches and
# pipelining; once with its default persistence (periodic snapshots) and
# once durable (appendfsync always); the ratios against nddd.
#
# Documents end to end: doc_bench submits the Reuters-21578 bodies
# (BENCH_DOC_REPEAT times, default 5, under distinct URLs) to a fresh
# nddd with sync = full, then queries them by body.
#
# The Python client against redis-py (tests/bench/python_bench.py):
# BENCH_PY_URLS (default 200,000) URLs in batches, BENCH_PY_SINGLE (default
# 10,000) one call per URL, each phase BENCH_PY_REPEAT (default 3) times.
#
# Near-duplicate index: nearidx_bench, in memory, with FAISS measured on
# the same data in the same process (BENCH_NEARIDX=0 skips it).
#
# Simhash engine: simhash_bench, every SIMD level on one thread and all
# cores, with the naive reference in the same run (BENCH_SIMHASH=0 skips it).
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

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
	local p
	for p in $(shuf -i 20000-60000 -n 50); do
		if port_free "$p"; then echo "$p"; return; fi
	done
	echo "run.sh: no free port" >&2
	exit 1
}
wait_port() {
	local i
	for i in $(seq 1 600); do
		if ! port_free "$1"; then return 0; fi
		sleep 0.05
	done
	echo "run.sh: nothing listens on $1" >&2
	exit 1
}
field() { sed -n "s/.*phase=$2 .*$3=\([0-9.]*\).*/\1/p" <<<"$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "== url service: $urls synthetic URLs + real lists, $clients clients x $window batches of 1000 in flight"

port=$(free_port)
cat > "$tmp/nddd.conf" <<CONF
[server]
listen = 127.0.0.1:$port
[store]
data_dir = $tmp/data
sync = full
[urls]
capacity = $((urls + 200000))
CONF
"$bin/nddd" -c "$tmp/nddd.conf" "${as_root[@]}" 2> "$tmp/nddd.log" &
nddd=$!
pids+=("$nddd")
wait_port "$port"
out=$("$bin/url_bench" -H "127.0.0.1:$port" -n "$urls" -c "$clients" \
	-w "$window" "${file_args[@]}")
echo "$out"
stored=$("$bin/nddctl" -H "127.0.0.1:$port" stats | awk -F'\t' '$1 == "urls" { print $2 }')
anon_kb=$(awk '/^Anonymous:/ { print $2 }' "/proc/$nddd/smaps_rollup")
filter_bytes=$("$bin/nddctl" -H "127.0.0.1:$port" stats | awk -F'\t' '$1 == "cbf.bytes" { print $2 }')
echo "nddd stored_urls=$stored anonymous_bytes=$((anon_kb * 1024)) filter_bytes=$filter_bytes bytes_per_url=$(ratio $((anon_kb * 1024)) "$stored")"
kill -TERM "$nddd"
wait "$nddd"
start=$(date +%s.%N)
"$bin/nddd" -c "$tmp/nddd.conf" "${as_root[@]}" 2> "$tmp/nddd2.log" &
nddd=$!
pids+=("$nddd")
wait_port "$port"
ready=$(date +%s.%N)
grep -o 'filter rebuilt from .*' "$tmp/nddd2.log" | sed 's/^/nddd /'
echo "nddd restart_to_listening_seconds=$(awk -v a="$start" -v b="$ready" 'BEGIN { printf "%.2f", b - a }')"
kill -TERM "$nddd"
wait "$nddd"

echo "== load: connections and TLS"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=bench-ca \
	-keyout "$tmp/ca.key" -out "$tmp/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
	-keyout "$tmp/server.key" -out "$tmp/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' > "$tmp/ext"
openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
	-CAcreateserial -days 2 -extfile "$tmp/ext" -out "$tmp/server.pem" 2>/dev/null
tport=$(free_port)
cat >> "$tmp/nddd.conf" <<CONF
[server]
max_connections = 20000
[tls]
listen = 127.0.0.1:$tport
cert = $tmp/server.pem
key = $tmp/server.key
CONF
"$bin/nddd" -c "$tmp/nddd.conf" "${as_root[@]}" 2> "$tmp/nddd3.log" &
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
rout=$("$bin/redis_bench" -p "$rport" -n "$urls" -c "$clients" \
	-w "$window" "${file_args[@]}")
echo "$rout"
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
for phase in submit check-seen check-unseen; do
	a=$(field "$out" "$phase" urls_per_s)
	b=$(field "$rout" "$phase" urls_per_s)
	echo "$phase: nddd $a/s, redis $b/s, ratio $(ratio "$a" "$b")"
done
a=$(field "$out" submit urls_per_s)
b=$(field "$dout" submit urls_per_s)
echo "durable submit: nddd $a/s, redis appendfsync always $b/s, ratio $(ratio "$a" "$b")"

docrep=${BENCH_DOC_REPEAT:-5}
echo "== documents end to end: the Reuters-21578 bodies x $docrep, sync = full"
dport=$(free_port)
cat > "$tmp/docs.conf" <<CONF
[server]
listen = 127.0.0.1:$dport
[store]
data_dir = $tmp/docs
[simhash]
stopwords = $root/conf/stopwords.txt
CONF
"$bin/nddd" -c "$tmp/docs.conf" "${as_root[@]}" 2> "$tmp/nddd4.log" &
nddd=$!
pids+=("$nddd")
wait_port "$dport"
"$bin/doc_bench" -H "127.0.0.1:$dport" \
	--reuters "$data/text_corpora/reuters21578" -r "$docrep"
"$bin/nddctl" -H "127.0.0.1:$dport" stats | grep -E '^(docs|near\.|accel\.)'
kill -TERM "$nddd"
wait "$nddd"

echo "== python client (tests/bench/python_bench.py)"
PYTHONPATH="$root/clients/python" /usr/bin/python3 \
	"$root/tests/bench/python_bench.py" --bin "$bin" \
	--urls "${BENCH_PY_URLS:-200000}" --single "${BENCH_PY_SINGLE:-10000}" \
	--repeat "${BENCH_PY_REPEAT:-3}"

if [ "${BENCH_NEARIDX:-1}" != 0 ]; then
	echo "== near-duplicate index: $bin/nearidx_bench"
	"$bin/nearidx_bench"
fi

if [ "${BENCH_SIMHASH:-1}" != 0 ]; then
	echo "== simhash engine: $bin/simhash_bench"
	(cd "$root" && NDDD_TEST_DATA="$data" "$bin/simhash_bench" -s 0.1 -r 31 -B 300)
fi

# Shared by the benchmark scripts (sourced): a temporary directory removed,
# and the daemons started killed, when the script exits; loopback ports to
# listen on.
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Listeners take ports below the kernel's range for outgoing connections:
# a port in it may be a client socket's (the load test opens 15,000), which
# nothing listens on, and then a server cannot bind it.
free_port() {
	local p low
	read -r low _ < /proc/sys/net/ipv4/ip_local_port_range
	[ "$low" -gt 11024 ] || low=61000
	for p in $(shuf -i 10000-$((low - 1)) -n 50); do
		if port_free "$p" && ! ss -Htan "sport = :$p" | grep -q .; then
			echo "$p"; return
		fi
	done
	echo "$0: no free port" >&2
	exit 1
}

# Waits, up to 60 s, until something accepts connections on port $1.
wait_listening() {
	local i
	for i in $(seq 6000); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.01
	done
	return 1
}

# $1 / $2, to two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# Starts nddd ($bin/nddd) on a fresh store in $tmp/data and a free port,
# with the default configuration and the lines of $1 (sections and keys)
# after it; waits until it listens.  Sets nddd_port and nddd_pid.
start_nddd() {
	nddd_port=$(free_port)
	rm -rf "$tmp/data"
	cat > "$tmp/c.conf" <<CONF
[server]
listen = 127.0.0.1:$nddd_port
[store]
data_dir = $tmp/data
[simhash]
stopwords = $root/conf/stopwords.txt
${1:-}
CONF
	"$bin/nddd" -c "$tmp/c.conf" --allow-root 2>"$tmp/log" &
	nddd_pid=$!
	pids+=("$nddd_pid")
	wait_listening "$nddd_port"
}

# Starts Redis durable as crawlers run it (appendfsync always, no
# snapshots) on a fresh directory and a free port; waits until it answers.
# Sets redis_port and redis_pid.
start_redis_durable() {
	local i
	redis_port=$(free_port)
	rm -rf "$tmp/redis"
	mkdir "$tmp/redis"
	redis-server --port "$redis_port" --dir "$tmp/redis" \
	    --logfile "$tmp/redis.log" --appendonly yes \
	    --appendfsync always --save "" &
	redis_pid=$!
	pids+=("$redis_pid")
	for i in $(seq 500); do
		redis-cli -p "$redis_port" ping > /dev/null 2>&1 && break
		sleep 0.02
	done
}

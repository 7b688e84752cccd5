#!/usr/bin/python3
"""URLs per second through nddd's Python client, and through redis-py on
Redis the way Python crawlers deduplicate today, in the same run.

    PYTHONPATH=clients/python tests/bench/python_bench.py --bin BIN_DIR

nddd (BIN_DIR/nddd) and Redis (redis-server) are started here on
loopback, each with a fresh temporary directory.  nddd runs
three times: with durable submits (its default: an acknowledged submit is
on disk), with relaxed ones (acknowledged once written to the kernel: like
Redis's default, it survives a crash of the daemon, not of the machine),
and relaxed with digests (the client canonicalizes and hashes through
libnddd.so, as redis-py's client hashes for Redis).  Redis runs twice:
with its default persistence (the peer of relaxed submits and of checks)
and with `appendfsync always` (an acknowledged SADD is on disk: the peer of
durable submits).  For each:

  batch-submit  --urls new URLs: nddd Client.submit_urls (batches of
                1,000, 8 in flight); Redis SADD of each URL's 16-byte MD5
                digest, 1,000 commands per pipeline
  batch-check   the same URLs again: Client.check_urls; SISMEMBER
  one-submit    --single new URLs, one call per URL: Client.submit_url;
                SADD
  one-check     the same URLs again: Client.check_url; SISMEMBER

Each phase runs --repeat times on fresh URLs (checks on the URLs of the
same repeat), the targets taking turns phase by phase; every run is
printed, and the summary compares medians.
Redis's figures include computing the MD5 digests in Python, which nddd's
client leaves to the daemon (with the URL's canonicalization, which Redis
does not do at all), or does itself with digests.
"""

import argparse
import hashlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import redis

import nddd

BATCH = 1000
PHASES = ("batch-submit", "batch-check", "one-submit", "one-check")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit("python_bench: %s exited (%s)" % (what, proc.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit("python_bench: %s does not listen on %d" % (what, port))


def make_urls(tag, n):
    """n distinct URLs of about 60 bytes over 1,000 hosts."""
    return ["http://host%d.example.com/%s/articles/%d/page.html?ref=%d"
            % (i % 1000, tag, i, i % 97) for i in range(n)]


def timed(fn, urls):
    t0 = time.perf_counter()
    fn(urls)
    return time.perf_counter() - t0


class NdddTarget:
    def __init__(self, bin_dir, tmp, durability, digests, capacity):
        self.name = "nddd %s%s" % (durability, " digests" if digests else "")
        self.dir = os.path.join(tmp, self.name.replace(" ", "-"))
        os.makedirs(self.dir)
        port = free_port()
        conf = os.path.join(self.dir, "nddd.conf")
        with open(conf, "w") as f:
            f.write("[server]\nlisten = 127.0.0.1:%d\n[store]\ndata_dir = %s\n"
                    "sync = full\n[urls]\ncapacity = %d\n"
                    % (port, os.path.join(self.dir, "data"), capacity))
        self.log = open(os.path.join(self.dir, "nddd.log"), "wb")
        root = ["--allow-root"] if os.geteuid() == 0 else []
        self.proc = subprocess.Popen([os.path.join(bin_dir, "nddd"), "-c",
                                      conf] + root, stdout=self.log,
                                     stderr=self.log)
        wait_port(port, self.proc, "nddd")
        self.client = nddd.Client("127.0.0.1:%d" % port, timeout=60,
                                  batch_size=BATCH, window=8,
                                  durability=durability, digests=digests)

    def batch_submit(self, urls):
        new = sum(r.new for r in self.client.submit_urls(urls))
        assert new == len(urls), (new, len(urls))

    def batch_check(self, urls):
        seen = sum(r.seen for r in self.client.check_urls(urls))
        assert seen == len(urls), (seen, len(urls))

    def one_submit(self, urls):
        submit = self.client.submit_url
        new = 0
        for u in urls:
            new += submit(u).new
        assert new == len(urls), (new, len(urls))

    def one_check(self, urls):
        check = self.client.check_url
        seen = 0
        for u in urls:
            seen += check(u).seen
        assert seen == len(urls), (seen, len(urls))

    def close(self):
        self.client.close()
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


class RedisTarget:
    KEY = "seen"

    def __init__(self, tmp, always):
        """always: appendfsync always (every write on disk before its
        reply); otherwise Redis's default persistence."""
        self.name = "redis always" if always else "redis"
        self.persistence = ("appendonly yes, appendfsync always" if always
                            else "default persistence")
        self.dir = os.path.join(tmp, self.name.replace(" ", "-"))
        os.makedirs(self.dir)
        port = free_port()
        durable = ["--appendonly", "yes", "--appendfsync", "always"]
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
             "--dir", self.dir, "--logfile",
             os.path.join(self.dir, "redis.log")] + (durable if always
                                                     else []))
        wait_port(port, self.proc, "redis-server")
        self.r = redis.Redis(host="127.0.0.1", port=port)
        self.version = self.r.info("server")["redis_version"]

    def _pipelined(self, urls, command):
        md5 = hashlib.md5
        n = 0
        for i in range(0, len(urls), BATCH):
            p = self.r.pipeline(transaction=False)
            op = getattr(p, command)
            for u in urls[i:i + BATCH]:
                op(self.KEY, md5(u.encode()).digest())
            n += sum(1 for x in p.execute() if x)
        return n

    def batch_submit(self, urls):
        n = self._pipelined(urls, "sadd")
        assert n == len(urls), (n, len(urls))

    def batch_check(self, urls):
        n = self._pipelined(urls, "sismember")
        assert n == len(urls), (n, len(urls))

    def one_submit(self, urls):
        md5 = hashlib.md5
        sadd = self.r.sadd
        new = 0
        for u in urls:
            new += sadd(self.KEY, md5(u.encode()).digest())
        assert new == len(urls), (new, len(urls))

    def one_check(self, urls):
        md5 = hashlib.md5
        sismember = self.r.sismember
        seen = 0
        for u in urls:
            seen += bool(sismember(self.KEY, md5(u.encode()).digest()))
        assert seen == len(urls), (seen, len(urls))

    def close(self):
        self.r.close()
        self.proc.terminate()
        self.proc.wait()


def run(targets, args, figures):
    """Runs every phase args.repeat times on every target, the targets
    taking turns phase by phase (the machine's speed drifts: each ratio
    is between figures minutes apart, not one target's run after
    another's); records URLs/s in figures."""
    for rep in range(args.repeat):
        batch = make_urls("b%d" % rep, args.urls)
        single = make_urls("s%d" % rep, args.single)
        for phase, urls in (("batch-submit", batch), ("batch-check", batch),
                            ("one-submit", single), ("one-check", single)):
            for target in targets:
                seconds = timed(getattr(target, phase.replace("-", "_")),
                                urls)
                rate = len(urls) / seconds
                figures.setdefault((target.name, phase), []).append(rate)
                print("%s phase=%s run=%d urls=%d seconds=%.3f "
                      "urls_per_s=%.0f" % (target.name, phase, rep + 1,
                                           len(urls), seconds, rate),
                      flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="build/release/bin",
                    help="directory holding nddd")
    ap.add_argument("--urls", type=int, default=200000,
                    help="URLs per batch phase (default 200000)")
    ap.add_argument("--single", type=int, default=10000,
                    help="URLs per one-by-one phase (default 10000)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each phase (default 3)")
    args = ap.parse_args()

    capacity = args.repeat * (args.urls + args.single) + 1000
    tmp = tempfile.mkdtemp(prefix="nddd-pybench-")
    figures = {}
    targets = []
    try:
        print("== python client: %d URLs per batch phase (batches of %d, 8 "
              "in flight), %d per one-by-one phase, %d runs each"
              % (args.urls, BATCH, args.single, args.repeat), flush=True)
        for make in (lambda: NdddTarget(args.bin, tmp, "durable", False,
                                        capacity),
                     lambda: NdddTarget(args.bin, tmp, "relaxed", False,
                                        capacity),
                     lambda: NdddTarget(args.bin, tmp, "relaxed", True,
                                        capacity),
                     lambda: RedisTarget(tmp, False),
                     lambda: RedisTarget(tmp, True)):
            targets.append(make())
            if isinstance(targets[-1], RedisTarget):
                print("== %s: redis %s (redis-py %s), %s"
                      % (targets[-1].name, targets[-1].version,
                         redis.__version__, targets[-1].persistence),
                      flush=True)
        run(targets, args, figures)
    finally:
        for target in targets:
            target.close()
        shutil.rmtree(tmp, ignore_errors=True)

    print("== summary: median URLs/s of %d runs; ratio = nddd / redis, "
          "same run: durable submits against redis always, the rest "
          "against redis (default persistence)" % args.repeat)
    names = [t.name for t in targets]
    for phase in PHASES:
        parts = []
        for name in names:
            rate = statistics.median(figures[(name, phase)])
            part = "%s %.0f/s" % (name, rate)
            if not name.startswith("redis"):
                peer = ("redis always" if name == "nddd durable"
                        and phase.endswith("submit") else "redis")
                part += " (ratio %.2f)" % (
                    rate / statistics.median(figures[(peer, phase)]))
            parts.append(part)
        print("%s: %s" % (phase, ", ".join(parts)))

if __name__ == "__main__":
    main()

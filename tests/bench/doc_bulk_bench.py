#!/usr/bin/python3
"""Documents in bulk through nddd's clients, against the simhash engine
measured in the same run on the same corpus.

    PYTHONPATH=clients/python tests/bench/doc_bulk_bench.py \\
        --bin build/release/bin [--data DIR] [--html] [-r REPEAT] \\
        [--simd LEVEL] [--batch N] [--window N]

The corpus is the Reuters-21578 bodies (the BODY elements of the .sgm
files, in file order, as tests/lib/corpus.c reads them) as text, or with
--html the L3S-GN1 pages (text_corpora/l3s_gn1_html/original/*.html, in
name order) as HTML, REPEAT times (default 5) under distinct URLs.  A
document that is not UTF-8 is read as Latin-1, so that it can be a JSON
string; every phase sends the same bytes (the UTF-8 of that string).

Phases, each against a fresh nddd (sync = full, its data in a temporary
directory, the stop words of conf/stopwords.txt, [simhash] simd = LEVEL):

  nddctl-submit   `nddctl --json doc-submit --jsonl FILE > /dev/null`,
                  FILE the corpus as JSON lines ({"url": ..., "text":
                  ...}): every document stored, durably, in doc batches;
  nddctl-query    the same with --query-only, into the stored set;
  python-submit   Client.submit_docs of the corpus (bodies as bytes) into
                  another fresh nddd;
  python-query    Client.query_docs of the corpus, into the stored set;
  engine          simhash_bench -w c (plain text, preprocessing included:
                  the Reuters bodies), or -w b with --html (raw HTML: the
                  L3S pages), at LEVEL (auto: the best this CPU has, as the
                  daemon picks), best of 11 runs of >= 0.1 s, with 1 thread
                  and with 2.

Each phase prints documents/s, MB/s (10^6 bytes of bodies per second) and
its ratio to the engine's MB/s with 2 threads (the daemon's request
workers fingerprint on the cores of this machine, shared with the client).
"""

import argparse
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import nddd

LEVELS = ("scalar", "avx2", "avx512")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: The source tree, and its stop-word list (the daemon's default).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
STOPWORDS = os.path.join(ROOT, "conf", "stopwords.txt")


def reuters_dir(given=None):
    """The Reuters-21578 folder: given, or that of $NDDD_TEST_DATA, or of
    ../shared/data beside the source tree."""
    data_root = os.environ.get("NDDD_TEST_DATA") or os.path.join(
        ROOT, "..", "shared", "data")
    return given or os.path.join(data_root, "text_corpora", "reuters21578")


def as_str(raw):
    """raw as str: UTF-8, or else Latin-1."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def html_pages(directory):
    """The *.html pages of directory, in name order, as str."""
    pages = []
    for path in sorted(glob.glob(os.path.join(directory, "*.html"))):
        with open(path, "rb") as f:
            pages.append(as_str(f.read()))
    if not pages:
        sys.exit("doc_bulk_bench: no pages in %s" % directory)
    return pages


def reuters_bodies(directory):
    """The BODY elements of reut2-000.sgm ... reut2-021.sgm, as str."""
    bodies = []
    for i in range(22):
        path = os.path.join(directory, "reut2-%03d.sgm" % i)
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        for m in re.finditer(rb"<BODY>(.*?)</BODY>", data, re.S):
            bodies.append(as_str(m.group(1)))
    if not bodies:
        sys.exit("doc_bulk_bench: no Reuters bodies in %s" % directory)
    return bodies


class Daemon:
    """A fresh nddd on a free loopback port, its data in tmp/name."""

    def __init__(self, bin_dir, tmp, name, stopwords, simd):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        self.port = free_port()
        self.address = "127.0.0.1:%d" % self.port
        conf = os.path.join(self.dir, "nddd.conf")
        with open(conf, "w") as f:
            f.write("[server]\nlisten = %s\n[store]\ndata_dir = %s\n"
                    "sync = full\n[simhash]\nstopwords = %s\nsimd = %s\n"
                    % (self.address, os.path.join(self.dir, "data"),
                       stopwords, simd))
        self.log = open(os.path.join(self.dir, "nddd.log"), "wb")
        root = ["--allow-root"] if os.geteuid() == 0 else []
        self.proc = subprocess.Popen([os.path.join(bin_dir, "nddd"), "-c",
                                      conf] + root, stdout=self.log,
                                     stderr=self.log)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                self.log.flush()
                sys.exit("doc_bulk_bench: nddd exited (%s); see %s"
                         % (self.proc.returncode, self.log.name))
            try:
                socket.create_connection(("127.0.0.1", self.port),
                                         0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit("doc_bulk_bench: nddd does not listen on %d"
                             % self.port)
                time.sleep(0.05)

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


def run_nddctl(nddctl, address, path, batch, window, query_only):
    """Seconds of `nddctl --json doc-submit --jsonl path > /dev/null`."""
    cmd = [nddctl, "-H", address, "--json", "--no-progress",
           "--window", str(window), "doc-submit", "--jsonl", "--batch",
           str(batch)]
    if query_only:
        cmd.append("--query-only")
    cmd.append(path)
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        rc = subprocess.call(cmd, stdout=null)
    secs = time.perf_counter() - t0
    # 1: some documents failed (a body without terms): they are answered.
    if rc not in (0, 1):
        sys.exit("doc_bulk_bench: %s exited %d" % (" ".join(cmd), rc))
    return secs


def engine(bin_dir, data, stopwords, simd, workload):
    """{threads: best MB/s} of simhash_bench -w workload at the level
    simd."""
    cmd = [os.path.join(bin_dir, "simhash_bench"), "-d", data, "-S",
           stopwords, "-w", workload, "-s", "0.1", "-r", "11", "-t", "2"]
    if simd != "auto":
        cmd += ["-l", simd]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    best = {}
    level = None
    for line in out.splitlines():
        m = re.match(r"\s+(\w+)\s+(\d+) threads?\s+best\s+([\d.]+)", line)
        if m is None or m.group(1) not in LEVELS:
            continue
        # Auto: the last level measured, the best this CPU has.
        if m.group(1) != level:
            level, best = m.group(1), {}
        best[int(m.group(2))] = float(m.group(3))
    if not best:
        sys.exit("doc_bulk_bench: no figures from simhash_bench:\n" + out)
    return level, best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True,
                    help="the folder of nddd, nddctl and simhash_bench")
    ap.add_argument("--data", default=None,
                    help="the Reuters-21578 folder (default: "
                    "$NDDD_TEST_DATA/text_corpora/reuters21578, or "
                    "../shared/data/...)")
    ap.add_argument("--html", action="store_true",
                    help="the L3S-GN1 pages, as HTML, instead of the "
                    "Reuters bodies")
    ap.add_argument("-r", "--repeat", type=int, default=5)
    ap.add_argument("--simd", default="auto",
                    choices=("auto",) + LEVELS)
    ap.add_argument("--batch", type=int, default=256,
                    help="documents per doc_batch request (default 256)")
    ap.add_argument("--window", type=int, default=8,
                    help="requests in flight (default 8)")
    args = ap.parse_args()

    reuters = reuters_dir(args.data)
    data_root = os.path.dirname(os.path.dirname(os.path.abspath(reuters)))
    stopwords = STOPWORDS
    bin_dir = os.path.abspath(args.bin)
    nddctl = os.path.join(bin_dir, "nddctl")

    if args.html:
        bodies = html_pages(os.path.join(data_root, "text_corpora",
                                         "l3s_gn1_html", "original"))
        what, field, host = "L3S-GN1 pages", "html", "l3s.example"
    else:
        bodies = reuters_bodies(reuters)
        what, field, host = "Reuters-21578 bodies", "text", "reuters.example"
    encoded = [b.encode() for b in bodies]
    ndocs = len(bodies) * args.repeat
    nbytes = sum(map(len, encoded)) * args.repeat
    print("corpus: %d %s x %d = %d documents, %.1f MB; batches of %d, %d "
          "in flight, simd %s"
          % (len(bodies), what, args.repeat, ndocs, nbytes / 1e6,
             args.batch, args.window, args.simd))

    tmp = tempfile.mkdtemp(prefix="doc_bulk_bench.")
    daemons = []
    figures = []
    try:
        jsonl = os.path.join(tmp, "docs.jsonl")
        with open(jsonl, "w") as f:
            for r in range(args.repeat):
                for i, b in enumerate(bodies):
                    f.write(json.dumps({"url": "http://%s/r%d/%d"
                                        % (host, r, i), field: b}))
                    f.write("\n")
        print("input: %s, %.1f MB of JSON lines"
              % (jsonl, os.path.getsize(jsonl) / 1e6))

        d = Daemon(bin_dir, tmp, "nddctl", stopwords, args.simd)
        daemons.append(d)
        figures.append(("nddctl-submit", run_nddctl(
            nddctl, d.address, jsonl, args.batch, args.window, False)))
        figures.append(("nddctl-query", run_nddctl(
            nddctl, d.address, jsonl, args.batch, args.window, True)))
        d.close()
        daemons.remove(d)

        docs = [("http://%s/r%d/%d" % (host, r, i), b, args.html)
                for r in range(args.repeat) for i, b in enumerate(encoded)]
        d = Daemon(bin_dir, tmp, "python", stopwords, args.simd)
        daemons.append(d)
        with nddd.Client(d.address, timeout=120, window=args.window,
                         doc_batch_size=args.batch) as client:
            t0 = time.perf_counter()
            res = client.submit_docs(docs)
            figures.append(("python-submit", time.perf_counter() - t0))
            stored = sum(1 for x in res if x.ok)
            t0 = time.perf_counter()
            res = client.query_docs(docs)
            figures.append(("python-query", time.perf_counter() - t0))
            answered = sum(1 for x in res if x.ok)
        del res
        print("python: %d of %d documents stored, %d answered by query "
              "(a document without terms is refused)"
              % (stored, len(docs), answered))
        d.close()
        daemons.remove(d)

        level, best = engine(bin_dir, data_root, stopwords, args.simd,
                             "b" if args.html else "c")
    finally:
        for d in daemons:
            d.close()
        shutil.rmtree(tmp, ignore_errors=True)

    ref = best.get(2, max(best.values()))
    print("engine: simhash_bench -w %s, %s: %s" % (
        "b" if args.html else "c", level, ", ".join(
        "%.1f MB/s with %d thread%s" % (v, t, "s" if t > 1 else "")
        for t, v in sorted(best.items()))))
    for name, secs in figures:
        mbs = nbytes / secs / 1e6
        print("phase=%-14s %7.2f s  %9.0f docs/s  %7.1f MB/s  %.3f of "
              "the engine" % (name, secs, ndocs / secs, mbs, mbs / ref))


if __name__ == "__main__":
    main()

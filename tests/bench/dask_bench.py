#!/usr/bin/python3
"""The batch job on Dask (nddd.dedup) against one daemon's bulk load of the
same corpus, in the same run.

    PYTHONPATH=clients/python tests/bench/dask_bench.py \\
        --bin build/release/bin [--data DIR] [-r REPEAT] [--workers N] \\
        [--simd LEVEL]

The corpus is the Reuters-21578 bodies REPEAT times (default 5) under
distinct URLs, read as doc_bulk_bench.py reads them (a body that is not
UTF-8 as Latin-1), written once as JSON lines ({"url": ..., "text": ...})
to a temporary file.  Every phase fingerprints the same bytes, with the
stop words of conf/stopwords.txt and the vector code LEVEL (default auto:
the best this CPU has).

  dedup    `python3 -m nddd.dedup --local N FILE --out OUT` (N worker
           processes of one thread, default 2): the daemon's verified
           answer, the default; the command's wall time, from its start
           to its output written (the cluster's start included), and the
           job's own, as it prints it (from the documents read and
           printed in the workers to the pairs and groups, not the
           writing);
  hamming  the same command with --answer hamming (every pair within k,
           unverified: fingerprints only, no sketches), as the job ran
           before it had the verified answer;
  daemon   a fresh nddd (sync = full, its data in a temporary directory),
           Client.submit_docs of the same documents (bodies as bytes,
           batches of 256, 8 in flight): each stored durably, with its
           neighbours (verified) and group.

Prints the machine's CPU, then documents per second of each phase, the
ratio of the job's to the daemon's, and of the verified job's to the
Hamming one's.  The job's pairs and groups count every repeat's copies:
each body has REPEAT - 1 exact duplicates.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import nddd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_bulk_bench import (ROOT, STOPWORDS, Daemon,  # noqa: E402
                            reuters_bodies, reuters_dir)


def cpu():
    """The CPU's model name and the cores this process may use."""
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d cores" % (model, len(os.sched_getaffinity(0)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True,
                    help="the folder of nddd (and libnddd.so above it)")
    ap.add_argument("--data", default=None,
                    help="the Reuters-21578 folder (default: "
                    "$NDDD_TEST_DATA/text_corpora/reuters21578)")
    ap.add_argument("-r", "--repeat", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--simd", default="auto",
                    choices=("auto", "scalar", "avx2", "avx512"))
    args = ap.parse_args()

    reuters = reuters_dir(args.data)
    stopwords = STOPWORDS
    bin_dir = os.path.abspath(args.bin)
    env = dict(os.environ)
    env.setdefault("NDDD_LIBRARY", os.path.join(os.path.dirname(bin_dir),
                                                "libnddd.so"))
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(ROOT, "clients", "python")] +
        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))

    bodies = reuters_bodies(reuters)
    ndocs = len(bodies) * args.repeat
    nbytes = sum(len(b.encode()) for b in bodies) * args.repeat
    print("cpu: %s" % cpu())
    print("corpus: %d Reuters-21578 bodies x %d = %d documents, %.1f MB"
          % (len(bodies), args.repeat, ndocs, nbytes / 1e6))

    tmp = tempfile.mkdtemp(prefix="dask_bench.")
    daemon = None
    try:
        jsonl = os.path.join(tmp, "docs.jsonl")
        with open(jsonl, "w") as f:
            for r in range(args.repeat):
                for i, b in enumerate(bodies):
                    f.write(json.dumps({"url": "http://reuters.example/"
                                        "r%d/%d" % (r, i), "text": b}))
                    f.write("\n")

        out = os.path.join(tmp, "dedup.jsonl")
        times = {}
        for answer in ("verified", "hamming"):
            cmd = [sys.executable, "-m", "nddd.dedup", "--local",
                   str(args.workers), jsonl, "--out", out, "--stopwords",
                   stopwords, "--simd", args.simd, "--answer", answer]
            t0 = time.perf_counter()
            p = subprocess.run(cmd, env=env, stderr=subprocess.PIPE,
                               text=True)
            wall = time.perf_counter() - t0
            if p.returncode != 0:
                sys.exit("dask_bench: %s exited %d:\n%s"
                         % (" ".join(cmd), p.returncode, p.stderr))
            summary = [x for x in p.stderr.splitlines()
                       if x.startswith("nddd.dedup: ")][-1]
            job = float(re.search(r"; ([\d.]+) s;", summary).group(1))
            lines = sum(1 for _ in open(out))
            print("%s: %s" % (answer, summary))
            print("%s: output: %d lines, %.1f MB"
                  % (answer, lines, os.path.getsize(out) / 1e6))
            times[answer] = (wall, job)

        daemon = Daemon(bin_dir, tmp, "daemon", stopwords, args.simd)
        docs = [("http://reuters.example/r%d/%d" % (r, i), b.encode())
                for r in range(args.repeat) for i, b in enumerate(bodies)]
        with nddd.Client(daemon.address, timeout=300) as client:
            t0 = time.perf_counter()
            res = client.submit_docs(docs)
            load = time.perf_counter() - t0
        stored = sum(1 for x in res if x.ok)
        daemon.close()
        daemon = None
    finally:
        if daemon is not None:
            daemon.close()
        shutil.rmtree(tmp, ignore_errors=True)

    print("daemon: %d of %d documents stored" % (stored, ndocs))
    wall, job = times["verified"]
    hwall, hjob = times["hamming"]
    for name, secs in (("dedup-command", wall), ("dedup-job", job),
                       ("hamming-command", hwall), ("hamming-job", hjob),
                       ("daemon-load", load)):
        print("phase=%-16s %7.2f s  %9.0f docs/s  %7.1f MB/s"
              % (name, secs, ndocs / secs, nbytes / secs / 1e6))
    print("docs/s against daemon-load: dedup-command %.2f, dedup-job %.2f"
          % (load / wall, load / job))
    print("docs/s of the verified answer against the Hamming one: "
          "command %.2f, job %.2f" % (hwall / wall, hjob / job))


if __name__ == "__main__":
    main()

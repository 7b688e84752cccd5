#!/usr/bin/python3
"""Adding a shard under load: how long `nddctl reshard` takes, and what the
URL checks of a client of the old list get meanwhile, same run.

    PYTHONPATH=clients/python tests/bench/reshard_bench.py \\
        --bin build/release/bin [--data DIR] [-n URLS] [-r REPEAT]

Three fresh daemons (sync = full) take URLS distinct URLs (default
1,000,000) and the Reuters-21578 bodies REPEAT times (default 1) through a
ShardedClient of the three; a fourth, empty, is added by `nddctl reshard`.
Meanwhile another ShardedClient of the three-shard list checks batches of
1,000 URLs drawn from those stored, one batch in flight, without pause:
its checks per second before the resharding (5 s), during it and after it
(5 s, routed by the four-place list it learned) are printed, with the
ratio of each to the rate before.  Every check must answer seen: the
number that did not is printed (0: nothing was lost).  Every daemon and
both clients share this machine's cores.
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

import nddd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dask_bench import cpu  # noqa: E402
from doc_bulk_bench import (STOPWORDS, Daemon,  # noqa: E402
                            reuters_bodies, reuters_dir)


class Checker(threading.Thread):
    """Checks batches of stored URLs until told to stop, timing each."""

    def __init__(self, addresses, urls):
        super().__init__(daemon=True)
        self.client = nddd.ShardedClient(addresses, batch_size=1000,
                                         window=1)
        self.urls = urls
        self.done = []          # (time finished, checks)
        self.unseen = 0
        self.stop = threading.Event()

    def run(self):
        rng = random.Random(20261125)
        while not self.stop.is_set():
            batch = rng.sample(self.urls, 1000)
            results = self.client.check_urls(batch)
            self.unseen += sum(1 for r in results if not (r.ok and r.seen))
            self.done.append((time.monotonic(), len(batch)))

    def rate(self, t0, t1):
        n = sum(k for t, k in self.done if t0 < t <= t1)
        return n / (t1 - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--data", default=None,
                    help="the Reuters-21578 folder (default: "
                    "$NDDD_TEST_DATA/text_corpora/reuters21578)")
    ap.add_argument("-n", "--urls", type=int, default=1000000)
    ap.add_argument("-r", "--repeat", type=int, default=1)
    ap.add_argument("--window", type=float, default=5.0,
                    help="seconds measured before and after")
    args = ap.parse_args()
    urls = ["http://host%d.example/page/%d" % (i % 5000, i)
            for i in range(args.urls)]
    bodies = reuters_bodies(reuters_dir(args.data))
    docs = [("http://r%d.example/%d" % (i % args.repeat, i), b)
            for i, b in enumerate(b for _ in range(args.repeat)
                                  for b in bodies)]
    print("cpu: %s" % cpu())
    with tempfile.TemporaryDirectory(prefix="nddd-reshard-") as tmp:
        daemons = [Daemon(args.bin, tmp, "s%d" % i, STOPWORDS, "auto")
                   for i in range(4)]
        try:
            old = [d.address for d in daemons[:3]]
            with nddd.ShardedClient(old, batch_size=10000) as s:
                for i in range(0, len(urls), 100000):
                    s.submit_urls(urls[i:i + 100000])
                s.submit_docs(docs)
            print("stored: %d URLs, %d documents on 3 shards"
                  % (len(urls), len(docs)))
            checker = Checker(old, urls)
            checker.start()
            time.sleep(1)
            t0 = time.monotonic()
            time.sleep(args.window)
            t1 = time.monotonic()
            out = subprocess.run(
                [os.path.join(args.bin, "nddctl"), "-H", ",".join(old),
                 "reshard", "--add", daemons[3].address],
                capture_output=True, text=True)
            t2 = time.monotonic()
            if out.returncode != 0:
                sys.exit("reshard_bench: nddctl reshard failed: %s"
                         % out.stderr)
            time.sleep(args.window)
            t3 = time.monotonic()
            checker.stop.set()
            checker.join()
            with nddd.Client(daemons[3].address) as c:
                st = c.stats()
            before = checker.rate(t0, t1)
            during = checker.rate(t1, t2)
            after = checker.rate(t2, t3)
            print("reshard: %.2f s; the new shard holds %d URLs and %d "
                  "documents (%.0f keys/s)" % (t2 - t1, st.urls, st.docs,
                                               (st.urls + st.docs) /
                                               (t2 - t1)))
            print("checks/s of a client of the old list: before %.0f, "
                  "during %.0f (%.2f), after %.0f (%.2f); unseen: %d; "
                  "its list now %d shards"
                  % (before, during, during / before, after,
                     after / before, checker.unseen,
                     len(checker.client.addresses)))
            checker.client.close()
        finally:
            for d in daemons:
                d.close()


if __name__ == "__main__":
    main()

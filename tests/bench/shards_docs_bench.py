#!/usr/bin/python3
"""Documents through the sharded clients against one daemon, same run.

    PYTHONPATH=clients/python tests/bench/shards_docs_bench.py \\
        --bin build/release/bin [--data DIR] [-r REPEAT] [--shards N...]

The Reuters-21578 bodies REPEAT times (default 5) under distinct URLs, as
doc_bulk_bench.py reads them, stored durably (sync = full, fresh daemons)
by the Python client's submit_docs into one daemon, then by
ShardedClient.submit_docs into N fresh daemons for each N of --shards
(default 1 2 3), 256 documents per call.  The single daemon's groups
are those of a second load with one batch in flight (batches in flight
together may be applied in any order).  Every daemon shares this
machine's cores with the client.  Prints documents per second of each and
the ratio to the single daemon's, and checks that the sharded load gave
each document the group one daemon gave it (named by the founder's URL).
"""

import argparse
import os
import sys
import tempfile
import time

import nddd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dask_bench import cpu  # noqa: E402
from doc_bulk_bench import (STOPWORDS, Daemon,  # noqa: E402
                            reuters_bodies, reuters_dir)


def founders(docs, results):
    """Each document's group named by the URL of its founder."""
    url_of = {r.doc_id: d[0] for d, r in zip(docs, results) if r.ok}
    return [url_of.get(r.group) if r.ok else None for r in results]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--data", default=None,
                    help="the Reuters-21578 folder (default: "
                    "$NDDD_TEST_DATA/text_corpora/reuters21578)")
    ap.add_argument("-r", "--repeat", type=int, default=5)
    ap.add_argument("--shards", type=int, nargs="+", default=[1, 2, 3])
    args = ap.parse_args()
    stopwords = STOPWORDS
    bodies = reuters_bodies(reuters_dir(args.data))
    docs = [("http://r%d.example/%d" % (i % args.repeat, i), b)
            for i, b in enumerate(b for _ in range(args.repeat)
                                  for b in bodies)]
    mb = sum(len(b) for _, b in docs) / 1e6
    print("cpu: %s" % cpu())
    print("corpus: %d Reuters-21578 bodies x %d = %d documents, %.1f MB"
          % (len(bodies), args.repeat, len(docs), mb))
    with tempfile.TemporaryDirectory(prefix="nddd-shards-") as tmp:
        # The single daemon twice: as fast as the client goes (8 batches
        # in flight), and one batch at a time, in input order, for the
        # groups (batches in flight may be applied in any order).
        for name, window in (("single", 8), ("single-ordered", 1)):
            d = Daemon(args.bin, tmp, name, stopwords, "auto")
            try:
                with nddd.Client(d.address, doc_batch_size=256,
                                 window=window) as c:
                    t = time.monotonic()
                    want = c.submit_docs(docs)
                    secs = time.monotonic() - t
            finally:
                d.close()
            print("phase=%-15s %6.2f s %8.0f docs/s %6.1f MB/s"
                  % (name, secs, len(docs) / secs, mb / secs))
            if window == 8:
                single = secs
        want_groups = founders(docs, want)
        for n in args.shards:
            daemons = [Daemon(args.bin, tmp, "s%d-%d" % (n, i), stopwords,
                              "auto") for i in range(n)]
            try:
                with nddd.ShardedClient([x.address for x in daemons],
                                        doc_batch_size=256) as s:
                    t = time.monotonic()
                    got = s.submit_docs(docs)
                    secs = time.monotonic() - t
            finally:
                for x in daemons:
                    x.close()
            same = sum(g == w for g, w in zip(founders(docs, got),
                                              want_groups))
            print("phase=shards-%-8d %6.2f s %8.0f docs/s %6.1f MB/s  "
                  "%.2f x single; groups as one daemon's: %d of %d"
                  % (n, secs, len(docs) / secs, mb / secs, single / secs,
                     same, len(docs)))


if __name__ == "__main__":
    main()

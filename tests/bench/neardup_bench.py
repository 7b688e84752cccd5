#!/usr/bin/python3
"""How well nddd finds near copies, on labelled cases, against the usual
alternative (MinHash LSH) measured in the same run on the same cases.

    PYTHONPATH=clients/python /usr/bin/python3 tests/bench/neardup_bench.py \\
        --bin build/release/bin [--data DIR] [--seed N] [--size N] \\
        [--html-size N] [--conf-extra TEXT]... [--nddctl-arg=ARG]... \\
        [--json FILE]

The cases are those of neardup_cases.py (its docstring says exactly how
they are made): three stores, text (Reuters bodies and their edited
copies), html (articles inside real page templates) and clough (the
Clough-Stevenson answers against their Wikipedia originals).  Each system
stores a store's documents, then answers each of its queries with the
stored documents it takes for near copies; queries store nothing and do
not see each other.

nddd: for each store a fresh daemon (its data in a temporary directory,
sync = none: durability is not measured here; the stop words of
conf/stopwords.txt; then each --conf-extra, "\\n" read as a line break, so
that it may override any of these), `nddctl --json doc-submit --jsonl` of
the documents, then of the queries with --query-only (each --nddctl-arg
added to both), the neighbours read from the `near` lists.  A batch reply
lists the nearest neighbours that fit in about 1 KiB: replies whose
`near_total` exceeds what they list are counted and reported.

peer: what datasketch, text-dedup or NeMo Curator do.  HTML goes through
readability-lxml (Document(html).summary(), then the text of that HTML);
text is taken as it is.  Each text's 5-word shingles (the words
re.findall(r"\\w+", text.lower())) are hashed to 64 bits (BLAKE2b, 8-byte
digest) and min-hashed with 128 functions of the multiply-shift family
h(x) = ((a * x + b) mod 2^64) >> 32, a odd (a, b drawn with a fixed seed);
LSH with 32 bands of 4 rows finds candidates, and a candidate is kept when
its estimated Jaccard (the share of equal minhash slots) is >= 0.5.

Measures, per system and per kind of query:

* recall (exact, cut, replaced, framed, reordered, mixed, other_site): the
  share of queries whose intended stored document is among the neighbours;
* same_site: the queries that found the stored page of the same template
  with another article, a false answer; count and rate;
* held_out: the queries that got any neighbour (they should get none);
* Clough: the share of answers that find their task's original, per
  category (cut, light, heavy, non; cut and light together);
* false neighbours: a neighbour whose 5-word-shingle Jaccard with the
  query is below 0.2, judged on the texts the documents were made from
  (for pages the inserted article), and precision = 1 - false / all
  neighbours, per kind and overall (all kinds but Clough's, whose truth is
  their labels: a heavy revision is a real derivation with little text in
  common).
"""

import argparse
import collections
import hashlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import lxml.html
import numpy as np
import readability

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import neardup_cases as cases  # noqa: E402

ROOT = cases.ROOT
STOPWORDS = os.path.join(ROOT, "conf", "stopwords.txt")

RECALL_KINDS = cases.TEXT_KINDS + ("other_site",)
#: Figures the issue quotes for the whole-page 64-bit simhash (k = 3) and
#: for the peer, on cases like these (shares unless a count is given).
ISSUE = {
    "nddd": {"cut": 0.11, "replaced": 0.26, "framed": 0.10,
             "reordered": 0.53, "mixed": 0.01, "other_site": "0/160",
             "same_site": "10/160", "clough_cut": "1/19",
             "clough_light": "1/19"},
    "peer": {"cut": 0.985, "replaced": 0.968, "framed": 1.0,
             "reordered": 1.0, "mixed": 0.457, "other_site": 0.56,
             "same_site": "36/160"},
}

# --- nddd ----------------------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    """A fresh nddd on a free loopback port, its data in tmp/name."""

    def __init__(self, bin_dir, tmp, name, extra):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        self.address = "127.0.0.1:%d" % free_port()
        conf = os.path.join(self.dir, "nddd.conf")
        with open(conf, "w") as f:
            f.write("[server]\nlisten = %s\n[store]\ndata_dir = %s\n"
                    "sync = none\n[simhash]\nstopwords = %s\n"
                    % (self.address, os.path.join(self.dir, "data"),
                       STOPWORDS))
            for text in extra:
                f.write(text.replace("\\n", "\n") + "\n")
        self.log = open(os.path.join(self.dir, "nddd.log"), "wb")
        root = ["--allow-root"] if os.geteuid() == 0 else []
        self.proc = subprocess.Popen(
            [os.path.join(bin_dir, "nddd"), "-c", conf] + root,
            stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        port = int(self.address.rsplit(":", 1)[1])
        while True:
            if self.proc.poll() is not None:
                self.log.close()
                with open(self.log.name, errors="replace") as f:
                    sys.exit("neardup_bench: nddd exited (%s):\n%s"
                             % (self.proc.returncode, f.read()))
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit("neardup_bench: nddd does not listen on %d"
                             % port)
                time.sleep(0.05)

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


def doc_submit(nddctl, address, items, path, extra_args, query_only):
    """The replies of `nddctl doc-submit --jsonl` for items (written to
    path), one dict per item, in order."""
    with open(path, "w") as f:
        for d in items:
            f.write(d.jsonl() + "\n")
    cmd = [nddctl, "-H", address, "--json", "--no-progress", "doc-submit",
           "--jsonl"] + (["--query-only"] if query_only else []) + \
        list(extra_args) + [path]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    # 1: some items failed; their lines say why, and are counted.
    if res.returncode not in (0, 1):
        sys.exit("neardup_bench: %s exited %d" % (" ".join(cmd),
                                                  res.returncode))
    replies = [json.loads(line) for line in res.stdout.splitlines()
               if line.strip()]
    if len(replies) != len(items):
        sys.exit("neardup_bench: %d replies to %d documents"
                 % (len(replies), len(items)))
    return replies


def run_nddd(store, bin_dir, tmp, conf_extra, nddctl_args):
    """{query URL: [stored URLs]} of nddd for store, and what it saw."""
    nddctl = os.path.join(bin_dir, "nddctl")
    d = Daemon(bin_dir, tmp, "nddd-" + store.name, conf_extra)
    try:
        t0 = time.perf_counter()
        stored = doc_submit(nddctl, d.address, store.docs,
                            os.path.join(d.dir, "docs.jsonl"), nddctl_args,
                            False)
        t1 = time.perf_counter()
        replies = doc_submit(nddctl, d.address, store.queries,
                             os.path.join(d.dir, "queries.jsonl"),
                             nddctl_args, True)
        t2 = time.perf_counter()
    finally:
        d.close()
    # Neighbours are named by doc_id (a daemon may print URLs in a
    # canonical form), else by URL.
    by_id = {r["doc_id"]: doc.url for r, doc in zip(stored, store.docs)
             if "doc_id" in r}
    known = {doc.url for doc in store.docs}
    info = {"store errors": sum("error" in r for r in stored),
            "stored with neighbours": sum(bool(r.get("near"))
                                          for r in stored),
            "query errors": 0, "replies cut": 0, "unknown neighbours": 0}
    answers, errors = {}, collections.Counter()
    for q, r in zip(store.queries, replies):
        if "error" in r:
            errors[r["error"].get("code", "?")] += 1
            answers[q.url] = []
            continue
        near = r.get("near", [])
        if r.get("near_total", len(near)) > len(near):
            info["replies cut"] += 1
        urls = []
        for n in near:
            url = by_id.get(n.get("doc_id"), n.get("url"))
            if url not in known:
                info["unknown neighbours"] += 1
            urls.append(url)
        answers[q.url] = urls
    info["query errors"] = sum(errors.values())
    info.update({"store_s": t1 - t0, "query_s": t2 - t1})
    return answers, info, dict(errors)


# --- The peer: readability + MinHash LSH ----------------------------------

PERMUTATIONS, BANDS, ROWS = 128, 32, 4
PEER_THRESHOLD = 0.5


def article_text(page):
    """The main text of an HTML page, as readability-lxml finds it."""
    try:
        summary = readability.Document(page).summary()
        return lxml.html.fromstring(summary).text_content()
    except Exception:  # an empty or unparsable page: no text
        return ""


class MinHashLSH:
    """MinHash signatures of shingle sets and an LSH index over them."""

    def __init__(self, seed=1):
        rng = np.random.Generator(np.random.PCG64(seed))
        self.a = rng.integers(0, 2**64, PERMUTATIONS, dtype=np.uint64) | \
            np.uint64(1)
        self.b = rng.integers(0, 2**64, PERMUTATIONS, dtype=np.uint64)
        self.buckets = [collections.defaultdict(list) for _ in range(BANDS)]
        self.keys, self.sigs = [], []

    def signature(self, shingle_set):
        """The 128 minhashes of shingle_set, or None for an empty set."""
        if not shingle_set:
            return None
        x = np.fromiter((int.from_bytes(hashlib.blake2b(
            s.encode(), digest_size=8).digest(), "little")
            for s in shingle_set), dtype=np.uint64, count=len(shingle_set))
        h = (x[:, None] * self.a[None, :] + self.b[None, :]) >> np.uint64(32)
        return h.min(axis=0).astype(np.uint32)

    def _bands(self, sig):
        return [sig[i * ROWS:(i + 1) * ROWS].tobytes() for i in range(BANDS)]

    def add(self, key, sig):
        if sig is None:
            return
        for band, k in zip(self.buckets, self._bands(sig)):
            band[k].append(len(self.keys))
        self.keys.append(key)
        self.sigs.append(sig)

    def query(self, sig):
        """The stored keys whose estimated Jaccard with sig is >= the
        threshold, best first."""
        if sig is None:
            return []
        cand = set()
        for band, k in zip(self.buckets, self._bands(sig)):
            cand.update(band.get(k, ()))
        est = [(float(np.mean(self.sigs[i] == sig)), i) for i in cand]
        return [self.keys[i] for e, i in sorted(est, key=lambda t: (-t[0],
                                                                    t[1]))
                if e >= PEER_THRESHOLD]


def run_peer(store, seed):
    logging.getLogger("readability").setLevel(logging.CRITICAL)
    lsh = MinHashLSH(seed)

    def text_of(d):
        return article_text(d.html) if d.html is not None else d.text

    t0 = time.perf_counter()
    for d in store.docs:
        lsh.add(d.url, lsh.signature(cases.shingles(text_of(d))))
    t1 = time.perf_counter()
    answers = {q.url: lsh.query(lsh.signature(cases.shingles(text_of(q))))
               for q in store.queries}
    t2 = time.perf_counter()
    return answers, {"store_s": t1 - t0, "query_s": t2 - t1}, {}


# --- Measures ------------------------------------------------------------


def score(store, answers):
    """Per kind: queries, found (the target among the neighbours; for
    held_out: any neighbour), neighbours, false neighbours."""
    truth = {d.url: cases.shingles(d.truth) for d in store.docs}
    out = {}
    for q in store.queries:
        k = out.setdefault(q.kind, collections.Counter(queries=0))
        near = answers[q.url]
        qs = cases.shingles(q.truth)
        k["queries"] += 1
        k["found"] += (q.target in near) if q.target else bool(near)
        k["neighbours"] += len(near)
        k["false"] += sum(cases.jaccard(qs, truth[u]) < cases.NEAR_JACCARD
                          for u in near if u in truth)
        k["unknown"] += sum(u not in truth for u in near)
    return {kind: dict(c) for kind, c in out.items()}


def all_kinds(figures):
    merged = {}
    for per_store in figures.values():
        merged.update(per_store)
    return merged


# --- Report --------------------------------------------------------------


def share(found, total):
    return "%.3f (%d/%d)" % (found / total, found, total) if total else "-"


def issue_ref(system, kind):
    v = ISSUE[system].get(kind)
    return "-" if v is None else v if isinstance(v, str) else "%.3g" % v


def precision(c):
    n = c.get("neighbours", 0)
    return "%.3f" % (1 - c.get("false", 0) / n) if n else "-"


def report(res, cfg):
    nd, pe = all_kinds(res["nddd"]["kinds"]), all_kinds(res["peer"]["kinds"])
    lines = ["# Near-duplicate benchmark: nddd and MinHash LSH", ""]
    lines += ["Cases: seed %d, %d stored bodies, %d pages per HTML kind; "
              "nddd config extra: %s; nddctl args: %s."
              % (cfg["seed"], cfg["size"], cfg["html_size"],
                 " | ".join(cfg["conf_extra"]) or "none",
                 " ".join(cfg["nddctl_args"]) or "none"), ""]
    for n in cfg["notes"]:
        lines.append("- " + n)
    lines += ["", "## Recall", "",
              "Share of queries whose intended stored document is among "
              "the neighbours.", "",
              "| kind | queries | nddd | peer | issue: old simhash | "
              "issue: peer |", "|---|---:|---:|---:|---:|---:|"]
    for kind in RECALL_KINDS:
        a, b = nd.get(kind, {}), pe.get(kind, {})
        lines.append("| %s | %d | %s | %s | %s | %s |" % (
            kind, a.get("queries", 0), share(a.get("found", 0),
                                             a.get("queries", 0)),
            share(b.get("found", 0), b.get("queries", 0)),
            issue_ref("nddd", kind), issue_ref("peer", kind)))

    lines += ["", "## False answers", "",
              "| measure | nddd | peer | issue: old simhash | issue: peer |",
              "|---|---:|---:|---:|---:|"]
    a, b = nd.get("same_site", {}), pe.get("same_site", {})
    lines.append("| same_site: the other story of the same template found "
                 "| %s | %s | %s | %s |" % (
                     share(a.get("found", 0), a.get("queries", 0)),
                     share(b.get("found", 0), b.get("queries", 0)),
                     issue_ref("nddd", "same_site"),
                     issue_ref("peer", "same_site")))
    a, b = nd.get("held_out", {}), pe.get("held_out", {})
    lines.append("| held_out: queries with any neighbour | %s | %s | - | - |"
                 % (share(a.get("found", 0), a.get("queries", 0)),
                    share(b.get("found", 0), b.get("queries", 0))))
    lines.append("| held_out: their neighbours, false of them | %d, %d | "
                 "%d, %d | - | - |" % (a.get("neighbours", 0),
                                       a.get("false", 0),
                                       b.get("neighbours", 0),
                                       b.get("false", 0)))

    lines += ["", "## Clough-Stevenson short answers", "",
              "Share of answers that find their task's original (5 "
              "originals stored).", "",
              "| category | answers | nddd | peer | target | issue: old "
              "simhash |", "|---|---:|---:|---:|---|---:|"]
    targets = {"clough_cut": "", "clough_light": "", "clough_heavy": "",
               "clough_non": "0 found"}
    for kind in cases.CLOUGH_KINDS:
        a, b = nd.get(kind, {}), pe.get(kind, {})
        lines.append("| %s | %d | %s | %s | %s | %s |" % (
            kind[len("clough_"):], a.get("queries", 0),
            share(a.get("found", 0), a.get("queries", 0)),
            share(b.get("found", 0), b.get("queries", 0)), targets[kind],
            issue_ref("nddd", kind)))
    cl = [(s.get("clough_cut", {}), s.get("clough_light", {}))
          for s in (nd, pe)]
    lines.append("| cut + light | %d | %s | %s | >= 0.8 | - |" % (
        cl[0][0].get("queries", 0) + cl[0][1].get("queries", 0),
        *(share(x.get("found", 0) + y.get("found", 0),
                x.get("queries", 0) + y.get("queries", 0)) for x, y in cl)))

    lines += ["", "## False neighbours", "",
              "A neighbour whose 5-word-shingle Jaccard with the query "
              "(on the texts they were made from) is below 0.2; precision "
              "= 1 - false / neighbours.  Overall: every kind but "
              "Clough's.", "",
              "| kind | nddd neighbours | false | precision | peer "
              "neighbours | false | precision |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    order = cases.TEXT_KINDS + ("held_out",) + cases.HTML_KINDS
    totals = [collections.Counter(), collections.Counter()]
    for kind in order + cases.CLOUGH_KINDS:
        a, b = nd.get(kind, {}), pe.get(kind, {})
        if kind in order:
            totals[0].update(a)
            totals[1].update(b)
        lines.append("| %s | %d | %d | %s | %d | %d | %s |" % (
            kind, a.get("neighbours", 0), a.get("false", 0), precision(a),
            b.get("neighbours", 0), b.get("false", 0), precision(b)))
    a, b = totals
    lines.append("| overall | %d | %d | %s | %d | %d | %s |" % (
        a["neighbours"], a["false"], precision(a), b["neighbours"],
        b["false"], precision(b)))

    lines += ["", "## Runs", "",
              "| store | system | store s | query s | notes |",
              "|---|---|---:|---:|---|"]
    for system in ("nddd", "peer"):
        for name, info in res[system]["runs"].items():
            notes = ", ".join("%s %s" % (k, v) for k, v in info.items()
                              if not k.endswith("_s"))
            errs = res[system]["errors"].get(name)
            if errs:
                notes += (", " if notes else "") + "query errors: " + \
                    ", ".join("%s %d" % kv for kv in errs.items())
            lines.append("| %s | %s | %.2f | %.2f | %s |" % (
                name, system, info["store_s"], info["query_s"],
                notes or "-"))
    unknown = sum(c.get("unknown", 0) for c in nd.values())
    if unknown:
        lines += ["", "nddd named %d neighbours that are not stored "
                  "documents of the store (not judged)." % unknown]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True,
                    help="the folder of nddd and nddctl")
    ap.add_argument("--data", default=None,
                    help="the shared data folder (default: $NDDD_TEST_DATA "
                    "or ../shared/data beside the source tree)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--size", type=int, default=cases.DEFAULT_SIZE,
                    help="stored Reuters bodies, and held-out ones "
                    "(default %d)" % cases.DEFAULT_SIZE)
    ap.add_argument("--html-size", type=int, default=None,
                    help="cases per HTML kind (default: size * 160 / 600)")
    ap.add_argument("--conf-extra", action="append", default=[],
                    metavar="TEXT", help="lines added to every nddd "
                    "config, \\n as line break (repeatable), e.g. "
                    "'[near]\\nk = 3'")
    ap.add_argument("--nddctl-arg", action="append", default=[],
                    metavar="ARG", help="an argument added to nddctl "
                    "doc-submit (repeatable; --nddctl-arg=--flag for a "
                    "flag)")
    ap.add_argument("--json", metavar="FILE",
                    help="also write the figures as JSON to FILE")
    args = ap.parse_args()

    t_start = time.perf_counter()
    stores = cases.build(args.data, args.seed, args.size, args.html_size)
    t_cases = time.perf_counter() - t_start
    bin_dir = os.path.abspath(args.bin)
    res = {s: {"kinds": {}, "runs": {}, "errors": {}}
           for s in ("nddd", "peer")}
    tmp = tempfile.mkdtemp(prefix="neardup_bench.")
    try:
        for store in stores.values():
            for system, run in (
                    ("nddd", lambda s: run_nddd(s, bin_dir, tmp,
                                                args.conf_extra,
                                                args.nddctl_arg)),
                    ("peer", lambda s: run_peer(s, args.seed))):
                answers, info, errors = run(store)
                res[system]["kinds"][store.name] = score(store, answers)
                res[system]["runs"][store.name] = info
                res[system]["errors"][store.name] = errors
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cfg = {"seed": args.seed, "size": args.size,
           "html_size": len(stores["html"].docs),
           "conf_extra": args.conf_extra, "nddctl_args": args.nddctl_arg,
           "notes": [n for s in stores.values() for n in s.notes]}
    print(report(res, cfg))
    wall = time.perf_counter() - t_start
    print("\nwall time %.1f s (building the cases %.1f s)" % (wall, t_cases))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"config": cfg, "results": res, "issue": ISSUE,
                       "wall_s": wall, "cases_s": t_cases}, f, indent=1)


if __name__ == "__main__":
    main()

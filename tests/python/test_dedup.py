"""nddd.dedup, the batch job on Dask, on a LocalCluster of 2 worker
processes: its pairs against brute force (the Reuters-21578 bodies, and a
million synthetic fingerprints with planted neighbours), its groups
against plain reference code, its fingerprints and story groups against a
real daemon's, and its command.

The brute force is tests/python/pairs_ref.c, compiled here (with
-march=native where the compiler takes it): XOR and popcount over pairs,
nothing shared with the job.
"""

import collections
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import warnings

import harness  # sets sys.path for nddd

import numpy as np

import nddd
from nddd import dedup as nd
from nddd.engine import Engine

import dask.bag as db
from distributed import Client, LocalCluster

TEST_DATA = (os.environ.get("NDDD_TEST_DATA")
             or os.path.join(harness.ROOT, "..", "shared", "data"))
STOPWORDS = os.path.join(harness.ROOT, "conf", "stopwords.txt")
SEED = 20070508

_cluster = None
_client = None
_tmp = None
_pairs_ref = None
_reuters = None


def setUpModule():
    global _cluster, _client, _tmp, _pairs_ref
    # Debian's distributed calls what its tornado deprecates.
    warnings.filterwarnings("ignore", "make_current is deprecated",
                            DeprecationWarning)
    _tmp = tempfile.mkdtemp(prefix="nddd-dedup-")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "pairs_ref.c")
    _pairs_ref = os.path.join(_tmp, "pairs_ref")
    for flags in (["-O3", "-march=native"], ["-O3"]):
        if subprocess.call(["cc", "-std=c11"] + flags +
                           ["-o", _pairs_ref, src]) == 0:
            break
    else:
        raise RuntimeError("cannot compile %s" % src)
    _cluster = LocalCluster(n_workers=2, threads_per_worker=1,
                            processes=True, dashboard_address=None,
                            silence_logs=logging.ERROR)
    _client = Client(_cluster)


def tearDownModule():
    if _client is not None:
        _client.close()
    if _cluster is not None:
        _cluster.close()
    shutil.rmtree(_tmp, ignore_errors=True)


def reuters():
    """The Reuters-21578 bodies (bytes), as tests/lib/corpus.c reads them:
    the BODY elements of reut2-000.sgm ... reut2-021.sgm in order."""
    global _reuters
    if _reuters is None:
        bodies = []
        for i in range(22):
            path = os.path.join(TEST_DATA, "text_corpora", "reuters21578",
                                "reut2-%03d.sgm" % i)
            with open(path, "rb") as f:
                bodies += re.findall(rb"<BODY>(.*?)</BODY>", f.read(), re.S)
        assert len(bodies) > 19000
        _reuters = bodies
    return _reuters


def reuters_docs():
    return [("http://reuters.example/%d" % i, b)
            for i, b in enumerate(reuters())]


def brute_force(fps, k, queries=None):
    """{(a, b): distance} of every pair within k of fps (a uint64 array),
    or of every pair with one of queries, by pairs_ref: in two processes
    (half of the queries each) when there are queries."""
    fp_path = os.path.join(_tmp, "fps.bin")
    fps.astype(np.uint64).tofile(fp_path)
    cmds = []
    if queries is None:
        cmds.append([_pairs_ref, str(k), fp_path])
    else:
        q = np.unique(np.asarray(queries, dtype=np.uint64))
        for i, half in enumerate((q[0::2], q[1::2])):
            path = os.path.join(_tmp, "queries%d.bin" % i)
            half.tofile(path)
            cmds.append([_pairs_ref, str(k), fp_path, path])
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE) for c in cmds]
    pairs = {}
    for p in procs:
        out, _ = p.communicate()
        assert p.returncode == 0, p.returncode
        for line in out.split(b"\n"):
            if line:
                a, b, d = map(int, line.split())
                pairs[(a, b)] = d
    return pairs


def pairs_of(result):
    """{(a, b): distance} of a Dedup, checking that each pair is once."""
    df = result.pairs.compute()
    got = {(int(a), int(b)): int(d)
           for a, b, d in zip(df["a"], df["b"], df["distance"])}
    assert len(got) == len(df), "a pair found twice"
    assert all(a < b for a, b in got), "a pair not in order"
    return got


def ref_groups(docs, pairs):
    """Plain reference code for the two groupings, from the pairs: the
    components (named by their smallest doc) by union-find, and the
    daemon's rule in doc order: the group of the nearest earlier
    neighbour, ties the earliest, or a group of one's own."""
    parent = {d: d for d in docs}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    earlier = collections.defaultdict(list)
    for (a, b), d in pairs.items():
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
        earlier[b].append((d, a))
    component = {d: find(d) for d in docs}
    group = {}
    for doc in sorted(docs):
        group[doc] = group[min(earlier[doc])[1]] if earlier[doc] else doc
    return group, component


class ReutersTest(unittest.TestCase):
    """The Reuters-21578 bodies (19,043 of them), as the daemon would get
    them, in 8 partitions."""

    @classmethod
    def setUpClass(cls):
        cls.result = nd.dedup(db.from_sequence(reuters_docs(),
                                               npartitions=8),
                              stopwords=STOPWORDS)
        cls.docs = cls.result.docs.compute()

    def test_pairs_equal_brute_force(self):
        ok = self.docs[self.docs["error"].isna()]
        self.assertEqual(len(ok), self.result.nfingerprints)
        self.assertGreater(len(ok), 19000)
        doc = ok["doc"].to_numpy()
        want = {(int(doc[a]), int(doc[b])): d for (a, b), d in
                brute_force(ok["simhash"].to_numpy(), 3).items()}
        got = pairs_of(self.result)
        self.assertEqual(got, want)
        self.assertEqual(self.result.npairs, len(want))
        # Duplicates and near duplicates both (the corpus has both).
        self.assertGreater(sum(1 for d in want.values() if d == 0), 100)
        self.assertGreater(sum(1 for d in want.values() if d > 0), 100)

    def test_other_tables_and_tiles(self):
        # Other cuts of the 64 bits (k = 2 with 5 blocks: 10 tables keyed
        # by 3 blocks; k = 4 with 6 blocks: 15 tables keyed by 2), and
        # every bucket of two or more compared in tiles of 5 x 5: the
        # same pairs as brute force.
        ok = self.docs[self.docs["error"].isna()]
        doc = ok["doc"].to_numpy()
        fps = ok[["id", "simhash"]]
        for k, blocks, small, tile in ((2, 5, 64, 1024), (4, 6, 64, 1024),
                                       (3, 4, 1, 5)):
            want = {(int(doc[a]), int(doc[b])): d for (a, b), d in
                    brute_force(ok["simhash"].to_numpy(), k).items()}
            r = nd.dedup_fingerprints(fps, k=k, blocks=blocks,
                                      partitions=4, small_bucket=small,
                                      tile=tile)
            self.assertEqual(len(r.tables), {5: 10, 6: 15, 4: 4}[blocks])
            got = pairs_of(r)
            # dedup_fingerprints numbers the given rows.
            self.assertEqual({(int(doc[a]), int(doc[b])): d
                              for (a, b), d in got.items()}, want,
                             (k, blocks, small, tile))

    def test_groups(self):
        pairs = pairs_of(self.result)
        ok = self.docs[self.docs["error"].isna()]
        group, component = ref_groups(ok["doc"].tolist(), pairs)
        self.assertEqual(dict(zip(ok["doc"], ok["group"])), group)
        self.assertEqual(dict(zip(ok["doc"], ok["component"])), component)
        self.assertEqual(self.result.ngroups, len(set(group.values())))
        self.assertEqual(self.result.ncomponents,
                         len(set(component.values())))
        # Some story had more than two members, and some component is
        # wider than its groups.
        self.assertGreater(max(collections.Counter(
            group.values()).values()), 2)
        self.assertLess(self.result.ncomponents, self.result.ngroups)

    def test_fingerprints_equal_the_engine(self):
        e = Engine(stopwords=STOPWORDS)
        bodies = reuters()
        for i in range(0, len(bodies), 97):
            row = self.docs.iloc[i]
            fp = e.simhash(bodies[i])
            self.assertEqual(row["doc"], i)
            self.assertEqual(row["id"], "http://reuters.example/%d" % i)
            if fp is None:
                self.assertEqual(row["error"], "EMPTY_DOCUMENT")
            else:
                self.assertEqual(int(row["simhash"]), fp)

    def test_jsonl(self):
        path = os.path.join(_tmp, "reuters.jsonl")
        self.result.write_jsonl(path)
        docs, pairs = [], {}
        with open(path) as f:
            for line in f:
                obj = json.loads(line)
                if "doc" in obj:
                    self.assertEqual(pairs, {}, "a doc line after pairs")
                    docs.append(obj)
                else:
                    pairs[(obj["a"], obj["b"])] = obj["distance"]
        self.assertEqual([d["doc"] for d in docs], list(range(len(docs))))
        self.assertEqual(len(docs), len(self.docs))
        self.assertEqual(pairs, pairs_of(self.result))
        for d, (_, row) in zip(docs, self.docs.iterrows()):
            self.assertEqual(d["id"], row["id"])
            if row["error"] is None:
                self.assertEqual(d["simhash"], "%016x" % row["simhash"])
                self.assertEqual((d["group"], d["component"]),
                                 (row["group"], row["component"]))
            else:
                self.assertEqual(d["error"], row["error"])


class SyntheticTest(unittest.TestCase):
    """1,000,000 random fingerprints with planted neighbours.

    The reference is exact but not over all 5 x 10^11 pairs, which would
    take minutes here: pairs_ref compares every fingerprint of a query set
    Q with all 10^6 (1.6 x 10^10 pairs, a few seconds).  Q holds every
    planted fingerprint (pairs at distance 0 .. k + 1, chains of three, a
    bucket of 3,000 fingerprints sharing block 0, with neighbours inside
    it) and a random sample of 5,000 others.  On Q the job's pairs must be
    exactly the reference's.  Outside Q the expected number of pairs
    within 3 of independent random fingerprints is C(10^6, 2) x
    (C(64,0) + ... + C(64,3)) / 2^64 = 1.2 x 10^-3: the job's pairs
    there, if any, are checked to be within k by their fingerprints.
    """

    N = 1000000
    K = 3

    def test_planted(self):
        rng = np.random.default_rng(SEED)
        k = self.K
        fps = rng.integers(0, 1 << 64, self.N, dtype=np.uint64)
        slots = iter(rng.permutation(self.N))

        def flip(fp, d, bits=64):
            m = 0
            for b in rng.choice(bits, d, replace=False):
                m |= 1 << int(b)
            return fp ^ np.uint64(m)

        queries = []
        # Pairs at each distance 0 .. k + 1 (k + 1: just outside).
        for i in range(3000):
            u, v = next(slots), next(slots)
            fps[v] = flip(fps[u], i % (k + 2))
            queries += [u, v]
        # Chains u - v - w, each link within k.
        for i in range(500):
            u, v, w = next(slots), next(slots), next(slots)
            fps[v] = flip(fps[u], 1 + i % k)
            fps[w] = flip(fps[v], 1 + (i // k) % k)
            queries += [u, v, w]
        # A bucket of 3,000 (block 0, the top 16 bits, equal: compared in
        # tiles), 300 of them with a neighbour in it (bits of the other
        # blocks flipped).
        big = [next(slots) for _ in range(3000)]
        top = np.uint64(0xBEEF << 48)
        low = np.uint64((1 << 48) - 1)
        for i, s in enumerate(big):
            fps[s] = top | (fps[s] & low)
            if i % 10 == 1:
                fps[s] = flip(fps[big[i - 1]], (i // 10) % (k + 2), 48)
        queries += big
        queries += [next(slots) for _ in range(5000)]

        r = nd.dedup_fingerprints(fps, k=k, partitions=4)
        self.assertEqual((r.ndocs, r.nfingerprints), (self.N, self.N))
        got = pairs_of(r)
        want = brute_force(fps, k, queries)
        q = set(int(x) for x in queries)
        on_q = {p: d for p, d in got.items() if p[0] in q or p[1] in q}
        self.assertEqual(on_q, want)
        # What was planted within k is found, what was not is not.
        self.assertGreater(len(want), 3000 * (k + 1) // (k + 2) + 500 * 2)
        self.assertEqual(set(want.values()), set(range(k + 1)))
        for (a, b), d in got.items():
            self.assertEqual(bin(int(fps[a] ^ fps[b])).count("1"), d)
            self.assertLessEqual(d, k)
        # The groupings of these pairs.
        docs = r.docs.compute()
        in_pairs = sorted({x for p in got for x in p})
        group, component = ref_groups(in_pairs, got)
        sub = docs.set_index("doc").loc[in_pairs]
        self.assertEqual(dict(zip(in_pairs, sub["group"])), group)
        self.assertEqual(dict(zip(in_pairs, sub["component"])), component)
        lonely = docs[~docs["doc"].isin(in_pairs)].head(1000)
        self.assertTrue((lonely["group"] == lonely["doc"]).all())
        self.assertTrue((lonely["component"] == lonely["doc"]).all())
        self.assertEqual(list(docs["id"].head(3)), [0, 1, 2])


class DaemonTest(unittest.TestCase):
    """The job against a real daemon with the same stop words."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = harness.Daemon("[simhash]\nstopwords = %s\n"
                                    % STOPWORDS)
        cls.daemon.start()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.cleanup()

    def test_fingerprints_equal_the_daemons(self):
        # HTML pages and Reuters bodies, by body, stored nowhere.
        pages_dir = os.path.join(TEST_DATA, "text_corpora", "l3s_gn1_html",
                                 "original")
        pages = []
        for name in sorted(os.listdir(pages_dir))[:150]:
            with open(os.path.join(pages_dir, name), "rb") as f:
                pages.append(("http://l3s.example/%s" % name, f.read(),
                              True))
        texts = [(u, b, False) for u, b in reuters_docs()[:3000]]
        records = [{"url": u, "html": b} if html else (u, b)
                   for u, b, html in pages + texts]
        r = nd.dedup(db.from_sequence(records, npartitions=4),
                     stopwords=STOPWORDS)
        docs = r.docs.compute()
        with nddd.Client(self.daemon.address, timeout=60) as c:
            theirs = c.query_docs(pages + texts)
        self.assertEqual(len(theirs), len(docs))
        empty = 0
        for t, (_, row) in zip(theirs, docs.iterrows()):
            self.assertEqual(row["id"], t.url)
            if t.ok:
                self.assertEqual(int(row["simhash"]), t.simhash, t.url)
                self.assertIsNone(row["error"])
            else:
                self.assertEqual(t.error.code, nddd.Code.EMPTY_DOCUMENT)
                self.assertEqual(row["error"], "EMPTY_DOCUMENT")
                empty += 1
        self.assertLess(empty, 50)

    def test_story_groups_equal_the_daemons(self):
        # Every Reuters body submitted in order (one batch in flight at a
        # time: pipelined batches may be carried out in any order); the
        # job's groups, each named by its founder's URL, are the daemon's.
        docs = reuters_docs()
        with nddd.Client(self.daemon.address, timeout=120, window=1) as c:
            theirs = c.submit_docs(docs, namespace="reuters")
        stored = [t for t in theirs if t.ok]
        self.assertGreater(len(stored), 19000)
        ids = [t.doc_id for t in stored]
        self.assertEqual(ids, sorted(ids), "ids not in submit order")
        url_of = {t.doc_id: t.url for t in stored}
        daemon_group = {t.url: url_of[t.group] for t in stored}

        r = nd.dedup(db.from_sequence(docs, npartitions=6),
                     stopwords=STOPWORDS)
        mine = r.docs.compute()
        url_of_doc = dict(zip(mine["doc"], mine["id"]))
        ok = mine[mine["error"].isna()]
        job_group = {u: url_of_doc[g] for u, g in zip(ok["id"],
                                                       ok["group"])}
        self.assertEqual(job_group, daemon_group)
        self.assertEqual(len(set(daemon_group.values())), r.ngroups)
        self.assertEqual({t.url: t.simhash for t in stored},
                         {u: int(s) for u, s in zip(ok["id"],
                                                    ok["simhash"])})
        self.assertEqual({t.url for t in theirs if not t.ok},
                         set(mine[mine["error"].notna()]["id"]))


class CommandTest(unittest.TestCase):
    """python3 -m nddd.dedup against the test's scheduler: JSON lines and
    a directory, with lines that are not documents."""

    def test_command(self):
        d = os.path.join(_tmp, "cmd")
        pages = os.path.join(d, "pages")
        os.makedirs(os.path.join(pages, "sub"))
        src = os.path.join(TEST_DATA, "text_corpora", "l3s_gn1_html",
                           "original")
        names = sorted(os.listdir(src))[:30]
        for i, name in enumerate(names):
            shutil.copy(os.path.join(src, name),
                        os.path.join(pages, "sub" if i % 2 else "", name))
        with open(os.path.join(pages, "copy.txt"), "wb") as f:
            f.write(reuters()[5])
        lines = os.path.join(d, "docs.jsonl")
        bodies = reuters()[:2000]
        with open(lines, "w") as f:
            for i, b in enumerate(bodies):
                f.write(json.dumps({"url": "http://r.example/%d" % i,
                                    "text": b.decode("latin-1")}) + "\n")
                if i == 10:
                    f.write("\n")          # blank: no document
                    f.write("not json\n")
                    f.write('{"url": "http://r.example/none"}\n')
                    f.write('{"id": 7, "text": "the of and"}\n')
                    f.write('{"url": "http://r.example/h", "html": '
                            '"<p>Oil prices</p>"}\n')
        out = os.path.join(d, "out.jsonl")
        env = dict(os.environ, PYTHONPATH=harness.PYTHONPATH)
        p = subprocess.run(
            [harness.PYTHON, "-m", "nddd.dedup", "--scheduler",
             _cluster.scheduler_address, lines, pages, "--out", out,
             "--stopwords", STOPWORDS, "--blocksize", "100k",
             "--progress"], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("pairs within 3", p.stderr)
        self.assertIn("writing:", p.stderr)
        docs, pairs = [], {}
        with open(out) as f:
            for line in f:
                obj = json.loads(line)
                if "doc" in obj:
                    docs.append(obj)
                else:
                    pairs[(obj["a"], obj["b"])] = obj["distance"]
        self.assertEqual(len(docs), 2000 + 4 + 31)
        self.assertEqual([x["doc"] for x in docs], list(range(len(docs))))
        bad = docs[11:15]
        self.assertTrue(bad[0]["error"].startswith("INVALID_ARGUMENT: "
                                                   "not JSON"), bad[0])
        self.assertEqual(bad[1]["id"], "http://r.example/none")
        self.assertIn("INVALID_ARGUMENT", bad[1]["error"])
        self.assertEqual(bad[2], {"doc": 13, "id": 7,
                                  "error": "EMPTY_DOCUMENT"})
        self.assertEqual(bad[3]["simhash"], Engine(
            stopwords=STOPWORDS).simhash(b"<p>Oil prices</p>", "html")
            .to_bytes(8, "big").hex())
        files = [x["id"] for x in docs[2004:]]
        self.assertEqual(files, sorted(files))
        self.assertIn("copy.txt", files)
        self.assertIn(os.path.join("sub", names[1]), files)
        # The same document twice: a pair at distance 0 (the text read
        # from JSON as Latin-1 is the same bytes where it is ASCII).
        copy = docs[2004 + files.index("copy.txt")]
        if reuters()[5].isascii():
            self.assertEqual(copy["simhash"], docs[5]["simhash"])
            self.assertEqual(pairs.get((5, copy["doc"])), 0)
            self.assertEqual(copy["group"], docs[5]["group"])
        # The pairs are those of the same documents given to dedup().
        r = nd.dedup(nd.read_inputs([lines, pages], 100 << 10),
                     stopwords=STOPWORDS)
        self.assertEqual(pairs_of(r), pairs)
        # Usage errors.
        p = subprocess.run(
            [harness.PYTHON, "-m", "nddd.dedup", "--local", "1", lines,
             "--out", out, "-k", "4", "--blocks", "4"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("k must be", p.stderr)


if __name__ == "__main__":
    unittest.main()

"""nddd.dedup, the batch job on Dask, on a LocalCluster of 2 worker
processes: its Hamming pairs against brute force (the Reuters-21578
bodies, and a million synthetic fingerprints with planted neighbours), its
groups against plain reference code, and its prints, neighbours (the
verified answer and the Hamming one: ids, order, estimates) and story
groups against a real daemon's fed the same documents in the same order
(Reuters bodies with edited copies, L3S-GN1 pages; documents made to meet
the daemon's limits on sketch keys), and its command.

The brute force is tests/python/pairs_ref.c, compiled here (with
-march=native where the compiler takes it): XOR and popcount over pairs,
nothing shared with the job.
"""

import collections
import json
import logging
import os
import random
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
from nddd.engine import Engine, sketch_compare

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


def ref_groups(docs, pairs, rank=None):
    """Plain reference code for the two groupings, from the pairs
    ({(a, b): value}): the components (named by their smallest doc) by
    union-find, and the daemon's rule in doc order: the group of the
    first earlier neighbour, the one of least rank(value, a) (by default
    the nearest, ties the earliest), or a group of one's own."""
    if rank is None:
        def rank(d, a):
            return (d, a)
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
        earlier[b].append((rank(d, a), a))
    component = {d: find(d) for d in docs}
    group = {}
    for doc in sorted(docs):
        group[doc] = group[min(earlier[doc])[1]] if earlier[doc] else doc
    return group, component


def verified_pairs_of(result):
    """{(a, b): (distance, resemblance, containment)} of a Dedup's
    verified answer, checking that each pair is once."""
    df = result.pairs.compute()
    got = {(int(a), int(b)): (int(d), float(r), float(c)) for a, b, d, r, c
           in zip(df["a"], df["b"], df["distance"], df["resemblance"],
                  df["containment"])}
    assert len(got) == len(df), "a pair found twice"
    assert all(a < b for a, b in got), "a pair not in order"
    return got


def most_similar(v, a):
    """The verified answer's rank of a neighbour a: the most similar
    first, then the earliest."""
    return (-v[1], a)


class ReutersTest(unittest.TestCase):
    """The Reuters-21578 bodies (19,043 of them), as the daemon would get
    them, in 8 partitions: the Hamming answer (result) and the verified
    one (verified)."""

    @classmethod
    def setUpClass(cls):
        bag = db.from_sequence(reuters_docs(), npartitions=8)
        cls.result = nd.dedup(bag, stopwords=STOPWORDS, answer="hamming")
        cls.docs = cls.result.docs.compute()
        cls.verified = nd.dedup(bag, stopwords=STOPWORDS)
        cls.verified_docs = cls.verified.docs.compute()

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

    def test_verified_pairs_and_groups(self):
        # Every pair passes the daemon's thresholds (as 32-bit floats);
        # exact copies (distance 0, the same bytes) are neighbours of
        # resemblance and containment 1; the groups follow the most
        # similar earlier neighbour, the components the pairs.
        r = self.verified
        pairs = verified_pairs_of(r)
        self.assertEqual((r.answer, r.npairs), ("verified", len(pairs)))
        self.assertGreater(r.ncandidates, len(pairs))
        c32, r32 = np.float32(0.2), np.float32(0.05)
        for d, res, con in pairs.values():
            self.assertTrue(np.float32(con) >= c32 and
                            np.float32(res) >= r32)
            self.assertLessEqual(max(res, con), 1.0)
        bodies = reuters()
        same = [(a, b) for (a, b), d in pairs_of(self.result).items()
                if d == 0 and bodies[a] == bodies[b]]
        self.assertGreater(len(same), 50)
        for p in same:
            self.assertEqual(pairs[p], (0, 1.0, 1.0), p)
        # Far more near copies than within k, some far from it.
        self.assertGreater(len(pairs), 10 * self.result.npairs)
        self.assertGreater(sum(1 for d, _, _ in pairs.values() if d > 10),
                           1000)
        ok = self.verified_docs[self.verified_docs["error"].isna()]
        group, component = ref_groups(ok["doc"].tolist(), pairs,
                                      most_similar)
        self.assertEqual(dict(zip(ok["doc"], ok["group"])), group)
        self.assertEqual(dict(zip(ok["doc"], ok["component"])), component)
        self.assertEqual(r.ngroups, len(set(group.values())))
        self.assertEqual(r.ncomponents, len(set(component.values())))
        # neighbours(): as a daemon lists them.
        b = max(set(b for _, b in pairs),
                key=lambda x: sum(1 for p in pairs if p[1] == x))
        want = sorted(((a, d, res, con) for (a, bb), (d, res, con)
                       in pairs.items() if bb == b),
                      key=lambda t: (-t[2], t[0]))
        self.assertGreater(len(want), 3)
        self.assertEqual(r.neighbours(b), want)

    def test_fingerprints_equal_the_engine(self):
        e = Engine(stopwords=STOPWORDS)
        bodies = reuters()
        for i in range(0, len(bodies), 97):
            for docs in (self.docs, self.verified_docs):
                row = docs.iloc[i]
                p = e.print(bodies[i])
                self.assertEqual(row["doc"], i)
                self.assertEqual(row["id"], "http://reuters.example/%d" % i)
                if p is None:
                    self.assertEqual(row["error"], "EMPTY_DOCUMENT")
                    self.assertIsNone(row["content"])
                else:
                    self.assertEqual(int(row["simhash"]), p.simhash)
                    self.assertEqual(row["content"], "text")

    def test_jsonl(self):
        for r, docs_frame in ((self.result, self.docs),
                              (self.verified, self.verified_docs)):
            path = os.path.join(_tmp, "reuters-%s.jsonl" % r.answer)
            r.write_jsonl(path)
            docs, pairs = [], {}
            with open(path) as f:
                for line in f:
                    obj = json.loads(line)
                    if "doc" in obj:
                        self.assertEqual(pairs, {}, "a doc line after pairs")
                        docs.append(obj)
                    elif r.answer == "hamming":
                        self.assertEqual(sorted(obj), ["a", "b", "distance"])
                        pairs[(obj["a"], obj["b"])] = obj["distance"]
                    else:
                        pairs[(obj["a"], obj["b"])] = (
                            obj["distance"], obj["resemblance"],
                            obj["containment"])
            self.assertEqual([d["doc"] for d in docs],
                             list(range(len(docs))))
            self.assertEqual(len(docs), len(docs_frame))
            # The estimates read back as the 32-bit floats they were.
            self.assertEqual(pairs, pairs_of(r) if r.answer == "hamming"
                             else verified_pairs_of(r))
            for d, (_, row) in zip(docs, docs_frame.iterrows()):
                self.assertEqual(d["id"], row["id"])
                if row["error"] is None:
                    self.assertEqual(d["simhash"], "%016x" % row["simhash"])
                    self.assertEqual((d["content"], d["group"],
                                      d["component"]),
                                     (row["content"], row["group"],
                                      row["component"]))
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


def l3s_pages(n):
    """The first n L3S-GN1 pages (name, bytes)."""
    d = os.path.join(TEST_DATA, "text_corpora", "l3s_gn1_html", "original")
    out = []
    for name in sorted(os.listdir(d))[:n]:
        with open(os.path.join(d, name), "rb") as f:
            out.append((name, f.read()))
    return out


def edited_corpus():
    """The Reuters-21578 bodies, then (shuffled) edited copies of 300 of
    them (cut to 50-80% of their words, a twelfth of their words
    replaced, or framed by 80 words of another story) and 150 L3S-GN1
    pages, 30 of them twice (the second cut to its first 70-90% of
    bytes): (url, body) and (url, body, True) for a page."""
    rng = random.Random(SEED)
    bodies = reuters()
    docs = reuters_docs()
    words = b" ".join(bodies[:2000]).split()
    frame = words[5000:5080]
    extra = []
    picked = [i for i in rng.sample(range(len(bodies)), 400)
              if len(bodies[i].split()) >= 60][:300]
    for n, i in enumerate(picked):
        w = bodies[i].split()
        if n % 3 == 0:
            w = w[:int(len(w) * rng.uniform(0.5, 0.8))]
        elif n % 3 == 1:
            w = list(w)
            for j in rng.sample(range(len(w)), max(1, len(w) // 12)):
                w[j] = rng.choice(words)
        else:
            w = frame[:40] + w + frame[40:]
        extra.append(("http://edited.example/%d/%d" % (n % 3, i),
                      b" ".join(w)))
    pages = l3s_pages(150)
    for name, page in pages:
        extra.append(("http://l3s.example/%s" % name, page, True))
    for name, page in pages[:30]:
        cut = page[:int(len(page) * rng.uniform(0.7, 0.9))]
        extra.append(("http://l3s.example/cut/%s" % name, cut, True))
    rng.shuffle(extra)
    return docs + extra


def as_records(docs):
    """The job's records of (url, body[, html]) documents."""
    return [{"url": d[0], "html": d[1]} if len(d) > 2 and d[2]
            else (d[0], d[1]) for d in docs]


class DaemonTest(unittest.TestCase):
    """The job against a real daemon with the same stop words: each test
    feeds a fresh daemon (a key's count is the whole daemon's) the same
    documents in the same order, one batch in flight (pipelined batches
    may be carried out in any order)."""

    def daemon(self):
        d = harness.Daemon("[simhash]\nstopwords = %s\n[store]\nsync = none"
                           "\n" % STOPWORDS)
        self.addCleanup(d.cleanup)
        return d.start()

    def submit(self, docs, match=None):
        """A fresh daemon's results for docs, submitted in order, and its
        stats."""
        d = self.daemon()
        with nddd.Client(d.address, timeout=120, window=1) as c:
            theirs = c.submit_docs(docs, namespace="corpus", match=match)
            stats = c.stats()
        return theirs, stats

    def assert_same(self, docs, theirs, r):
        """The job's result r is the daemon's (theirs): fingerprints,
        contents and errors; each document's neighbours as its submit
        listed them (by URL, with distance, estimates and whether
        verified; the daemon lists those that fit in its reply) and their
        number; and the groups, each named by its founder's URL."""
        mine = r.docs.compute()
        self.assertEqual(len(theirs), len(mine))
        url_of_doc = dict(zip(mine["doc"], mine["id"]))
        url_of_id = {t.doc_id: t.url for t in theirs if t.ok}
        stored = [t for t in theirs if t.ok]
        self.assertEqual([t.doc_id for t in stored],
                         sorted(t.doc_id for t in stored),
                         "ids not in submit order")
        verified = r.answer == "verified"
        pairs = r.pairs.compute()
        order = np.lexsort((nd.pair_ranks(pairs, r.answer),
                            pairs["b"].to_numpy()))
        near = collections.defaultdict(list)
        for a, b, dist, res, con in zip(
                *(pairs[c].to_numpy()[order] for c in
                  ("a", "b", "distance", "resemblance", "containment"))):
            near[int(b)].append((url_of_doc[a], int(dist), float(res),
                                 float(con), verified))
        listed = 0
        for doc, t in enumerate(theirs):
            row = mine.iloc[doc]
            self.assertEqual(row["id"], t.url)
            if not t.ok:
                self.assertEqual(row["error"], t.error.code.name, t.url)
                continue
            self.assertIsNone(row["error"])
            self.assertEqual((int(row["simhash"]), row["content"]),
                             (t.simhash, t.content), t.url)
            got = [(url_of_id[n.doc_id], n.distance, n.resemblance,
                    n.containment, n.verified) for n in t.near]
            self.assertEqual(t.near_total, len(near[doc]), t.url)
            self.assertEqual(got, near[doc][:len(got)], t.url)
            listed += len(got)
        self.assertEqual(r.npairs, sum(t.near_total for t in stored))
        ok = mine[mine["error"].isna()]
        self.assertEqual({u: url_of_doc[g] for u, g in zip(ok["id"],
                                                           ok["group"])},
                         {t.url: url_of_id[t.group] for t in stored})
        self.assertEqual(r.ngroups, len({t.group for t in stored}))
        return listed

    def test_prints_equal_the_daemons(self):
        # HTML pages and Reuters bodies, by body, stored nowhere: the
        # same fingerprints, and what each was judged by.
        pages = [("http://l3s.example/%s" % name, page, True)
                 for name, page in l3s_pages(150)]
        texts = [(u, b, False) for u, b in reuters_docs()[:3000]]
        for html in ("main", "whole"):
            r = nd.dedup(db.from_sequence(as_records(pages + texts),
                                          npartitions=4),
                         stopwords=STOPWORDS, html=html)
            docs = r.docs.compute()
            d = harness.Daemon("[simhash]\nstopwords = %s\n[text]\nhtml = "
                               "%s\n" % (STOPWORDS, html))
            self.addCleanup(d.cleanup)
            with nddd.Client(d.start().address, timeout=60) as c:
                theirs = c.query_docs(pages + texts)
                self.assertEqual(c.stats().near.html, html)
            self.assertEqual(len(theirs), len(docs))
            empty = 0
            for t, (_, row) in zip(theirs, docs.iterrows()):
                self.assertEqual(row["id"], t.url)
                if t.ok:
                    self.assertEqual((int(row["simhash"]), row["content"]),
                                     (t.simhash, t.content), t.url)
                    self.assertIsNone(row["error"])
                else:
                    self.assertEqual(t.error.code, nddd.Code.EMPTY_DOCUMENT)
                    self.assertEqual(row["error"], "EMPTY_DOCUMENT")
                    empty += 1
            self.assertLess(empty, 50)
            contents = collections.Counter(docs["content"])
            if html == "main":
                self.assertGreater(contents["main"], 100)
            else:
                self.assertEqual(contents["whole"], len(pages))
            self.assertEqual(contents["text"], len(texts) - empty)

    def test_verified_answer_equals_the_daemons(self):
        # The Reuters bodies, their edited copies and L3S pages: each
        # document's neighbours (which, in which order, their estimates
        # to the bit) and its group, as a daemon answered its submit.
        docs = edited_corpus()
        theirs, stats = self.submit(docs)
        self.assertEqual((stats.near.answer, stats.near.html),
                         ("verified", "main"))
        r = nd.dedup(db.from_sequence(as_records(docs), npartitions=7),
                     stopwords=STOPWORDS)
        self.assertEqual(r.answer, "verified")
        listed = self.assert_same(docs, theirs, r)
        self.assertGreater(listed, 20000)
        # The daemon looked at the same candidates, and kept as many.
        self.assertEqual((r.ncandidates, r.npairs),
                         (stats.near.candidates, stats.near.verified))
        # The edited copies found their originals, most far past k.
        by_url = {t.url: t for t in theirs}
        found = far = 0
        for d in docs:
            if d[0].startswith("http://edited.example/"):
                i = int(d[0].rsplit("/", 1)[1])
                hit = [n for n in by_url[d[0]].near
                       if n.url == "http://reuters.example/%d" % i]
                found += bool(hit)
                far += bool(hit) and hit[0].distance > 3
        self.assertGreater(found, 250)
        self.assertGreater(far, 150)

    def test_hamming_answer_equals_the_daemons(self):
        docs = edited_corpus()
        theirs, stats = self.submit(docs, match="hamming")
        r = nd.dedup(db.from_sequence(as_records(docs), npartitions=5),
                     stopwords=STOPWORDS, answer="hamming")
        self.assertEqual(r.ncandidates, None)
        self.assertGreater(self.assert_same(docs, theirs, r), 500)
        self.assertTrue(all(not n.verified and n.resemblance == 0
                            for t in theirs for n in t.near))

    def test_limits_equal_the_daemons(self):
        # Documents made to meet the daemon's limits.  Z holds keys K1 and
        # K2 (the shingles of "kappa lambda mu nu"); 4,100 documents after
        # it hold K1: when Y, Z's near copy (two of its three shingles),
        # comes, more than 4,096 documents hold K1, which it passes over,
        # and Z is no candidate of Y's (one key left, and too far in
        # bits).  W has K3 and K4 (its first two phrases), each a key of
        # 2,100 documents of 16 shingles (all keys) that have one of W's
        # other phrases too: 4,200 candidates, of which the daemon looks
        # at the 4,096 oldest.
        def uniq(tag, n):
            return " ".join("%s%dq" % (tag, j) for j in range(n))
        docs = [("http://z.example/", "kappa lambda mu nu zeta")]
        for f in range(4100):
            docs.append(("http://a.example/%d" % f,
                         "kappa lambda mu " + uniq("a%dx" % f, 15)))
        docs.append(("http://y.example/", "kappa lambda mu nu ypsilon"))
        qs = ["qa%dq qb%dq qc%dq" % (r, r, r) for r in range(20)]
        for tag, p in (("b", "rho sigma tau"), ("c", "phi chi psi")):
            for i in range(2100):
                docs.append(("http://%s.example/%d" % (tag, i),
                             "%s %s %s %s" % (p, uniq("%s%dy" % (tag, i), 1),
                                              qs[i % 20],
                                              uniq("%s%dx" % (tag, i), 11))))
        docs.append(("http://w.example/",
                     "rho sigma tau phi chi psi " + " ".join(qs)))
        theirs, stats = self.submit(docs)
        self.assertGreater(stats.near.keys_skipped, 0)
        r = nd.dedup(db.from_sequence(docs, npartitions=5),
                     stopwords=STOPWORDS)
        self.assert_same(docs, theirs, r)
        self.assertEqual((r.ncandidates, r.npairs),
                         (stats.near.candidates, stats.near.verified))
        # Y and Z would be neighbours but for the limit.
        e = Engine(stopwords=STOPWORDS)
        z, y = e.print(docs[0][1]), e.print(docs[4101][1])
        res, con = sketch_compare(y.sketch, z.sketch)
        self.assertTrue(res >= 0.05 and con >= 0.2, (res, con))
        self.assertGreater(bin(y.simhash ^ z.simhash).count("1"), 3)
        self.assertEqual(theirs[4101].near_total, 0)


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
        self.assertIn("pairs verified (containment >= 0.2, resemblance >= "
                      "0.05)", p.stderr)
        self.assertIn("writing:", p.stderr)
        docs, pairs = [], {}
        with open(out) as f:
            for line in f:
                obj = json.loads(line)
                if "doc" in obj:
                    docs.append(obj)
                else:
                    pairs[(obj["a"], obj["b"])] = (
                        obj["distance"], obj["resemblance"],
                        obj["containment"])
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
            self.assertEqual(pairs.get((5, copy["doc"])), (0, 1.0, 1.0))
            self.assertEqual(copy["group"], docs[5]["group"])
        self.assertGreater(collections.Counter(
            x.get("content") for x in docs[2004:])["main"], 20)
        # The pairs are those of the same documents given to dedup().
        inputs = nd.read_inputs([lines, pages], 100 << 10)
        r = nd.dedup(inputs, stopwords=STOPWORDS)
        self.assertEqual(verified_pairs_of(r), pairs)
        # The Hamming answer, and other thresholds.
        p = subprocess.run(
            [harness.PYTHON, "-m", "nddd.dedup", "--scheduler",
             _cluster.scheduler_address, lines, pages, "--out", out,
             "--stopwords", STOPWORDS, "--blocksize", "100k",
             "--answer", "hamming"], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("pairs within 3", p.stderr)
        with open(out) as f:
            hamming = {(o["a"], o["b"]): o["distance"] for o in
                       map(json.loads, f) if "a" in o}
        self.assertEqual(hamming, pairs_of(nd.dedup(
            inputs, stopwords=STOPWORDS, answer="hamming")))
        p = subprocess.run(
            [harness.PYTHON, "-m", "nddd.dedup", "--scheduler",
             _cluster.scheduler_address, lines, "--out", "-",
             "--stopwords", STOPWORDS, "--containment", "0.9",
             "--resemblance", "0.5", "--html", "whole"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        strict = {(o["a"], o["b"]): (o["distance"], o["resemblance"],
                                     o["containment"])
                  for o in map(json.loads, p.stdout.splitlines())
                  if "a" in o}
        self.assertTrue(strict)
        self.assertEqual(strict, {
            ab: v for ab, v in pairs.items() if ab[1] < 2004 and
            np.float32(v[2]) >= np.float32(0.9) and
            np.float32(v[1]) >= np.float32(0.5)})
        # Usage errors.
        p = subprocess.run(
            [harness.PYTHON, "-m", "nddd.dedup", "--local", "1", lines,
             "--out", out, "-k", "4", "--blocks", "4"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("k must be", p.stderr)
        p = subprocess.run(
            [harness.PYTHON, "-m", "nddd.dedup", "--local", "1", lines,
             "--out", out, "--containment", "1.5"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("containment = 1.5", p.stderr)


if __name__ == "__main__":
    unittest.main()

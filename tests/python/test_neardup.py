"""The verified near-duplicate answer of a real daemon, on the labelled
benchmark's cases at a small size (tests/bench/neardup_cases.py: Reuters
bodies and their cut, replaced, framed, reordered and mixed copies, held-out
bodies, and the same article in two sites' pages), against an independent
reference: the exact resemblance and containment of every stored document
with each query, computed here from the whole shingle sets by the rules of
docs/neardup.md (terms as simhash cuts them, stop words out, three terms a
shingle), with no sketch and no index.

What a user relies on, checked for every query:
  - every edited copy finds its original;
  - no neighbour is far below the thresholds (containment 0.2, resemblance
    0.05): a sketch's estimate errs by a few hundredths, not by tenths;
  - every stored document that holds half of its shingles with the query
    (and passes the thresholds by a margin) is a neighbour;
  - the estimates are close to the exact figures;
  - the Hamming answer is exactly the stored documents within k;
  - deletes take documents out of every answer, and a restart after
    kill -9 gives the same answers, estimates included.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

from harness import Daemon, NDDCTL_BIN, ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
import neardup_cases as cases  # noqa: E402

SIZE = 40
CONTAINMENT, RESEMBLANCE, K = 0.2, 0.05, 3
#: How far a sketch's estimate may stray from the exact figure.
TOLERANCE = 0.12
_PUNCT = rb"""!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~"""
_SEPARATORS = re.compile(rb"[\t\n\x0b\x0c\r " + _PUNCT + rb"]+")


def stop_words():
    words = set()
    with open(os.path.join(ROOT, "conf", "stopwords.txt"), "rb") as f:
        for line in f:
            word = line.split(b"#")[0].strip().lower()
            if word:
                words.add(word)
    return words


STOP = stop_words()


def shingle_set(text):
    """The document's shingles as term triples (a document of fewer terms:
    one shingle of them all)."""
    terms = [t.lower() for t in _SEPARATORS.split(text.encode("utf-8"))
             if t]
    terms = [t for t in terms if t not in STOP]
    if len(terms) < 3:
        return {tuple(terms)} if terms else set()
    return {tuple(terms[i:i + 3]) for i in range(len(terms) - 2)}


def exact(a, b):
    inter = len(a & b)
    if not a or not b:
        return 0.0, 0.0
    return inter / len(a | b), inter / min(len(a), len(b))


def judged_text(doc):
    """The text the daemon judges doc by: a page's main content, as
    `nddctl text --html` prints it."""
    if doc.html is None:
        return doc.text
    out = subprocess.run([NDDCTL_BIN, "text", "--html"],
                         input=doc.html.encode("utf-8", "surrogateescape"),
                         stdout=subprocess.PIPE, check=True).stdout
    return out.decode("utf-8", "replace")


class NearDuplicates(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.stores = cases.build(size=SIZE)

    def setUp(self):
        self.daemons = []
        self.tmp = tempfile.mkdtemp(prefix="neardup-test-")

    def tearDown(self):
        for d in self.daemons:
            d.cleanup()

    def daemon(self, conf=""):
        d = Daemon(conf).start()
        self.daemons.append(d)
        return d

    def submit(self, d, docs, query_only, *args):
        path = os.path.join(self.tmp, "in.jsonl")
        with open(path, "w") as f:
            for doc in docs:
                f.write(doc.jsonl() + "\n")
        status, out = d.nddctl("--json", "doc-submit", "--jsonl",
                               "--batch", "16", *(["--query-only"]
                                                  if query_only else []),
                               *args, path)
        self.assertIn(status, (0, 1), out)
        replies = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(len(replies), len(docs))
        return replies

    def check_store(self, store):
        d = self.daemon()
        stored = self.submit(d, store.docs, False)
        ids = {r["doc_id"]: doc for r, doc in zip(stored, store.docs)}
        sets = {doc.url: shingle_set(judged_text(doc)) for doc in store.docs}
        replies = self.submit(d, store.queries, True)
        for q, r in zip(store.queries, replies):
            self.assertNotIn("error", r, q.url)
            self.assertLessEqual(len(r["near"]), r.get("near_total",
                                                       len(r["near"])))
            qs = shingle_set(judged_text(q))
            near = {ids[n["doc_id"]].url: n for n in r["near"]}
            if q.kind not in ("held_out", "same_site"):
                self.assertIn(q.target, near, "%s finds %s" % (q.url,
                                                               q.target))
            for url, n in near.items():
                res, con = exact(qs, sets[url])
                self.assertGreaterEqual(con, CONTAINMENT - TOLERANCE,
                                        (q.url, url, n))
                self.assertGreaterEqual(res, RESEMBLANCE - TOLERANCE / 3,
                                        (q.url, url, n))
                self.assertAlmostEqual(n["resemblance"], res,
                                       delta=TOLERANCE, msg=(q.url, url))
                self.assertAlmostEqual(n["containment"], con,
                                       delta=TOLERANCE * 1.5,
                                       msg=(q.url, url))
            for doc in store.docs:
                res, con = exact(qs, sets[doc.url])
                inter = len(qs & sets[doc.url])
                if (con >= CONTAINMENT + 0.2 and res >= RESEMBLANCE + 0.05
                        and inter >= 0.5 * len(sets[doc.url])):
                    self.assertIn(doc.url, near, "%s misses %s (%.2f, %.2f)"
                                  % (q.url, doc.url, res, con))
            # Most similar first, then oldest.
            order = [(-n["resemblance"], n["doc_id"]) for n in r["near"]]
            self.assertEqual(order, sorted(order), q.url)
        return d, stored, replies

    def test_text_cases(self):
        self.check_store(self.stores["text"])

    def test_pages(self):
        d, stored, replies = self.check_store(self.stores["html"])
        for r in stored:
            self.assertEqual(r.get("content"), "main")

    def test_hamming_answer(self):
        store = self.stores["text"]
        d = self.daemon()
        stored = self.submit(d, store.docs, False)
        fps = {r["doc_id"]: int(r["simhash"], 16) for r in stored}
        replies = self.submit(d, store.queries, True, "--match", "hamming")
        for q, r in zip(store.queries, replies):
            fp = int(r["simhash"], 16)
            want = sorted((bin(fp ^ f).count("1"), i) for i, f in
                          fps.items() if bin(fp ^ f).count("1") <= K)
            got = [(n["distance"], n["doc_id"]) for n in r["near"]]
            self.assertEqual(got, want, q.url)
            self.assertTrue(all("resemblance" not in n for n in r["near"]))

    def test_deletes_and_restart(self):
        store = self.stores["text"]
        d = self.daemon()
        stored = self.submit(d, store.docs, False)
        gone = {doc.url for doc in store.docs[::4]}
        for url in gone:
            status, out = d.nddctl("doc-delete", "--url", url)
            self.assertEqual(status, 0, out)
        before = self.submit(d, store.queries, True)
        by_id = {r["doc_id"]: doc.url for r, doc in zip(stored, store.docs)}
        for q, r in zip(store.queries, before):
            self.assertFalse({by_id[n["doc_id"]] for n in r["near"]} & gone,
                             q.url)
            if q.target in gone:
                self.assertNotIn(q.target, [by_id[n["doc_id"]]
                                            for n in r["near"]])
        d.kill()
        d.start()
        after = self.submit(d, store.queries, True)
        self.assertEqual(before, after)


if __name__ == "__main__":
    unittest.main()

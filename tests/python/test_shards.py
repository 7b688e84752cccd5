"""nddd.ShardedClient against three real daemons, with one daemon as the
reference: the shards together answer as one daemon does; a shard that is
down fails its own URLs only; shards of different settings are refused."""

import os
import random
import subprocess
import unittest

import harness  # sets sys.path for nddd

import nddd
from nddd import Code

from test_client import INVALID_URLS, TEST_DATA, real_urls


def stored_urls(address):
    with nddd.Client(address) as c:
        return c.stats().urls


def reuters_bodies(n):
    """The first n non-empty bodies of the Reuters-21578 articles."""
    bodies = []
    path = os.path.join(TEST_DATA, "text_corpora", "reuters21578")
    for name in sorted(os.listdir(path)):
        if not name.endswith(".sgm"):
            continue
        with open(os.path.join(path, name), encoding="latin-1") as f:
            text = f.read()
        for part in text.split("<BODY>")[1:]:
            body = part.split("</BODY>", 1)[0].strip()
            if body:
                bodies.append(body)
            if len(bodies) == n:
                return bodies
    return bodies


class ShardsTest(unittest.TestCase):
    shards = 3

    def start(self, extra_conf=""):
        d = harness.Daemon(extra_conf)
        self.addCleanup(d.cleanup)
        return d.start()

    def setUp(self):
        self.daemons = [self.start() for _ in range(self.shards)]
        self.ref_daemon = self.start()
        self.addresses = [d.address for d in self.daemons]
        self.sharded = nddd.ShardedClient(self.addresses, window=1,
                                          batch_size=100)
        self.addCleanup(self.sharded.close)
        # One request in flight at a time, as the shards' (window=1): a
        # daemon may apply batches in flight together in any order, and a
        # URL repeated across them would get its counts in that order.
        self.ref = nddd.Client(self.ref_daemon.address, window=1,
                               batch_size=100)
        self.addCleanup(self.ref.close)

    def test_answers_as_one_daemon(self):
        base = [u for u in real_urls(1000) if isinstance(u, str)][:1500]
        pool = base + [u + "#frag" for u in base] + INVALID_URLS
        rng = random.Random(1125)
        for round_ in range(20):
            op = rng.choice(["submit", "submit", "check", "delete"])
            ns = "crawl-2" if round_ % 3 == 2 else None
            pick = [rng.choice(pool) for _ in range(rng.randint(1, 1200))]
            got = getattr(self.sharded, op + "_urls")(pick, namespace=ns)
            want = getattr(self.ref, op + "_urls")(pick, namespace=ns)
            for url, g, w in zip(pick, got, want):
                self.assertEqual((g.count, g.ok), (w.count, w.ok),
                                 "round %d %s %r" % (round_, op, url))
                if not w.ok:
                    self.assertEqual(g.error.code, w.error.code)
        for ns in (None, "crawl-2"):
            got = self.sharded.check_urls(pool, namespace=ns)
            want = self.ref.check_urls(pool, namespace=ns)
            self.assertEqual([r.count for r in got],
                             [r.count for r in want])
        held = [stored_urls(a) for a in self.addresses]
        self.assertTrue(all(held), held)
        self.assertEqual(sum(held), self.ref.stats().urls)

    def test_routing_is_libnddds(self):
        """Each shard holds exactly the URLs shard_of gives it, and the C
        client (nddctl with a shard list) routes them to the same place."""
        urls = ["http://www.site%d.example/p/%d" % (i % 97, i)
                for i in range(3000)]
        owners = [self.sharded.shard_of(u) for u in urls]
        self.assertTrue(all(r.new for r in self.sharded.submit_urls(urls)))
        for i, a in enumerate(self.addresses):
            self.assertEqual(stored_urls(a), owners.count(i))
        self.assertIsNone(self.sharded.shard_of("not a url"))
        # A second list in the same order, through nddctl (libnddd's C
        # routing), finds every URL stored.
        p = subprocess.run(
            [harness.NDDCTL_BIN, "-H", ",".join(self.addresses),
             "url-check"] + urls[:200], stdout=subprocess.PIPE, text=True,
            timeout=60)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(p.stdout.count("seen\t1\t"), 200, p.stdout[:500])

    def test_shard_down(self):
        urls = ["http://host%d.example/%d" % (i % 50, i)
                for i in range(2000)]
        owners = [self.sharded.shard_of(u) for u in urls]
        self.sharded.submit_urls(urls)
        self.daemons[2].kill()
        got = self.sharded.check_urls(urls)
        for url, owner, r in zip(urls, owners, got):
            if owner == 2:
                self.assertEqual(r.error.code, Code.UNAVAILABLE, url)
                self.assertIn(self.addresses[2], r.error.message)
            else:
                self.assertTrue(r.seen, url)
        self.assertIn(2, owners)
        self.daemons[2].start()
        self.assertTrue(all(r.seen for r in self.sharded.check_urls(urls)))

    def test_docs_as_one_daemon(self):
        """Reuters bodies, copies under other URLs and re-submits: the
        groups (named by their founders' URLs), neighbours (by URL, with
        their distances and estimates, the verified answer's and the
        Hamming one's) and neighbour counts one daemon gives, ids
        global."""
        bodies = reuters_bodies(400)
        rng = random.Random(7)
        docs = [("http://news.example/%d" % i, b)
                for i, b in enumerate(bodies)]
        for i in range(300):
            b = rng.choice(bodies)
            if rng.random() < 0.5:
                b += " more"
            elif rng.random() < 0.5:
                # Cut: far in bits, near by its shingles.
                b = b[:len(b) * 2 // 3]
            url = (rng.choice(docs)[0] if rng.random() < 0.2
                   else "http://copy.example/%d" % i)
            docs.append((url, b))
        docs.append(("http://empty.example/", ""))
        got = self.sharded.submit_docs(docs)
        want = self.ref.submit_docs(docs)
        founders_got = {r.doc_id: d[0] for d, r in zip(docs, got) if r.ok}
        founders_want = {r.doc_id: d[0] for d, r in zip(docs, want) if r.ok}

        def near(r):
            return [(n.url, n.distance, n.resemblance, n.containment,
                     n.verified) for n in r.near]

        cross = far = 0
        for d, g, w in zip(docs, got, want):
            self.assertEqual(g.ok, w.ok, d[0])
            if not w.ok:
                self.assertEqual(g.error.code, w.error.code)
                continue
            self.assertEqual((g.simhash, g.created, g.near_total,
                              g.content),
                             (w.simhash, w.created, w.near_total,
                              w.content), d[0])
            self.assertEqual(founders_got[g.group], founders_want[w.group])
            # The reference's batch results list what fits in 1 KiB.
            self.assertEqual(near(g)[:len(w.near)], near(w), d[0])
            self.assertIn(g.doc_id >> 48, (1, 2, 3))
            cross += g.group >> 48 != g.doc_id >> 48
            far += any(n.verified and n.distance > 3 for n in g.near)
        self.assertGreater(cross, 10)
        self.assertGreater(far, 10)
        for match in (None, "verified", "hamming"):
            q = self.sharded.query_doc(bodies[3], match=match)
            r = self.ref.query_doc(bodies[3], match=match)
            self.assertEqual((q.simhash, q.near_total, near(q)),
                             (r.simhash, r.near_total, near(r)), match)
            self.assertEqual(all(n.verified for n in q.near),
                             match != "hamming")
        # The Hamming answer, asked for: within k, unverified.
        got = self.sharded.query_docs(docs[:500], match="hamming")
        want = self.ref.query_docs(docs[:500], match="hamming")
        for d, g, w in zip(docs, got, want):
            self.assertEqual((g.group != 0, g.near_total, near(g)[:1]),
                             (w.group != 0, w.near_total, near(w)[:1]),
                             d[0])
            self.assertTrue(all(not n.verified and n.distance <= 3
                                for n in g.near))
        with self.assertRaisesRegex(nddd.NdddError, "EMPTY_DOCUMENT"):
            self.sharded.query_doc("")
        with self.assertRaises(ValueError):
            self.sharded.submit_docs(docs[:1], match="nearest")

    def test_follows_an_added_shard(self):
        """nddctl reshard adds a fourth daemon: the three-shard client
        learns the longer list and answers as one daemon does, each URL
        on the shard four places route it to."""
        urls = real_urls(600)
        first = self.sharded.submit_urls(urls)
        self.assertEqual([(r.ok, r.count) for r in first],
                         [(r.ok, r.count) for r in self.ref.submit_urls(urls)])
        new = self.start()
        nddctl = os.environ.get("NDDCTL_BIN", "clients/nddctl")
        out = subprocess.run([nddctl, "-H", ",".join(self.addresses),
                              "reshard", "--add", new.address],
                             capture_output=True, text=True, check=True)
        self.assertIn("added " + new.address, out.stdout)
        again = self.sharded.submit_urls(urls)
        self.assertEqual([(r.ok, r.count) for r in again],
                         [(r.ok, r.count) for r in self.ref.submit_urls(urls)])
        self.assertEqual(self.sharded.addresses,
                         self.addresses + [new.address])
        total = sum(stored_urls(a) for a in self.sharded.addresses)
        self.assertEqual(total, stored_urls(self.ref_daemon.address))
        moved = [u for u, r in zip(urls, first)
                 if r.ok and self.sharded.shard_of(u) == 3]
        self.assertGreater(len(moved), 300)
        with nddd.Client(new.address) as c:
            self.assertTrue(all(r.ok and r.seen
                                for r in c.check_urls(moved)))

    def test_different_settings_refused(self):
        other = self.start("[urls]\nsort_query = yes\n")
        with self.assertRaisesRegex(nddd.NdddError, "settings differ"):
            nddd.ShardedClient(self.addresses + [other.address])
        k2 = self.start("[near]\nk = 2\n")
        with self.assertRaisesRegex(nddd.NdddError, "near k"):
            nddd.ShardedClient(self.addresses + [k2.address])
        with self.assertRaisesRegex(ValueError, "twice"):
            nddd.ShardedClient([self.addresses[0], self.addresses[0]])
        with self.assertRaises(ValueError):
            nddd.ShardedClient([])


if __name__ == "__main__":
    unittest.main()

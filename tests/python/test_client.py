"""nddd.Client against a real daemon on loopback (and, for replies the
daemon does not send on demand, a scripted server)."""

import dataclasses
import os
import random
import re
import shutil
import socket
import ssl
import struct
import tempfile
import threading
import time
import unittest
from datetime import datetime, timedelta, timezone

import harness  # sets sys.path for nddd

import nddd
from nddd import Code
from nddd import _canon
from nddd._proto import pb
from nddd.engine import Engine, sketch_compare

CANON_PLAIN = ("urlcanon/1 strip_session_ids=no strip_tracking=no "
               "sort_query=no")
TEST_DATA = (os.environ.get("NDDD_TEST_DATA")
             or os.path.join(harness.ROOT, "..", "shared", "data"))
# Strings no daemon takes as URLs, each for its own reason.
INVALID_URLS = ["", "not a url", "mailto:someone@example.com", "data:,x",
                "file:///etc/passwd", "http:///nohost",
                "http://exa mple.com/", "http://[::1/", "//example.com/x",
                "http://example.com/%zz", b"http://example.com/\x00x",
                "http://example.com/" + "a" * 20000, "\x01\x02",
                b"\xff\xfe"]


def real_urls(limit_per_list=4000):
    """Lines of the real URL lists of the test data (as they are: some are
    not absolute URLs), and with "http://" where they have no scheme."""
    urls = []
    for rel in ("ada_url_various_datasets/kasztp.txt",
                "ada_url_various_datasets/userbait.txt",
                "ut1_blacklists/all_categories_urls_HEAD.tsv",
                "ut1_blacklists/phishing_urls_2021-03-17.txt"):
        path = os.path.join(TEST_DATA, "url_lists", rel)
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")[:limit_per_list]
        for line in lines:
            urls.append(line.decode("utf-8", "surrogateescape"))
            url = line.split(b"\t", 1)[-1]
            if b"://" not in url:
                urls.append(b"http://" + url)
    return urls


class DaemonTest(unittest.TestCase):
    extra_conf = ""

    def setUp(self):
        self.daemon = harness.Daemon(self.extra_conf)
        self.addCleanup(self.daemon.cleanup)
        self.addCleanup(self.check_log)
        self.daemon.start()
        self.client = nddd.Client(self.daemon.address, timeout=10)
        self.addCleanup(self.client.close)

    def check_log(self):
        # A daemon built with sanitizers reports there (make test runs
        # these tests against one too).
        log = self.daemon.log()
        for mark in ("Sanitizer", "runtime error:"):
            self.assertNotIn(mark, log, log[-5000:])


class TestCalls(DaemonTest):
    def test_submit_check_delete(self):
        c = self.client
        r = c.submit_urls(["http://example.com/a",
                           "HTTP://Example.COM:80/./a#top",
                           b"http://example.com/b"])
        self.assertEqual([x.count for x in r], [1, 2, 1])
        self.assertEqual([x.new for x in r], [True, False, True])
        self.assertEqual([x.duplicate for x in r], [False, True, False])
        self.assertTrue(all(x.ok for x in r))
        self.assertIsInstance(r[0], nddd.SubmitResult)
        self.assertEqual(r[1].url, "HTTP://Example.COM:80/./a#top")
        self.assertEqual(r[2].url, b"http://example.com/b")  # as given

        r = c.check_urls(["http://example.com/a", "http://example.com/c"])
        self.assertEqual([(x.seen, x.count) for x in r], [(True, 2),
                                                           (False, 0)])
        self.assertIsInstance(r[0], nddd.CheckResult)

        r = c.delete_urls(["http://EXAMPLE.com/a", "http://example.com/c"])
        self.assertEqual([(x.deleted, x.count) for x in r], [(True, 2),
                                                              (False, 0)])
        self.assertIsInstance(r[0], nddd.DeleteResult)
        self.assertFalse(c.check_url("http://example.com/a").seen)
        self.assertTrue(c.check_url("http://example.com/b").seen)

        self.assertTrue(c.submit_url("http://example.com/a").new)
        self.assertEqual(c.delete_url("http://example.com/a").count, 1)
        self.assertEqual(c.submit_urls([]), [])

    def test_stats(self):
        self.client.submit_urls(["http://example.com/%d" % i
                                 for i in range(10)])
        self.client.check_urls(["http://example.com/1"])
        s = self.client.stats()
        self.assertIsInstance(s, nddd.Stats)
        self.assertEqual(s.urls, 10)
        self.assertEqual(s.submits_new, 10)
        self.assertEqual(s.checks, 1)
        self.assertEqual(s.connections, 1)
        self.assertEqual(s.cbf.k, 8)
        self.assertEqual(s.cbf.counters, 20 * 100000)
        self.assertTrue(s.version)
        self.assertEqual(s.canon, CANON_PLAIN)
        u = s.url_store
        self.assertIsInstance(u, nddd.UrlStoreStats)
        self.assertGreater(u.journal_capacity, 0)
        self.assertGreaterEqual(u.journal_syncs, 1)  # sync = full
        self.assertGreaterEqual(u.groups, 1)
        self.assertGreater(u.index_bytes, 0)
        self.assertEqual(u.pending, 0)
        self.assertEqual(u.journal_entries + u.records - u.dead_records, 10)
        for name in ("journal_bytes", "journal_bytes_written", "flushes",
                     "merges", "merges_forced", "segments", "small_segments",
                     "store_bytes_written", "journal_table_bytes",
                     "host_runs", "host_keys"):
            self.assertIsInstance(getattr(u, name), int, name)

    def test_item_errors_fail_only_their_item(self):
        urls = ["http://example.com/%d" % i for i in range(20)]
        bad = {3: "not a url", 7: "http://exa mple.com/", 8: "data:,x",
               12: "file:///etc/passwd", 19: "http:///nohost"}
        for i, u in bad.items():
            urls[i] = u
        # Small batches: errors are indexed per batch.
        c = nddd.Client(self.daemon.address, batch_size=3)
        self.addCleanup(c.close)
        r = c.submit_urls(urls)
        self.assertEqual(len(r), 20)
        for i, x in enumerate(r):
            self.assertEqual(x.url, urls[i])
            if i in bad:
                self.assertFalse(x.ok)
                self.assertFalse(x.new)
                self.assertEqual(x.count, 0)
                self.assertEqual(x.error.code, Code.INVALID_ARGUMENT)
                self.assertTrue(x.error.message)
                self.assertIn("INVALID_ARGUMENT: ", str(x.error))
            else:
                self.assertTrue(x.ok and x.new, x)
        self.assertEqual(c.stats().urls, 15)
        self.assertTrue(all(x.ok for x in c.check_urls(
            u for i, u in enumerate(urls) if i not in bad)))

    def test_many_batches_keep_order(self):
        urls = ["http://example.com/page/%d" % i for i in range(5000)]
        c = nddd.Client(self.daemon.address, batch_size=97, window=5)
        self.addCleanup(c.close)
        r = c.submit_urls(urls[:2500])
        self.assertTrue(all(x.new for x in r))
        r = c.submit_urls(reversed(urls))  # any iterable
        self.assertEqual([x.url for x in r], urls[::-1])
        self.assertEqual([x.count for x in r], [1] * 2500 + [2] * 2500)
        r = c.check_urls(urls)
        self.assertEqual([x.count for x in r], [2] * 2500 + [1] * 2500)

    def test_one_url_is_not_a_list(self):
        with self.assertRaises(TypeError):
            self.client.submit_urls("http://example.com/")
        with self.assertRaises(TypeError):
            self.client.submit_urls([42])


class TestOneUrlEncoding(unittest.TestCase):
    """A call of one URL encodes its request by hand; protobuf, the
    reference, reads back the request the batch path builds, whatever the
    operation, durability, namespace, time to live and times asked."""

    def test_against_protobuf(self):
        from nddd.client import _one_url_request, _url_request
        rng = random.Random(11)
        for field in ("url_submit", "url_check", "url_delete"):
            for _ in range(200):
                url = bytes(rng.randrange(256) for _ in range(
                    rng.choice((0, 1, 127, 128, 300, 20000))))
                level = rng.choice((pb.DURABILITY_DEFAULT, pb.RELAXED,
                                    pb.DURABLE))
                ns = rng.choice(("", "crawl-1", "é" * 70))
                ttl = rng.choice((0, 1, 127, 128, 2 ** 40))
                with_times = rng.random() < 0.5
                got = pb.Request.FromString(_one_url_request(
                    field, url, level, ns, ttl, with_times))
                want = _url_request(field, [url], None, level, ns, ttl,
                                    with_times)
                self.assertEqual(got, want)


class TestDurability(DaemonTest):
    # Relaxed changes wait this long for their fdatasync: the tests see
    # none of those.
    extra_conf = "[store]\nrelaxed_sync_interval = 600s\n"

    def syncs(self):
        with nddd.Client(self.daemon.address) as c:
            return c.stats().url_store.journal_syncs

    def test_values(self):
        for ok in (None, "durable", "relaxed", "default", "Relaxed"):
            c = nddd.Client(self.daemon.address, durability=ok)
            self.assertEqual(c.durability, ok)
            c.close()
        for bad in ("fast", "", "sync", 1, True, ["durable"]):
            with self.assertRaises(ValueError, msg=repr(bad)):
                nddd.Client(self.daemon.address, durability=bad)
        c = self.client
        with self.assertRaises(ValueError):
            c.submit_urls(["http://example.com/"], durability="fast")
        with self.assertRaises(ValueError):
            c.delete_url("http://example.com/", durability=0)
        # Refused before anything was sent.
        self.assertFalse(c.check_url("http://example.com/").seen)

    def test_client_default_and_per_call(self):
        urls = ["http://dur.example/%d" % i for i in range(20)]
        relaxed = nddd.Client(self.daemon.address, durability="relaxed")
        self.addCleanup(relaxed.close)
        other = self.client

        before = self.syncs()
        r = relaxed.submit_urls(urls[:10])
        self.assertTrue(all(x.new for x in r))
        # Answered, and seen at once on another connection, unsynced.
        self.assertTrue(all(x.seen for x in other.check_urls(urls[:10])))
        self.assertTrue(relaxed.submit_url(urls[10]).new)
        self.assertTrue(relaxed.delete_url(urls[10]).deleted)
        self.assertFalse(other.check_url(urls[10]).seen)
        self.assertEqual(self.syncs(), before)
        # A call may ask for more.
        self.assertTrue(relaxed.submit_url(urls[11],
                                           durability="durable").new)
        after = self.syncs()
        self.assertGreater(after, before)
        # Or, from a durable client, for less.
        durable = nddd.Client(self.daemon.address, durability="durable")
        self.addCleanup(durable.close)
        self.assertTrue(all(x.new for x in durable.submit_urls(
            urls[12:16], durability="relaxed")))
        self.assertEqual(durable.delete_urls(urls[12:14],
                                             durability="relaxed")[0].count,
                         1)
        self.assertEqual(self.syncs(), after)
        self.assertTrue(durable.submit_url(urls[16]).new)
        self.assertGreater(self.syncs(), after)
        # The daemon's default here is durable (sync = full).
        after = self.syncs()
        self.assertTrue(other.submit_url(urls[17]).new)
        self.assertGreater(self.syncs(), after)
        self.assertEqual([x.count for x in other.check_urls(urls)],
                         [1] * 10 + [0, 1, 0, 0, 1, 1, 1, 1, 0, 0])


class TestNamespaces(DaemonTest):
    def test_independent_sets(self):
        c = self.client
        url = "http://ns.example/a"
        self.assertTrue(c.submit_url(url).new)
        self.assertFalse(c.check_url(url, namespace="crawl-1").seen)
        self.assertTrue(c.submit_url(url, namespace="crawl-1").new)
        crawl = nddd.Client(self.daemon.address, namespace="crawl-1")
        self.addCleanup(crawl.close)
        self.assertEqual(crawl.namespace, "crawl-1")
        self.assertEqual(crawl.submit_urls([url])[0].count, 2)
        self.assertEqual(crawl.check_url(url, namespace="").count, 1)
        self.assertEqual(crawl.delete_url(url).count, 2)
        self.assertTrue(c.check_url(url).seen)
        self.assertFalse(crawl.check_url(url).seen)
        # Digests go to the namespace too.
        digests = nddd.Client(self.daemon.address, namespace="crawl-2",
                              digests=True)
        self.addCleanup(digests.close)
        self.assertTrue(digests.submit_url(url).new)
        self.assertEqual(c.check_url(url, namespace="crawl-2").count, 1)

        s = c.stats()
        self.assertEqual(s.namespaces[0], nddd.Namespace("", 1, 0))
        names = {ns.name: ns for ns in s.namespaces}
        self.assertEqual(names["crawl-1"].urls, 0)
        self.assertEqual(names["crawl-2"].urls, 1)
        self.assertEqual(s.urls, 2)
        self.assertEqual((s.urls_dropping, s.urls_expired), (0, 0))

    def test_ttl_and_times(self):
        c = self.client
        url = "http://ttl.example/a"
        r = c.submit_url(url)
        self.assertEqual((r.first_seen_ms, r.first_seen, r.expires), (0, None,
                                                                      None))
        r = c.check_url(url, with_times=True)
        self.assertGreater(r.first_seen_ms, 0)
        self.assertIsNone(r.expires)            # no time to live
        never = c.check_url("http://ttl.example/never", with_times=True)
        self.assertEqual((never.count, never.first_seen_ms,
                          never.last_seen_ms, never.expires_ms), (0, 0, 0, 0))

        before = datetime.now(timezone.utc)
        first = c.submit_url(url, namespace="short", ttl=2, with_times=True)
        self.assertTrue(first.new)
        self.assertEqual(first.first_seen.tzinfo, timezone.utc)
        # The daemon's clock is this machine's.
        self.assertLess(abs(first.first_seen - before), timedelta(seconds=5))
        self.assertEqual(first.last_seen, first.first_seen)
        self.assertGreaterEqual(first.expires - first.first_seen,
                                timedelta(seconds=2))
        self.assertLessEqual(first.expires - first.first_seen,
                             timedelta(seconds=3))
        # A duplicate, with a time to live of its own, does not postpone
        # the end.
        time.sleep(0.02)
        r = c.submit_url(url, namespace="short", ttl=1000, with_times=True)
        self.assertEqual(r.count, 2)
        self.assertEqual((r.first_seen, r.expires),
                         (first.first_seen, first.expires))
        self.assertGreater(r.last_seen, first.first_seen)
        # Past its time: unseen, with the times it had until the daemon
        # reclaims the record in the background (an idle one at once),
        # then as never recorded.
        deadline = time.monotonic() + (first.expires_ms / 1000
                                       - time.time()) + 5
        while True:
            r = c.check_url(url, namespace="short", with_times=True)
            if not r.seen or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertFalse(r.seen)
        self.assertGreaterEqual(time.time() + 1, first.expires_ms / 1000)
        self.assertIn((r.first_seen_ms, r.expires_ms),
                      [(first.first_seen_ms, first.expires_ms), (0, 0)])
        # New again.
        r = c.submit_url(url, namespace="short", with_times=True)
        self.assertTrue(r.new)
        self.assertGreater(r.first_seen, first.first_seen)
        self.assertIsNone(r.expires)

    def test_set_and_drop(self):
        c = self.client
        urls = ["http://drop.example/%d" % i for i in range(3)]
        self.assertEqual(c.set_namespace("daily", default_ttl=86400),
                         nddd.Namespace("daily", 0, 86400))
        r = c.submit_urls(urls[:2], namespace="daily", with_times=True)
        self.assertEqual(r[0].expires - r[0].first_seen, timedelta(days=1))
        r = c.submit_url(urls[2], namespace="daily", ttl=60, with_times=True)
        self.assertEqual(r.expires - r.first_seen, timedelta(seconds=60))
        names = {ns.name: ns for ns in c.stats().namespaces}
        self.assertEqual(names["daily"], nddd.Namespace("daily", 3, 86400))

        dropped = c.drop_namespace("daily")
        self.assertEqual((dropped.name, dropped.urls), ("daily", 3))
        self.assertFalse(any(x.seen for x in c.check_urls(
            urls, namespace="daily")))
        self.assertTrue(c.submit_url(urls[0], namespace="daily").new)
        self.assertIsNone(c.drop_namespace("nothing"))
        with self.assertRaises(nddd.NdddRequestError) as cm:
            c.drop_namespace("")
        self.assertEqual(cm.exception.code, Code.INVALID_ARGUMENT)
        # The default namespace has settings too.
        self.assertEqual(c.set_namespace("").default_ttl_seconds, 0)
        self.assertEqual(c.set_namespace("", default_ttl=3600).name, "")


class TestForget(DaemonTest):
    """url_forget: a host's URLs, or a prefix's, forgotten in one
    namespace, exactly and durably."""

    def submit(self, urls, namespace):
        r = self.client.submit_urls(urls, namespace=namespace)
        self.assertTrue(all(x.new for x in r), r)

    def counts(self, urls, namespace):
        return [x.count for x in self.client.check_urls(
            urls, namespace=namespace)]

    def assert_kept(self, urls, namespace):
        counts = self.counts(urls, namespace)
        self.assertTrue(all(n > 0 for n in counts),
                        list(zip(urls, counts)))

    def assert_forgotten(self, urls, namespace):
        self.assertEqual(self.counts(urls, namespace), [0] * len(urls),
                         urls)

    def assert_consistent(self):
        # nddctl verify: the filter's counters recomputed from the store.
        status, out = self.daemon.nddctl("verify")
        self.assertEqual(status, 0, out)

    def test_forget_host_subdomains_and_lookalike(self):
        c = self.client
        apex = ["http://example.com/x", "https://example.com/y",
                "http://example.com:8080/z"]
        subs = ["http://www.example.com/a", "https://a.b.example.com/b"]
        others = ["http://badexample.com/x", "http://www.badexample.com/x",
                  "http://example.com.evil.org/x", "http://example.org/x"]
        self.submit(apex + subs + others, "crawl-1")
        self.submit(apex, "")
        # A duplicate is still one URL to forget.
        self.assertEqual(c.submit_url(apex[0], namespace="crawl-1").count, 2)

        # The host alone, whatever the scheme or port; a store made by
        # this nddd has every URL in its index.
        n = c.forget_host("example.com", subdomains=False,
                          namespace="crawl-1")
        self.assertEqual(n, len(apex))
        self.assertTrue(n.complete)
        self.assert_forgotten(apex, "crawl-1")
        self.assert_kept(subs + others, "crawl-1")
        self.assert_kept(apex, "")
        self.assertEqual(c.forget_host("example.com", namespace="crawl-1"),
                         0)

        # With its subdomains, never a look-alike nor another namespace.
        self.assertEqual(c.forget_host("example.com", subdomains=True,
                                       namespace="crawl-1"), len(subs))
        self.assert_forgotten(apex + subs, "crawl-1")
        self.assert_kept(others, "crawl-1")
        self.assert_kept(apex, "")
        self.assertEqual(c.forget_host("example.com", subdomains=True,
                                       namespace="crawl-1"), 0)
        names = {ns.name: ns for ns in c.stats().namespaces}
        self.assertEqual(names["crawl-1"].urls, len(others))
        self.assertEqual(names[""].urls, len(apex))
        self.assert_consistent()

        # Durable once answered: a crash does not bring them back.
        self.daemon.kill()
        self.daemon.start()
        self.assert_forgotten(apex + subs, "crawl-1")
        self.assert_kept(others, "crawl-1")
        self.assert_kept(apex, "")
        self.assert_consistent()
        # Forgotten, so new again.
        self.assertTrue(c.submit_url(apex[0], namespace="crawl-1").new)
        # The default namespace, by the client's namespace.
        self.assertEqual(c.forget_host("example.com"), len(apex))
        self.assert_forgotten(apex, "")
        self.assert_consistent()

    def test_forget_prefix(self):
        c = self.client
        blog = ["http://example.com/blog/", "http://example.com/blog/a",
                "http://example.com/blog/a/b?q=1"]
        others = ["http://example.com/blog2", "http://example.com/blog2/x",
                  "https://example.com/blog/x", "http://example.com/",
                  "http://www.example.com/blog/a",
                  "http://example.com:8080/blog/a"]
        self.submit(blog + others, "")
        self.submit(blog, "crawl-1")

        self.assertEqual(c.forget_prefix("http://example.com/blog/"),
                         len(blog))
        self.assert_forgotten(blog, "")
        self.assert_kept(others, "")
        self.assert_kept(blog, "crawl-1")
        self.assertEqual(c.forget_prefix("http://example.com/blog/"), 0)
        # The prefix is canonicalized as a submitted URL is.
        self.assertEqual(c.forget_prefix(b"HTTP://EXAMPLE.COM:80/blog/",
                                         namespace="crawl-1"), len(blog))
        self.assert_forgotten(blog, "crawl-1")
        self.assert_kept(others, "")
        self.assert_consistent()

    def test_forget_bad_input(self):
        c = self.client
        url = "http://example.com/x"
        self.submit([url], "crawl-1")

        def refused(**fields):
            req = pb.Request()
            req.url_forget.SetInParent()
            for name, value in fields.items():
                setattr(req.url_forget, name, value)
            with self.assertRaises(nddd.NdddRequestError) as cm:
                c._call(req)
            self.assertEqual(cm.exception.code, Code.INVALID_ARGUMENT,
                             fields)

        # Exactly one of host and prefix.
        refused(namespace="crawl-1", host="example.com",
                prefix=b"http://example.com/")
        refused(namespace="crawl-1")
        refused(namespace="crawl-1", subdomains=True)
        # A prefix that is not a URL nddd takes.
        for bad in ("not a url", "mailto:someone@example.com",
                    "http:///nohost", "http://exa mple.com/",
                    b"http://example.com/\x00x"):
            with self.assertRaises(nddd.NdddRequestError, msg=bad) as cm:
                c.forget_prefix(bad, namespace="crawl-1")
            self.assertEqual(cm.exception.code, Code.INVALID_ARGUMENT)
        # A namespace name nddd refuses (the client refuses it first).
        refused(namespace="a b", host="example.com")
        refused(namespace="x" * 65, prefix=b"http://example.com/")
        with self.assertRaises(ValueError):
            c.forget_host("example.com", namespace="a b")
        # A namespace that does not exist holds nothing, and is not made.
        self.assertEqual(c.forget_host("example.com", subdomains=True,
                                       namespace="nothing"), 0)
        self.assertEqual(c.forget_prefix("http://example.com/",
                                         namespace="nothing"), 0)
        self.assertNotIn("nothing",
                         [ns.name for ns in c.stats().namespaces])
        self.assertEqual(c.check_url(url, namespace="crawl-1").count, 1)


class TestForgetWithoutIndex(DaemonTest):
    extra_conf = "[urls]\nhost_index = no"

    def test_forget_refused_without_host_index(self):
        c = self.client
        url = "http://example.com/x"
        self.assertTrue(c.submit_url(url).new)
        for forget in (lambda: c.forget_host("example.com"),
                       lambda: c.forget_prefix("http://example.com/")):
            with self.assertRaises(nddd.NdddRequestError) as cm:
                forget()
            self.assertEqual(cm.exception.code, Code.FAILED_PRECONDITION)
        self.assertTrue(c.check_url(url).seen)


class TestBulk(DaemonTest):
    """Bulk requests (libnddd's, through ctypes) answer as the online
    calls do, in input order, also spilled and in a namespace; a lost
    daemon is a connection error carrying what was answered."""

    def test_same_as_online(self):
        urls = real_urls()[:20000] + INVALID_URLS
        rng = random.Random(7)
        c = nddd.Client(self.daemon.address, batch_size=500, window=4)
        self.addCleanup(c.close)
        half = urls[::2]
        # Submits: as a second daemon's online ones, one batch after the
        # other (a URL given twice: new, then a duplicate).
        ref_daemon = harness.Daemon()
        self.addCleanup(ref_daemon.cleanup)
        ref_daemon.start()
        ref = nddd.Client(ref_daemon.address, batch_size=500, window=1)
        self.addCleanup(ref.close)
        one = nddd.Client(self.daemon.address, batch_size=500, window=1)
        self.addCleanup(one.close)
        subs = one.submit_urls_bulk(half + half[:100], memory=1 << 16)
        self.assertGreater(subs.spilled, 0)
        self.assertEqual([(r.count, r.error) for r in subs],
                         [(r.count, r.error) for r in
                          ref.submit_urls(half + half[:100])])
        self.assertTrue(all(isinstance(r, nddd.SubmitResult) for r in subs))
        self.assertEqual(sum(1 for r in subs if r.new), len(
            [r for r in ref.check_urls(half) if r.seen]))
        asked = urls + ["http://bulk.example/never"]
        rng.shuffle(asked)
        for ns in ("", "crawl"):
            online = c.check_urls(asked, namespace=ns)
            bulk = c.check_urls_bulk(asked, namespace=ns, memory=1 << 16)
            self.assertEqual(len(bulk), len(online))
            self.assertEqual([(r.count, r.error) for r in bulk],
                             [(r.count, r.error) for r in online])
            self.assertTrue(all(isinstance(r, nddd.CheckResult)
                                for r in bulk))
            bulk.close()
        gone = c.delete_urls_bulk(half[:10])
        self.assertEqual([r.deleted for r in gone],
                         [r.error is None for r in subs[:10]])

    def test_connection_lost(self):
        c = nddd.Client(self.daemon.address, batch_size=100, window=1)
        self.addCleanup(c.close)
        urls = ["http://lost.example/%d" % i for i in range(50000)]

        def stop(done, total):
            if done >= 1000:
                self.daemon.kill()  # at once; later calls do nothing
        with self.assertRaises(nddd.NdddConnectionError) as e:
            c.submit_urls_bulk(urls, progress=stop)
        self.assertTrue(e.exception.sent)
        results = e.exception.results
        self.assertEqual(len(results), len(urls))
        codes = set(r.error.code if r.error else 0 for r in results)
        self.assertIn(0, codes)
        self.assertIn(nddd.Code.UNAVAILABLE, codes)


class TestDigests(DaemonTest):
    def setUp(self):
        super().setUp()
        # A second daemon, told the same by URL: the reference.
        self.ref_daemon = harness.Daemon()
        self.addCleanup(self.ref_daemon.cleanup)
        self.ref_daemon.start()

    def assertSame(self, got, want):
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            self.assertEqual((g.url, g.count, g.error), (w.url, w.count,
                                                          w.error))
            self.assertIs(type(g), type(w))

    def test_same_as_urls(self):
        urls = real_urls()
        set1 = urls[:len(urls) // 2] + INVALID_URLS
        set2 = urls[len(urls) // 2:]
        every = set1 + set2
        dig = nddd.Client(self.daemon.address, digests=True, batch_size=97,
                          window=1)
        plain = nddd.Client(self.daemon.address, batch_size=97, window=1)
        ref = nddd.Client(self.ref_daemon.address, batch_size=97, window=1)
        for c in (dig, plain, ref):
            self.addCleanup(c.close)

        # Digests in, URLs out; URLs in, digests out, over both kinds.
        self.assertSame(dig.submit_urls(set1), ref.submit_urls(set1))
        want = ref.check_urls(every)
        self.assertSame(plain.check_urls(every), want)
        self.assertGreater(sum(1 for x in want if x.error), 1000)
        self.assertGreater(sum(1 for x in want if x.ok and not x.seen),
                           5000)
        self.assertSame(plain.submit_urls(set2), ref.submit_urls(set2))
        want = ref.submit_urls(set1)
        self.assertSame(plain.submit_urls(set1), want)
        self.assertTrue(all(x.duplicate for x in want if x.ok))
        self.assertSame(dig.check_urls(every), ref.check_urls(every))
        self.assertSame(dig.delete_urls(set2[::3]),
                        ref.delete_urls(set2[::3]))
        self.assertSame(dig.submit_urls(set2[::2], durability="relaxed"),
                        ref.submit_urls(set2[::2]))
        want = ref.check_urls(every)
        self.assertSame(dig.check_urls(every), want)
        self.assertSame(plain.check_urls(every), want)
        self.assertEqual(dig.submit_urls([]), [])
        for url, r in zip(INVALID_URLS, dig.check_urls(INVALID_URLS)):
            self.assertEqual(r.error.code, Code.INVALID_ARGUMENT, url)
            self.assertTrue(r.error.message, url)
        self.assertEqual(dig.stats().urls, ref.stats().urls)

    def test_invalid_urls_answered_here(self):
        # Batches of invalid URLs only are not sent at all: the daemon
        # counts no check.
        dig = nddd.Client(self.daemon.address, digests=True, batch_size=2)
        self.addCleanup(dig.close)
        r = dig.check_urls(["nope", "data:,x", "http://ok.example/",
                            "mailto:a@b"])
        self.assertEqual([x.error.message if x.error else None for x in r],
                         ["not an absolute URL",
                          "scheme is not http, https or ftp", None,
                          "scheme is not http, https or ftp"])
        self.assertEqual(r[0].url, "nope")
        self.assertIsInstance(r[0], nddd.CheckResult)
        self.assertEqual(dig.stats().checks, 1)
        self.assertEqual(dig.submit_url("nope").error.code,
                         Code.INVALID_ARGUMENT)

    def test_canon_fetched_per_connection(self):
        # The daemon behind the address changes its canonicalization
        # (another data directory): the client asks again.
        port = self.ref_daemon.port
        dig = nddd.Client(self.ref_daemon.address, digests=True)
        self.addCleanup(dig.close)
        tracked = "http://t.example/a?utm_source=x&q=1"
        self.assertTrue(dig.submit_url(tracked).new)
        self.assertFalse(dig.check_url("http://t.example/a?q=1").seen)
        self.ref_daemon.cleanup()
        self.ref_daemon = harness.Daemon("[urls]\nstrip_tracking = yes\n",
                                         port=port)
        self.addCleanup(self.ref_daemon.cleanup)
        self.ref_daemon.start()
        self.assertTrue(dig.submit_url(tracked).new)
        self.assertTrue(dig.check_url("http://t.example/a?q=1").seen)
        self.assertEqual(dig.stats().canon, CANON_PLAIN.replace(
            "strip_tracking=no", "strip_tracking=yes"))

    def test_library_missing(self):
        old_env = os.environ.get("NDDD_LIBRARY")
        old_lib = _canon._lib
        missing = os.path.join(self.daemon.dir, "no", "libnddd.so")
        os.environ["NDDD_LIBRARY"] = missing
        _canon._lib = None
        try:
            with self.assertRaises(nddd.NdddLibraryError) as cm:
                nddd.Client(self.daemon.address, digests=True)
            self.assertIn(missing, str(cm.exception))
            self.assertIn("NDDD_LIBRARY", str(cm.exception))
            self.assertIsInstance(cm.exception, ImportError)
            # Without digests, no library is needed.
            with nddd.Client(self.daemon.address) as c:
                self.assertTrue(c.submit_url("http://lib.example/").new)
        finally:
            _canon._lib = old_lib
            if old_env is None:
                del os.environ["NDDD_LIBRARY"]
            else:
                os.environ["NDDD_LIBRARY"] = old_env

    def test_canon_direct(self):
        k = _canon.Canon(CANON_PLAIN)
        d, causes = k.digests([b"HTTP://Example.COM:80/a/./b#top",
                               b"nope", b"http://example.com/a/b"])
        import hashlib
        self.assertEqual(d[0], hashlib.md5(b"http://example.com/a/b")
                         .digest())
        self.assertEqual(d[0], d[2])
        self.assertEqual(causes, [None, "not an absolute URL", None])
        for bad in ("urlcanon/999 strip_session_ids=no strip_tracking=no "
                    "sort_query=no", "", "md5"):
            with self.assertRaises(ValueError):
                _canon.Canon(bad)


class TestDocuments(DaemonTest):
    STORY = "Oil prices rose sharply on Monday after the cartel cut output"

    def test_submit_get_query_delete(self):
        c = self.client
        a = c.submit_doc("http://news.example/a", self.STORY)
        self.assertEqual((a.doc_id, a.group, a.near, a.created),
                         (1, 1, [], True))
        self.assertEqual(len(a.simhash_hex), 16)
        b = c.submit_doc("http://other.example/b",
                         "<p>Oil prices rose <b>sharply</b> on Monday "
                         "after the cartel cut output</p>", html=True)
        self.assertEqual((b.doc_id, b.group), (2, 1))
        self.assertEqual([(n.doc_id, n.url, n.distance) for n in b.near],
                         [(1, "http://news.example/a", 0)])
        self.assertEqual(b.simhash, a.simhash)
        # What a page would join, storing nothing.
        w = c.submit_doc("http://third.example/", self.STORY.upper(),
                         query_only=True)
        self.assertEqual((w.doc_id, w.group), (0, 1))
        self.assertEqual((w.stored_id, w.created_ms), (0, 0))
        self.assertIsNone(c.get_doc("http://third.example/"))
        # A query under a stored URL names the document a submit keeps.
        w = c.submit_doc("http://other.example/b", self.STORY,
                         query_only=True)
        self.assertEqual((w.doc_id, w.stored_id, w.created_ms),
                         (0, 2, b.created_ms))
        self.assertGreater(b.created_ms, 0)
        self.assertEqual(c.submit_doc("http://other.example/b",
                                      self.STORY).created_ms, b.created_ms)
        g = c.get_doc("HTTP://NEWS.EXAMPLE:80/a")
        self.assertEqual((g.doc_id, g.group), (1, 1))
        self.assertEqual([n.doc_id for n in g.near], [2])
        q = c.query_doc(self.STORY)
        self.assertEqual([n.doc_id for n in q.near], [1, 2])
        self.assertEqual(c.query_doc(simhash=a.simhash, k=0).near_total, 2)
        self.assertTrue(c.delete_doc("http://news.example/a"))
        self.assertFalse(c.delete_doc("http://news.example/a"))
        self.assertEqual([n.doc_id for n in c.query_doc(self.STORY).near],
                         [2])
        with self.assertRaises(nddd.NdddRequestError) as cm:
            c.query_doc(simhash=1, k=9)
        self.assertEqual(cm.exception.code, Code.INVALID_ARGUMENT)
        with self.assertRaises(nddd.NdddRequestError) as cm:
            c.submit_doc("http://empty.example/", "the and of")
        self.assertEqual(cm.exception.code, Code.EMPTY_DOCUMENT)
        st = c.stats()
        self.assertEqual((st.docs, st.near.k, st.near.tables), (1, 3, 4))
        self.assertEqual(st.accel.backend, "cpu")

    def test_namespaces(self):
        # The same story in three namespaces: new in each, its neighbours
        # and group its namespace's; the call's namespace, else the
        # client's.
        c = self.client
        a = c.submit_doc("http://news.example/a", self.STORY)
        wire = nddd.Client(self.daemon.address, timeout=10,
                           namespace="wire")
        self.addCleanup(wire.close)
        w = wire.submit_doc("http://news.example/a", self.STORY)
        self.assertTrue(w.created)
        self.assertNotEqual(w.doc_id, a.doc_id)
        self.assertEqual((w.group, w.near), (w.doc_id, []))
        x = c.submit_doc("http://news.example/a", self.STORY,
                         namespace="extra")
        self.assertTrue(x.created)
        self.assertEqual(x.near, [])
        # A near copy in wire, in bulk: wire's story only.
        r = c.submit_docs([("http://other.example/b", self.STORY.upper())],
                          namespace="wire")
        self.assertEqual([n.doc_id for n in r[0].near], [w.doc_id])
        self.assertEqual(r[0].group, w.doc_id)
        q = c.query_docs([("http://q.example/", self.STORY)],
                         namespace="extra")
        self.assertEqual((q[0].doc_id, q[0].group), (0, x.doc_id))
        self.assertEqual([n.doc_id for n in
                          wire.query_doc(simhash=a.simhash, k=0).near],
                         [w.doc_id, r[0].doc_id])
        self.assertEqual([n.doc_id for n in c.query_doc(self.STORY).near],
                         [a.doc_id])
        self.assertEqual(c.get_doc("http://news.example/a",
                                   namespace="wire").doc_id, w.doc_id)
        self.assertIsNone(c.get_doc("http://other.example/b"))
        self.assertIsNone(wire.get_doc("http://news.example/a",
                                       namespace="nowhere"))
        self.assertEqual(wire.get_doc("http://news.example/a",
                                      namespace="").doc_id, a.doc_id)
        names = {ns.name: ns for ns in c.stats().namespaces}
        self.assertEqual((names[""].docs, names["wire"].docs,
                          names["extra"].docs), (1, 2, 1))
        self.assertEqual(names["wire"], nddd.Namespace("wire", 0, 0, 2))
        self.assertTrue(c.delete_doc("http://news.example/a",
                                     namespace="extra"))
        self.assertFalse(c.delete_doc("http://news.example/a",
                                      namespace="extra"))
        self.assertIsNotNone(c.get_doc("http://news.example/a"))
        self.assertIsNotNone(wire.get_doc("http://news.example/a"))
        # Dropping a namespace forgets its documents: counted in the
        # answer, gone at once, then in the background.
        dropped = c.drop_namespace("wire")
        self.assertEqual((dropped.urls, dropped.docs), (0, 2))
        self.assertIsNone(wire.get_doc("http://news.example/a"))
        self.assertEqual(c.drop_namespace("extra"),
                         nddd.Namespace("extra", 0, 0, 0))
        self.assertIsNone(c.drop_namespace("extra"))
        deadline = time.monotonic() + 20
        while c.stats().docs_dropping and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual((c.stats().docs, c.stats().docs_dropping), (1, 0))
        # A name nddd would refuse is refused here first.
        for bad in ("a b", "x" * 65):
            with self.assertRaises(ValueError):
                c.submit_doc("http://news.example/a", self.STORY,
                             namespace=bad)
            with self.assertRaises(ValueError):
                c.get_doc("http://news.example/a", namespace=bad)
            with self.assertRaises(ValueError):
                c.submit_docs([("http://news.example/a", self.STORY)],
                              namespace=bad)

    def test_submit_docs_in_bulk(self):
        docs = [("http://bulk.example/%d" % i,
                 "story %d about %s" % (i % 10, "weather" if i % 2 else
                                        "markets"))
                for i in range(500)]
        docs.insert(100, ("http://bulk.example/empty", "the"))
        docs.insert(200, ("not a url", "some words"))
        r = self.client.submit_docs(docs)
        self.assertEqual([x.url for x in r], [d[0] for d in docs])
        self.assertEqual(r[100].error.code, Code.EMPTY_DOCUMENT)
        self.assertEqual(r[200].error.code, Code.INVALID_ARGUMENT)
        ok = [x for x in r if x.ok]
        self.assertEqual(len(ok), 500)
        # Same text, same story.
        by_text = {}
        for d, x in zip(docs, r):
            if x.ok:
                by_text.setdefault(d[1], set()).add(x.group)
        self.assertTrue(all(len(g) == 1 for g in by_text.values()))

    def test_submit_docs_in_batches_as_one_at_a_time(self):
        # doc_batch requests of 64, one in flight, get what the same
        # documents sent one doc_submit at a time to another daemon get:
        # ids, fingerprints, groups (in order), and the errors.
        bodies = reuters_bodies(400)
        docs = []
        for i in range(1000):
            url = "http://r.example/%d" % i
            if i % 89 == 10:
                docs.append((url, "the and of"))
            elif i % 101 == 20:
                docs.append(("nope/%d" % i, bodies[i % 400]))
            elif i % 7 == 3:
                docs.append((url, "<p>%s</p>" % bodies[i % 400].decode(
                    "utf-8", "replace"), True))
            elif i % 2:
                docs.append((url, bodies[i % 400]))
            else:
                docs.append((url.encode(), bodies[i % 400].decode(
                    "utf-8", "replace")))
        other = harness.Daemon()
        self.addCleanup(other.cleanup)
        other.start()
        expect = []
        with nddd.Client(other.address, timeout=10) as one:
            for d in docs:
                try:
                    expect.append(one.submit_doc(
                        d[0], d[1], html=len(d) > 2 and d[2]))
                except nddd.NdddRequestError as e:
                    expect.append(e.code)
        with nddd.Client(self.daemon.address, timeout=10, window=1,
                         doc_batch_size=64) as c:
            got = c.submit_docs(iter(docs))
        self.assertEqual([x.url for x in got], [d[0] for d in docs])
        for i, (g, e) in enumerate(zip(got, expect)):
            if isinstance(e, int):
                self.assertEqual(g.error.code, e, i)
                self.assertEqual(e, Code.EMPTY_DOCUMENT if i % 89 == 10
                                 else Code.INVALID_ARGUMENT)
                self.assertEqual((g.doc_id, g.simhash), (0, 0))
            else:
                self.assertIsNone(g.error, i)
                self.assertEqual((g.doc_id, g.simhash, g.group, g.created),
                                 (e.doc_id, e.simhash, e.group, e.created),
                                 i)
                self.assertEqual(g.near_total, e.near_total)
                # (Two daemons: the same neighbours, stored at other
                # times.)
                self.assertEqual(
                    [dataclasses.replace(n, created_ms=0) for n in g.near],
                    [dataclasses.replace(n, created_ms=0)
                     for n in e.near[:len(g.near)]])
                self.assertTrue(all(n.created_ms > 0 for n in g.near))
        # Pipelined batches (8 in flight) of queries: the same
        # fingerprints, nothing stored.
        docs_before = self.client.stats().docs
        q = self.client.query_docs(docs)
        self.assertEqual([x.simhash for x in q], [
            0 if isinstance(e, int) else e.simhash for e in expect])
        self.assertTrue(all(x.doc_id == 0 for x in q))
        self.assertEqual(self.client.stats().docs, docs_before)

    def test_verified_and_hamming_answers(self):
        # A story (a), its exact copy (c) and its first two thirds (b),
        # 7 bits away: the verified answer (the daemon's default) finds b
        # by its shingles, most similar first; the Hamming answer (match,
        # or a query's k) does not, and carries no estimates.
        c = self.client
        body = reuters_bodies(1)[0]
        cut = b" ".join(body.split()[:len(body.split()) * 2 // 3])
        a = c.submit_doc("http://news.example/a", body)
        self.assertEqual((a.content, a.sketch), ("text", b""))
        b = c.submit_doc("http://news.example/b", cut, with_sketch=True)
        self.assertEqual(len(b.near), 1)
        n = b.near[0]
        self.assertEqual((n.doc_id, n.group, n.verified), (1, 1, True))
        self.assertGreater(n.distance, 3)
        self.assertTrue(0.5 < n.resemblance < 1 and n.containment == 1.0,
                        n)
        self.assertEqual(b.group, 1)
        # The sketch the daemon sent is the local engine's, and estimates
        # the same as the daemon did.
        e = Engine(stopwords=os.path.join(harness.ROOT, "conf",
                                          "stopwords.txt"))
        pa, pb = e.print(body), e.print(cut)
        self.assertEqual((b.simhash, b.sketch), (pb.simhash, pb.sketch))
        self.assertEqual(sketch_compare(pb.sketch, pa.sketch),
                         (n.resemblance, n.containment))
        h = c.submit_doc("http://news.example/h", cut, match="hamming",
                         query_only=True)
        self.assertEqual([(x.doc_id, x.distance, x.resemblance,
                           x.containment, x.verified) for x in h.near],
                         [(2, 0, 0.0, 0.0, False)])
        cc = c.submit_docs([("http://news.example/c", body)])[0]
        self.assertEqual([(x.doc_id, x.distance, x.resemblance,
                           x.containment, x.verified) for x in cc.near],
                         [(1, 0, 1.0, 1.0, True), (2, n.distance,
                                                   n.resemblance,
                                                   n.containment, True)])
        # get_doc: its neighbours before and after it, by either answer.
        g = c.get_doc("http://news.example/a")
        self.assertEqual([x.doc_id for x in g.near], [3, 2])
        g = c.get_doc("http://news.example/a", match="hamming")
        self.assertEqual([(x.doc_id, x.verified, x.resemblance)
                          for x in g.near], [(3, False, 0.0)])
        # Queries: by body, by print (the same answer), by fingerprint
        # and by k (the Hamming answer).
        q = c.query_doc(cut)
        self.assertEqual([x.doc_id for x in q.near], [2, 1, 3])
        self.assertEqual(q.content, "text")
        self.assertEqual(c.query_doc(simhash=b.simhash, sketch=b.sketch), q)
        self.assertEqual(c.query_doc(cut, with_sketch=True).sketch,
                         b.sketch)
        for kw in ({"k": 3}, {"match": "hamming"}):
            q = c.query_doc(cut, **kw)
            self.assertEqual([(x.doc_id, x.distance, x.verified)
                              for x in q.near], [(2, 0, False)], kw)
        q = c.query_doc(simhash=a.simhash)
        self.assertEqual([(x.doc_id, x.verified) for x in q.near],
                         [(1, False), (3, False)])
        self.assertEqual(c.query_doc(body, k=0).near_total, 2)
        with self.assertRaises(ValueError):
            c.query_doc(body, k=3, match="verified")
        with self.assertRaises(ValueError):
            c.query_doc(simhash=a.simhash, match="verified")
        with self.assertRaises(ValueError):
            c.submit_doc("http://news.example/x", body, match="nearest")
        # A client whose answer is the Hamming one, and a call's own.
        with nddd.Client(self.daemon.address, match="hamming") as hc:
            r = hc.query_docs([("http://q.example/", cut)])[0]
            self.assertEqual([x.doc_id for x in r.near], [2])
            r = hc.query_docs([("http://q.example/", cut)],
                              match="verified")[0]
            self.assertEqual([x.doc_id for x in r.near], [2, 1, 3])
        # What a page is judged by.
        path = os.path.join(TEST_DATA, "text_corpora", "l3s_gn1_html",
                            "original")
        with open(os.path.join(path, sorted(os.listdir(path))[0]),
                  "rb") as f:
            page = f.read()
        r = c.submit_doc("http://page.example/", page, html=True,
                         query_only=True)
        self.assertEqual(r.content, "main")
        self.assertEqual(r.simhash, e.print(page, "html").simhash)
        r = c.query_docs([("http://page.example/", "<p>Oil prices</p>",
                           True)])[0]
        self.assertEqual(r.content, "whole")
        st = c.stats().near
        self.assertEqual((st.answer, st.html, st.containment,
                          st.resemblance, st.unsketched),
                         ("verified", "main", float32(0.2), float32(0.05),
                          0))
        self.assertGreater(st.candidates, 0)
        self.assertGreater(st.verified, 0)
        self.assertGreater(st.sketch_keys, 0)

    def test_submit_docs_cut_by_bytes(self):
        # A small max_frame: requests are cut by bytes, and a document too
        # large for a frame of its own is answered here, not sent.
        words = " ".join("w%d" % i for i in range(3000)).encode()
        docs = [("http://cut.example/%d" % i, words + b" %d" % i)
                for i in range(20)]
        docs.insert(5, ("http://cut.example/big", b"big " * 20000))
        with nddd.Client(self.daemon.address, max_frame=64 * 1024) as c:
            self.assertEqual(c._doc_limits()[:2], (54, 32 * 1024))
            r = c.submit_docs(docs)
        self.assertEqual(r[5].error.code, Code.RESOURCE_EXHAUSTED)
        self.assertTrue(all(x.ok for i, x in enumerate(r) if i != 5))
        self.assertEqual(self.client.stats().docs, 20)
        self.assertEqual(self.client.submit_docs([]), [])
        with self.assertRaises(TypeError):
            self.client.submit_docs(("http://x.example/", "text"))


def float32(x):
    """x as a 32-bit float holds it (the protocol's float)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def reuters_bodies(n):
    """The first n Reuters-21578 bodies, as bytes."""
    path = os.path.join(TEST_DATA, "text_corpora", "reuters21578",
                        "reut2-000.sgm")
    with open(path, "rb") as f:
        data = f.read()
    bodies = re.findall(rb"<BODY>(.*?)</BODY>", data, re.S)[:n]
    assert len(bodies) == n
    return bodies


class TestTokens(unittest.TestCase):
    READ = "read-token-0123456789"
    WRITE = "write-token-0123456789"
    ADMIN = "admin-token-0123456789"
    # Admin in the namespace crawl-1 only.
    ADMIN_CRAWL = "admin-crawl-1-token-0123456789"

    def setUp(self):
        self.daemon = harness.Daemon()
        self.addCleanup(self.daemon.cleanup)
        tokens = os.path.join(self.daemon.dir, "tokens")
        with open(tokens, "w") as f:
            f.write("%s read\n%s write\n%s admin\n"
                    "%s admin namespaces=crawl-1\n"
                    % (self.READ, self.WRITE, self.ADMIN, self.ADMIN_CRAWL))
        with open(self.daemon.conf_path, "a") as f:
            f.write("\n[auth]\ntokens_file = %s\n" % tokens)
        self.daemon.start()

    def test_digests_with_a_read_token(self):
        # The canonicalization is part of the stats a reader sees.
        with nddd.Client(self.daemon.address, token=self.WRITE) as w:
            self.assertTrue(w.submit_url("http://tokens.example/r").new)
        with nddd.Client(self.daemon.address, token=self.READ,
                         digests=True) as reader:
            self.assertTrue(reader.check_url("HTTP://TOKENS.EXAMPLE:80/r")
                            .seen)
            self.assertEqual(reader.stats().canon, CANON_PLAIN)

    def test_doc_batches_and_roles(self):
        # A batch that stores needs the write role: refused whole, each
        # document says so; queries only need read.
        docs = [("http://tokens.example/d%d" % i, "story %d words" % i)
                for i in range(5)]
        with nddd.Client(self.daemon.address, token=self.READ) as reader:
            r = reader.submit_docs(docs)
            self.assertTrue(all(x.error.code == Code.PERMISSION_DENIED
                                for x in r))
            self.assertTrue(all(x.ok for x in reader.query_docs(docs)))
        with nddd.Client(self.daemon.address, token=self.WRITE) as writer:
            self.assertTrue(all(x.ok and x.created
                                for x in writer.submit_docs(docs)))

    def test_roles(self):
        url = "http://tokens.example/"
        with nddd.Client(self.daemon.address) as anon:
            with self.assertRaises(nddd.NdddRequestError) as cm:
                anon.check_url(url)
            self.assertEqual(cm.exception.code, nddd.Code.PERMISSION_DENIED)
        with nddd.Client(self.daemon.address, token=self.READ) as reader:
            self.assertFalse(reader.check_url(url).seen)
            with self.assertRaises(nddd.NdddRequestError) as cm:
                reader.submit_url(url)
            self.assertEqual(cm.exception.code, nddd.Code.PERMISSION_DENIED)
            self.assertFalse(reader.check_url(url).seen)
        old = os.environ.get("NDDD_TOKEN")
        os.environ["NDDD_TOKEN"] = self.WRITE
        try:
            with nddd.Client(self.daemon.address) as writer:
                self.assertTrue(writer.submit_url(url).new)
                with self.assertRaises(nddd.NdddRequestError) as cm:
                    writer.delete_url(url)
                self.assertEqual(cm.exception.code,
                                 nddd.Code.PERMISSION_DENIED)
        finally:
            if old is None:
                del os.environ["NDDD_TOKEN"]
            else:
                os.environ["NDDD_TOKEN"] = old


    def test_forget_needs_admin(self):
        urls = ["http://example.com/x", "http://www.example.com/y"]
        address = self.daemon.address

        def forgets(client, namespace):
            return (lambda: client.forget_host("example.com",
                                               namespace=namespace),
                    lambda: client.forget_host("example.com", subdomains=True,
                                               namespace=namespace),
                    lambda: client.forget_prefix("http://example.com/",
                                                 namespace=namespace))

        def denied(client, namespace):
            for forget in forgets(client, namespace):
                with self.assertRaises(nddd.NdddRequestError) as cm:
                    forget()
                self.assertEqual(cm.exception.code,
                                 nddd.Code.PERMISSION_DENIED)

        with nddd.Client(address, token=self.WRITE) as writer:
            for ns in ("crawl-1", "crawl-2"):
                self.assertTrue(all(x.new for x in writer.submit_urls(
                    urls, namespace=ns)))
            denied(writer, "crawl-1")
            self.assertEqual([x.count for x in writer.check_urls(
                urls, namespace="crawl-1")], [1, 1])
        with nddd.Client(address, token=self.READ) as reader:
            denied(reader, "crawl-1")
        with nddd.Client(address) as anon:
            denied(anon, "crawl-1")
        # An admin of crawl-1 only is no admin of crawl-2.
        with nddd.Client(address, token=self.ADMIN_CRAWL) as admin:
            denied(admin, "crawl-2")
            self.assertEqual(admin.forget_host("example.com",
                                               namespace="crawl-1"), 1)
        with nddd.Client(address, token=self.ADMIN) as admin:
            self.assertEqual([x.count for x in admin.check_urls(
                urls, namespace="crawl-1")], [0, 1])
            self.assertEqual([x.count for x in admin.check_urls(
                urls, namespace="crawl-2")], [1, 1])
            self.assertEqual(admin.forget_host("example.com", subdomains=True,
                                               namespace="crawl-2"), 2)


class TLSTest(unittest.TestCase):
    """A daemon with a TLS listener beside its plain one, and certificates
    made for the tests (harness.make_certs)."""
    client_ca = False       # require client certificates of the test CA
    extra_tls = ""

    @classmethod
    def setUpClass(cls):
        cls.cert_dir = tempfile.mkdtemp(prefix="nddd-py-certs-")
        cls.path = staticmethod(harness.make_certs(cls.cert_dir))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.cert_dir, ignore_errors=True)

    def setUp(self):
        port = harness.free_port()
        self.tls_address = "127.0.0.1:%d" % port
        conf = ("[tls]\nlisten = %s\ncert = %s\nkey = %s\n"
                % (self.tls_address, self.path("server.pem"),
                   self.path("server.key")))
        if self.client_ca:
            conf += "client_ca = %s\n" % self.path("ca.pem")
        self.daemon = harness.Daemon(conf + self.extra_tls)
        self.addCleanup(self.daemon.cleanup)
        self.daemon.start()

    def tls_client(self, **kw):
        kw.setdefault("ca_file", self.path("ca.pem"))
        c = nddd.Client(self.tls_address, timeout=10, **kw)
        self.addCleanup(c.close)
        return c


class TestTLS(TLSTest):
    def test_round_trip(self):
        c = self.tls_client()
        self.assertTrue(c.tls)
        self.assertIn("(TLS)", repr(c))
        self.assertTrue(c.submit_url("http://tls.example/a").new)
        self.assertEqual(c.submit_docs([("http://tls.example/d",
                                         "a story told over TLS")])[0].doc_id,
                         1)
        # Many batches in flight, in larger frames than a TLS record.
        urls = ["http://tls.example/%d/%s" % (i, "x" * 200)
                for i in range(20000)]
        self.assertTrue(all(r.new for r in c.submit_urls(urls)))
        self.assertTrue(all(r.seen for r in c.check_urls(urls)))
        # The plain listener sees the same data.
        with nddd.Client(self.daemon.address) as plain:
            self.assertTrue(plain.check_url("http://tls.example/a").seen)
        # An SSLContext of the caller's making.
        ctx = ssl.create_default_context(cafile=self.path("ca.pem"))
        c2 = self.tls_client(ca_file=None, ssl_context=ctx)
        self.assertEqual(c2.check_url("http://tls.example/a").count, 1)
        # Idle between calls (the daemon's session tickets come then), and
        # after a restart: the calls go through.
        time.sleep(0.2)
        self.assertEqual(c.stats().urls, 20001)
        self.daemon.stop()
        self.daemon.start()
        self.assertTrue(c.check_url("http://tls.example/a").seen)

    def test_certificate_does_not_verify(self):
        issuer = "unable to get local issuer certificate"
        for kw, says in (
                ({"ca_file": self.path("other.pem")},
                 "against %s: %s" % (self.path("other.pem"), issuer)),
                ({"ca_file": None, "tls": True},
                 "against the system's CAs: %s" % issuer),
                ({"server_hostname": "nddd.example"}, "Hostname mismatch")):
            c = self.tls_client(**kw)
            with self.assertRaises(nddd.NdddConnectionError) as cm:
                c.check_url("http://tls.example/")
            e = cm.exception
            self.assertFalse(e.sent)
            self.assertIn("nddd at %s: its TLS certificate does not verify"
                          % self.tls_address, str(e))
            self.assertIn(says, str(e))
            self.assertFalse(c.connected)

    def test_options(self):
        with self.assertRaises(ValueError) as cm:
            nddd.Client(self.tls_address, ca_file="/nonexistent/ca.pem")
        self.assertIn("/nonexistent/ca.pem", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            nddd.Client(self.tls_address, cert_file=self.path("crawler.pem"),
                        key_file=self.path("intruder.key"))
        self.assertIn("crawler.pem", str(cm.exception))
        with self.assertRaises(ValueError):
            nddd.Client(self.tls_address, key_file=self.path("crawler.key"))
        with self.assertRaises(ValueError):
            nddd.Client(self.tls_address, ca_file=self.path("ca.pem"),
                        ssl_context=ssl.create_default_context())
        self.assertFalse(nddd.Client(self.daemon.address).tls)
        # A plain client at the TLS listener: no answer it can read.
        with nddd.Client(self.tls_address, timeout=2) as c:
            with self.assertRaises(nddd.NdddConnectionError):
                c.stats()


class TestTLSClientCertificates(TLSTest):
    client_ca = True

    def cert(self, name):
        return {"cert_file": self.path(name + ".pem"),
                "key_file": self.path(name + ".key")}

    def test_required_and_given(self):
        c = self.tls_client(**self.cert("crawler"))
        self.assertTrue(c.submit_url("http://certs.example/").new)
        self.assertEqual(c.stats().urls, 1)
        # A key in the certificate's file.
        both = os.path.join(self.cert_dir, "crawler-both.pem")
        with open(both, "w") as f:
            for name in ("crawler.pem", "crawler.key"):
                with open(self.path(name)) as part:
                    f.write(part.read())
        c2 = self.tls_client(cert_file=both)
        self.assertTrue(c2.check_url("http://certs.example/").seen)

    def test_session_resumed(self):
        # With client certificates OpenSSL resumes a session only if the
        # daemon's context has a session id context; the client offers
        # its last session when it connects again.  TLS 1.3 and 1.2.
        ctx12 = ssl.create_default_context(cafile=self.path("ca.pem"))
        ctx12.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx12.load_cert_chain(self.path("crawler.pem"),
                              self.path("crawler.key"))
        for n, kw in enumerate((self.cert("crawler"),
                                {"ca_file": None, "ssl_context": ctx12})):
            c = self.tls_client(**kw)
            url = "http://certs.example/%d/" % n
            self.assertTrue(c.submit_url(url + "0").new)
            self.assertFalse(c._sock.session_reused)
            for i in range(1, 3):
                c.close()
                self.assertTrue(c.submit_url(url + str(i)).new)
                self.assertTrue(c._sock.session_reused)
                self.assertEqual(c._sock.version(),
                                 "TLSv1.2" if n else "TLSv1.3")

    def test_refused_without_or_with_another(self):
        for kw in ({}, self.cert("stranger")):
            c = self.tls_client(**kw)
            # Refused in the handshake (TLS 1.2) or, as TLS 1.3 ends the
            # client's side first, at the first request.
            with self.assertRaises(nddd.NdddConnectionError) as cm:
                c.submit_url("http://certs.example/refused")
            self.assertIn("TLS", str(cm.exception))
            self.assertFalse(c.connected)
        with nddd.Client(self.daemon.address) as plain:
            self.assertFalse(plain.check_url(
                "http://certs.example/refused").seen)


class TestTLSClientNames(TLSTest):
    client_ca = True
    extra_tls = "client_cn = ops, crawler\n"

    def test_listed_or_refused(self):
        c = self.tls_client(cert_file=self.path("crawler.pem"),
                            key_file=self.path("crawler.key"))
        self.assertTrue(c.submit_url("http://names.example/").new)
        c = self.tls_client(cert_file=self.path("intruder.pem"),
                            key_file=self.path("intruder.key"))
        with self.assertRaises(nddd.NdddConnectionError) as cm:
            c.submit_url("http://names.example/intruder")
        # Refused at the first request (TLS 1.3 ends the client's side of
        # the handshake first), mostly with the daemon's "bad certificate"
        # alert; when its close crosses the request on the wire, the reset
        # discards the alert and the client sees the connection end.  The
        # daemon's log says why either way.
        self.assertRegex(str(cm.exception),
                         "TLS .*(bad certificate|EOF occurred|reset)")
        self.assertFalse(c.connected)
        self.assertIn("client certificate 'CN=intruder,O=nddd tests' is "
                      "not one of [tls] client_cn; refused",
                      self.daemon.log())


class TestLimits(DaemonTest):
    extra_conf = "[server]\nmax_batch = 100\nmax_frame = 64K\n"

    def test_batch_over_max_batch(self):
        urls = ["http://example.com/%d" % i for i in range(150)]
        big = nddd.Client(self.daemon.address, batch_size=1000)
        self.addCleanup(big.close)
        with self.assertRaises(nddd.NdddRequestError) as cm:
            big.submit_urls(urls)
        e = cm.exception
        self.assertEqual(e.code, Code.RESOURCE_EXHAUSTED)
        self.assertTrue(e.message)
        self.assertEqual(e.results, [None] * 150)
        # Refused, not carried out; the connection is still good.
        self.assertFalse(big.check_url(urls[0]).seen)
        self.assertEqual(big.stats().urls, 0)
        # Cut to the daemon's max_batch, the same call goes through.
        ok = nddd.Client(self.daemon.address, batch_size=100)
        self.addCleanup(ok.close)
        self.assertTrue(all(x.new for x in ok.submit_urls(urls)))

    def test_refusal_keeps_earlier_batches(self):
        # Long URLs are cut into batches by bytes (under 100 URLs each), the
        # short ones into one batch of 150, which is refused: the results
        # of the batches carried out before are in the exception.
        long = ["http://example.com/%s/%d" % ("x" * 980, i)
                for i in range(300)]
        short = ["http://example.com/%d" % i for i in range(150)]
        c = nddd.Client(self.daemon.address, batch_size=150, window=1,
                        max_frame=64 * 1024)
        self.addCleanup(c.close)
        with self.assertRaises(nddd.NdddRequestError) as cm:
            c.submit_urls(long + short)
        e = cm.exception
        self.assertEqual(e.code, Code.RESOURCE_EXHAUSTED)
        self.assertEqual(len(e.results), 450)
        done = [x for x in e.results if x is not None]
        self.assertGreaterEqual(len(done), 4 * 60)
        self.assertTrue(all(x.new for x in done))
        self.assertEqual(e.results[:len(done)], done)  # the batches before
        self.assertEqual(e.results[len(done):],
                         [None] * (450 - len(done)))
        self.assertEqual(c.stats().urls, len(done))

    def test_frame_over_max_frame(self):
        # 100 URLs of 1,000 bytes: a frame of about 100 KB, over 64K.
        urls = ["http://example.com/%s/%d" % ("x" * 980, i)
                for i in range(100)]
        c = nddd.Client(self.daemon.address, batch_size=100)
        self.addCleanup(c.close)
        with self.assertRaises(nddd.NdddError) as cm:
            c.submit_urls(urls)
        e = cm.exception
        # The daemon answers with id 0 and closes; if the close overtakes
        # the answer, the client sees only the closed connection.
        if isinstance(e, nddd.NdddRequestError):
            self.assertEqual(e.code, Code.RESOURCE_EXHAUSTED)
        else:
            self.assertIsInstance(e, nddd.NdddConnectionError)
        self.assertFalse(c.connected)
        # Told the daemon's max_frame, the client cuts smaller frames.
        c2 = nddd.Client(self.daemon.address, batch_size=100,
                         max_frame=64 * 1024)
        self.addCleanup(c2.close)
        self.assertTrue(all(x.new for x in c2.submit_urls(urls)))
        # And the first client works again on a new connection.
        self.assertTrue(all(x.seen for x in c.check_urls(urls[:10])))


class TestConnections(DaemonTest):
    def test_connection_refused(self):
        port = harness.free_port()
        c = nddd.Client("127.0.0.1:%d" % port, timeout=2)
        with self.assertRaises(nddd.NdddConnectionError) as cm:
            c.submit_urls(["http://example.com/"])
        e = cm.exception
        self.assertFalse(e.sent)
        self.assertIsInstance(e, ConnectionError)
        self.assertEqual(e.address, "127.0.0.1:%d" % port)
        self.assertIn("cannot connect", str(e))

    def test_timeout(self):
        c = nddd.Client(self.daemon.address, timeout=0.3)
        self.addCleanup(c.close)
        self.assertTrue(c.submit_url("http://example.com/").new)
        self.daemon.pause()
        try:
            t0 = time.monotonic()
            with self.assertRaises(nddd.NdddTimeoutError) as cm:
                c.submit_urls(["http://example.com/a", "http://example.com/b"])
            elapsed = time.monotonic() - t0
            e = cm.exception
            self.assertIsInstance(e, TimeoutError)
            self.assertIsInstance(e, nddd.NdddConnectionError)
            self.assertTrue(e.sent)
            self.assertEqual(e.results, [None, None])
            self.assertGreaterEqual(elapsed, 0.3)
            self.assertLess(elapsed, 3)
            self.assertFalse(c.connected)
        finally:
            self.daemon.resume()
        # The next call is on a new connection.  The request sent before
        # the timeout may or may not have been carried out.
        r = c.check_urls(["http://example.com/a", "http://example.com/b"])
        self.assertTrue(all(x.ok and x.count in (0, 1) for x in r))
        # The same for a call of one URL, which has a path of its own.
        self.daemon.pause()
        try:
            t0 = time.monotonic()
            with self.assertRaises(nddd.NdddTimeoutError) as cm:
                c.check_url("http://example.com/a")
            self.assertGreaterEqual(time.monotonic() - t0, 0.3)
            self.assertTrue(cm.exception.sent)
            self.assertEqual(cm.exception.results, [None])
            self.assertFalse(c.connected)
        finally:
            self.daemon.resume()
        self.assertIn(c.check_url("http://example.com/a").count, (0, 1))

    def test_reconnect_after_restart(self):
        c = self.client
        self.assertTrue(c.submit_url("http://example.com/x").new)
        self.assertEqual(self.daemon.stop(), 0)
        # Down: the call cannot connect, nothing was sent.
        with self.assertRaises(nddd.NdddConnectionError) as cm:
            c.check_url("http://example.com/x")
        self.assertFalse(cm.exception.sent)
        self.daemon.start()
        # Up again: the next call connects again, the data survived.
        self.assertEqual(c.submit_url("http://example.com/x").count, 2)

    def test_idle_connection_closed_by_restart(self):
        c = self.client
        self.assertTrue(c.submit_url("http://example.com/y").new)
        self.assertTrue(c.connected)
        self.daemon.stop()
        self.daemon.start()
        # The old connection was closed by the daemon while idle: the call
        # notices before sending and goes through on a new one.
        self.assertEqual(c.submit_url("http://example.com/y").count, 2)
        self.assertEqual(c.stats().connections, 1)

    def test_connection_lost_during_call(self):
        c = nddd.Client(self.daemon.address, timeout=30)
        self.addCleanup(c.close)
        c.connect()
        self.daemon.pause()
        caught = []

        def call():
            try:
                c.submit_urls(["http://example.com/lost"])
            except Exception as e:
                caught.append(e)

        t = threading.Thread(target=call)
        t.start()
        time.sleep(0.3)
        self.daemon.kill()
        t.join(10)
        self.assertFalse(t.is_alive())
        self.assertEqual(len(caught), 1)
        e = caught[0]
        self.assertIsInstance(e, nddd.NdddConnectionError)
        self.assertNotIsInstance(e, nddd.NdddTimeoutError)
        self.assertTrue(e.sent)  # it may or may not have been applied
        self.assertEqual(e.results, [None])
        self.daemon.start()
        self.assertIn(c.check_url("http://example.com/lost").count, (0, 1))

    def test_context_manager_and_close(self):
        with nddd.Client(self.daemon.address) as c:
            c.submit_url("http://example.com/")
            self.assertTrue(c.connected)
        self.assertFalse(c.connected)
        self.assertTrue(c.check_url("http://example.com/").seen)  # reopens
        c.close()


def _read_frame(sock):
    def exactly(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf
    (n,) = struct.unpack(">I", exactly(4))
    return pb.Request.FromString(exactly(n))


def _write_frame(sock, msg):
    data = msg.SerializeToString()
    sock.sendall(struct.pack(">I", len(data)) + data)


class ScriptedServer:
    """Accepts one connection and runs script(sock) on it in a thread."""

    def __init__(self, script):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.script = script
        self.error = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            conn, _ = self.listener.accept()
            with conn:
                self.script(conn)
        except Exception as e:  # reported by close()
            self.error = e

    def close(self):
        self.thread.join(10)
        self.listener.close()
        if self.error:
            raise self.error


class TestScripted(unittest.TestCase):
    def test_replies_out_of_order(self):
        # Reads a window of 4 requests, answers them last first: each count
        # is the URL's number, so misplaced results show.
        def script(sock):
            for _ in range(3):
                reqs = [_read_frame(sock) for _ in range(4)]
                for req in reversed(reqs):
                    resp = pb.Response(id=req.id)
                    resp.urls.counts.extend(
                        int(u.rsplit(b"/", 1)[1]) + 1
                        for u in req.url_check.urls)
                    resp.urls.errors.add(index=1).status.code = \
                        pb.INVALID_ARGUMENT
                    _write_frame(sock, resp)

        srv = ScriptedServer(script)
        c = nddd.Client(srv.address, batch_size=10, window=4)
        urls = ["http://example.com/%d" % i for i in range(120)]
        r = c.check_urls(urls)
        c.close()
        srv.close()
        self.assertEqual([x.url for x in r], urls)
        for i, x in enumerate(r):
            if i % 10 == 1:
                self.assertEqual(x.error.code, Code.INVALID_ARGUMENT)
                self.assertFalse(x.seen)
            else:
                self.assertEqual(x.count, i + 1)
                self.assertTrue(x.seen)

    def test_unknown_id_is_a_protocol_error(self):
        def script(sock):
            req = _read_frame(sock)
            resp = pb.Response(id=req.id + 1000)
            resp.urls.counts.append(1)
            _write_frame(sock, resp)

        srv = ScriptedServer(script)
        c = nddd.Client(srv.address)
        with self.assertRaises(nddd.NdddProtocolError):
            c.submit_url("http://example.com/")
        self.assertFalse(c.connected)
        srv.close()

    def test_closed_after_request(self):
        # A batch, and a call of one URL (a path of its own).
        for call in (lambda c: c.delete_urls(["http://example.com/"]),
                     lambda c: c.submit_url("http://example.com/")):
            srv = ScriptedServer(_read_frame)  # reads a request, hangs up
            c = nddd.Client(srv.address)
            with self.assertRaises(nddd.NdddConnectionError) as cm:
                call(c)
            self.assertTrue(cm.exception.sent)
            self.assertEqual(cm.exception.results, [None])
            self.assertIn("closed the connection", str(cm.exception))
            self.assertFalse(c.connected)
            srv.close()

    def test_one_url_calls_read_replies_in_pieces(self):
        # The one-URL path reads its reply however it arrives: a byte at a
        # time, then a refusal, then a reply and more bytes than it.
        def script(sock):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            req = _read_frame(sock)
            resp = pb.Response(id=req.id)
            resp.urls.counts.append(7)
            data = resp.SerializeToString()
            for b in struct.pack(">I", len(data)) + data:
                sock.sendall(bytes((b,)))
                time.sleep(0.002)
            req = _read_frame(sock)
            resp = pb.Response(id=req.id)
            resp.status.code = pb.PERMISSION_DENIED
            resp.status.message = "read-only token"
            _write_frame(sock, resp)
            req = _read_frame(sock)
            resp = pb.Response(id=req.id)
            resp.urls.counts.append(1)
            data = resp.SerializeToString()
            sock.sendall(struct.pack(">I", len(data)) + data + b"\0")
            sock.recv(1)  # until the client hangs up

        srv = ScriptedServer(script)
        c = nddd.Client(srv.address)
        self.assertEqual(c.check_url("http://example.com/").count, 7)
        with self.assertRaises(nddd.NdddRequestError) as cm:
            c.submit_url("http://example.com/")
        self.assertEqual(cm.exception.code, Code.PERMISSION_DENIED)
        self.assertEqual(cm.exception.results, [None])
        self.assertTrue(c.connected)  # a refusal keeps the connection
        with self.assertRaises(nddd.NdddProtocolError) as cm:
            c.delete_url("http://example.com/")
        self.assertEqual(cm.exception.results, [None])
        self.assertFalse(c.connected)
        srv.close()

    def test_durability_on_the_wire(self):
        # What each call asks: (op, durability, digests?) per request.
        seen = []

        def script(sock):
            for _ in range(6):
                req = _read_frame(sock)
                op = req.WhichOneof("op")
                batch = getattr(req, op)
                seen.append((op, batch.durability, len(batch.urls)))
                resp = pb.Response(id=req.id)
                resp.urls.counts.extend([1] * len(batch.urls))
                _write_frame(sock, resp)

        srv = ScriptedServer(script)
        c = nddd.Client(srv.address, durability="relaxed")
        c.submit_urls(["http://a/"])
        c.submit_url("http://a/", durability="durable")
        c.check_urls(["http://a/"])
        c.delete_urls(["http://a/", "http://b/"])
        c.delete_url("http://a/", durability="default")
        c.submit_url("http://a/", durability=None)
        c.close()
        srv.close()
        self.assertEqual(seen, [
            ("url_submit", pb.RELAXED, 1), ("url_submit", pb.DURABLE, 1),
            ("url_check", pb.DURABILITY_DEFAULT, 1),
            ("url_delete", pb.RELAXED, 2),
            ("url_delete", pb.DURABILITY_DEFAULT, 1),
            ("url_submit", pb.RELAXED, 1)])

    def test_namespaces_on_the_wire(self):
        # What each call asks, and times answered when asked for: each
        # URL's number, in ms.
        seen = []

        def script(sock):
            for _ in range(5):
                req = _read_frame(sock)
                op = req.WhichOneof("op")
                batch = getattr(req, op)
                seen.append((op, batch.namespace, batch.ttl_seconds,
                             batch.with_times))
                resp = pb.Response(id=req.id)
                resp.urls.counts.extend([1] * len(batch.urls))
                if batch.with_times:
                    n = [int(u.rsplit(b"/", 1)[1]) for u in batch.urls]
                    resp.urls.first_seen_ms.extend(n)
                    resp.urls.last_seen_ms.extend(x + 1 for x in n)
                    resp.urls.expires_ms.extend([0] * len(n))
                _write_frame(sock, resp)
            req = _read_frame(sock)
            seen.append((req.WhichOneof("op"), req.namespace_set.name,
                         req.namespace_set.default_ttl_seconds))
            resp = pb.Response(id=req.id)
            resp.namespace.name = req.namespace_set.name
            resp.namespace.default_ttl_seconds = 7
            _write_frame(sock, resp)
            for _ in range(2):
                req = _read_frame(sock)
                seen.append((req.WhichOneof("op"), req.namespace_drop.name))
                resp = pb.Response(id=req.id)
                if req.namespace_drop.name == "gone":
                    resp.status.code = pb.NOT_FOUND
                else:
                    resp.namespace.name = req.namespace_drop.name
                    resp.namespace.urls = 5
                _write_frame(sock, resp)

        srv = ScriptedServer(script)
        c = nddd.Client(srv.address, namespace="c1")
        r = c.submit_urls(["http://a/1000", "http://a/2000"], ttl=60,
                          with_times=True)
        self.assertEqual([(x.first_seen_ms, x.last_seen_ms, x.expires_ms)
                          for x in r], [(1000, 1001, 0), (2000, 2001, 0)])
        self.assertEqual(r[0].first_seen,
                         datetime(1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc))
        self.assertEqual(r[0].last_seen - r[0].first_seen,
                         timedelta(milliseconds=1))
        self.assertIsNone(r[0].expires)
        self.assertEqual(c.check_url("http://a/3", namespace="",
                                     with_times=True).first_seen_ms, 3)
        r = c.delete_urls(["http://a/4"], namespace="c2")
        self.assertEqual((r[0].first_seen_ms, r[0].first_seen), (0, None))
        c.submit_url("http://a/5", ttl=0)
        c.check_urls(["http://a/6"])
        self.assertEqual(c.set_namespace("c3", default_ttl=7),
                         nddd.Namespace("c3", 0, 7))
        self.assertIsNone(c.drop_namespace("gone"))
        self.assertEqual(c.drop_namespace("c1").urls, 5)
        c.close()
        srv.close()
        self.assertEqual(seen, [
            ("url_submit", "c1", 60, True), ("url_check", "", 0, True),
            ("url_delete", "c2", 0, False), ("url_submit", "c1", 0, False),
            ("url_check", "c1", 0, False), ("namespace_set", "c3", 7),
            ("namespace_drop", "gone"), ("namespace_drop", "c1")])

    def test_doc_match_on_the_wire(self):
        # The answer each document call asks for (the call's, else the
        # client's), with_sketch, and the new fields of the replies.
        seen = []

        def neighbour(m):
            m.doc_id, m.url, m.distance, m.group = 7, b"http://n/", 9, 7
            m.resemblance, m.containment, m.verified = 0.625, 0.75, True

        def script(sock):
            for _ in range(6):
                req = _read_frame(sock)
                op = req.WhichOneof("op")
                resp = pb.Response(id=req.id)
                if op == "doc_batch":
                    seen.append((op, [(d.url, d.match, d.with_sketch,
                                       d.query_only, d.namespace)
                                      for d in req.doc_batch.docs]))
                    for d in req.doc_batch.docs:
                        r = resp.docs.docs.add()
                        r.content = pb.CONTENT_MAIN
                        r.sketch = b"\x01" if d.with_sketch else b""
                        neighbour(r.near.add())
                        r.near_total = 1
                elif op == "doc_submit":
                    seen.append((op, req.doc_submit.match,
                                 req.doc_submit.with_sketch))
                    resp.doc.content = pb.CONTENT_WHOLE
                    resp.doc.sketch = b"\x02"
                elif op == "doc_query":
                    q = req.doc_query
                    seen.append((op, q.WhichOneof("what"), q.match,
                                 q.HasField("max_distance"), q.with_sketch,
                                 q.print.sketch))
                    resp.doc_query.content = pb.CONTENT_MAIN
                    neighbour(resp.doc_query.near.add())
                else:
                    seen.append((op, req.doc_get.match))
                    resp.doc.doc_id = 3
                _write_frame(sock, resp)

        srv = ScriptedServer(script)
        c = nddd.Client(srv.address, match="hamming")
        r = c.submit_docs([("http://a/1", "one"), ("http://a/2", b"two",
                                                   True)],
                          match="verified", with_sketch=True)
        self.assertEqual([(x.content, x.sketch) for x in r],
                         [("main", b"\x01")] * 2)
        self.assertEqual(r[0].near, [nddd.Neighbour(7, "http://n/", 9, 7, 0,
                                                    0.625, 0.75, True)])
        r = c.query_docs([("http://a/3", "three")], namespace="ns")
        self.assertEqual(r[0].sketch, b"")
        d = c.submit_doc("http://a/4", "four", with_sketch=True)
        self.assertEqual((d.content, d.sketch), ("whole", b"\x02"))
        q = c.query_doc("five", match="verified", with_sketch=True)
        self.assertEqual((q.content, q.near[0].resemblance), ("main", 0.625))
        c.query_doc(simhash=5, sketch=b"\x03", k=2)
        self.assertEqual(c.get_doc("http://a/6").doc_id, 3)
        c.close()
        srv.close()
        self.assertEqual(seen, [
            ("doc_batch", [(b"http://a/1", pb.MATCH_VERIFIED, True, False,
                            ""),
                           (b"http://a/2", pb.MATCH_VERIFIED, True, False,
                            "")]),
            ("doc_batch", [(b"http://a/3", pb.MATCH_HAMMING, False, True,
                            "ns")]),
            ("doc_submit", pb.MATCH_HAMMING, True),
            ("doc_query", "body", pb.MATCH_VERIFIED, False, True, b""),
            ("doc_query", "print", pb.MATCH_HAMMING, True, False,
             b"\x03"),
            ("doc_get", pb.MATCH_HAMMING)])

    def test_forget_on_the_wire(self):
        # What each call asks; each answer is its number.
        seen = []

        def script(sock):
            for i in range(4):
                req = _read_frame(sock)
                f = req.url_forget
                seen.append((req.WhichOneof("op"), f.namespace, f.host,
                             f.subdomains, f.prefix))
                resp = pb.Response(id=req.id)
                if i == 3:
                    resp.status.code = pb.PERMISSION_DENIED
                    resp.status.message = "admin only"
                else:
                    resp.forget.forgotten = i
                _write_frame(sock, resp)

        srv = ScriptedServer(script)
        c = nddd.Client(srv.address, namespace="c1")
        self.assertEqual(c.forget_host("example.com"), 0)
        self.assertEqual(c.forget_host("example.com", subdomains=True,
                                       namespace=""), 1)
        self.assertEqual(c.forget_prefix("http://example.com/blog/",
                                         namespace="c2"), 2)
        with self.assertRaises(nddd.NdddRequestError) as cm:
            c.forget_prefix(b"http://example.com/\xff")
        self.assertEqual(cm.exception.code, Code.PERMISSION_DENIED)
        c.close()
        srv.close()
        self.assertEqual(seen, [
            ("url_forget", "c1", "example.com", False, b""),
            ("url_forget", "", "example.com", True, b""),
            ("url_forget", "c2", "", False, b"http://example.com/blog/"),
            ("url_forget", "c1", "", False, b"http://example.com/\xff")])

    def test_forget_refused_before_sending(self):
        # Nothing listens there: a call that got as far as connecting
        # would raise NdddConnectionError.
        c = nddd.Client("127.0.0.1:%d" % harness.free_port())
        for bad in ("a b", "x" * 65, "caf\u00e9"):
            with self.assertRaises(ValueError, msg=bad):
                c.forget_host("example.com", namespace=bad)
            with self.assertRaises(ValueError, msg=bad):
                c.forget_prefix("http://example.com/", namespace=bad)
        with self.assertRaises(ValueError):
            c.forget_host("")
        with self.assertRaises(ValueError):
            c.forget_prefix(b"")
        with self.assertRaises(TypeError):
            c.forget_host(b"example.com")
        with self.assertRaises(TypeError):
            c.forget_prefix(None)
        self.assertFalse(c.connected)

    def test_times_of_the_wrong_length(self):
        def script(sock):
            req = _read_frame(sock)
            resp = pb.Response(id=req.id)
            resp.urls.counts.extend([1, 1])
            resp.urls.first_seen_ms.append(1)
            _write_frame(sock, resp)

        srv = ScriptedServer(script)
        c = nddd.Client(srv.address)
        with self.assertRaises(nddd.NdddProtocolError) as cm:
            c.check_urls(["http://a/", "http://b/"], with_times=True)
        self.assertIn("times", str(cm.exception))
        srv.close()

    def test_namespace_and_ttl_refused_before_sending(self):
        # Nothing listens there: a call that got as far as connecting
        # would raise NdddConnectionError.
        c = nddd.Client("127.0.0.1:%d" % harness.free_port())
        for bad in ("a b", "x" * 65, "caf\u00e9", "a/b", "a\n"):
            with self.assertRaises(ValueError, msg=bad):
                c.check_url("http://a/", namespace=bad)
            with self.assertRaises(ValueError, msg=bad):
                nddd.Client(namespace=bad)
            with self.assertRaises(ValueError, msg=bad):
                c.drop_namespace(bad)
        with self.assertRaises(TypeError):
            c.submit_url("http://a/", namespace=b"crawl")
        for bad in (-1, nddd.TTL_MAX + 1, 2 ** 64):
            with self.assertRaises(ValueError, msg=bad):
                c.submit_urls(["http://a/"], ttl=bad)
            with self.assertRaises(ValueError, msg=bad):
                c.set_namespace("a", default_ttl=bad)
        for bad in (1.5, "60", True):
            with self.assertRaises(TypeError, msg=repr(bad)):
                c.submit_url("http://a/", ttl=bad)
        self.assertFalse(c.connected)
        # The longest name and time to live are nddd's.
        self.assertEqual(nddd.Client(namespace="A.b_c-9" + "x" * 57)
                         .namespace, "A.b_c-9" + "x" * 57)

    def test_id_zero_refusal(self):
        # What the daemon sends for a frame it will not take, or when it
        # has too many connections: id 0, a status, then it closes.
        def script(sock):
            resp = pb.Response(id=0)
            resp.status.code = pb.RESOURCE_EXHAUSTED
            resp.status.message = "too many connections (max_connections)"
            _write_frame(sock, resp)

        srv = ScriptedServer(script)
        c = nddd.Client(srv.address)
        with self.assertRaises(nddd.NdddRequestError) as cm:
            c.stats()
        self.assertEqual(cm.exception.code, Code.RESOURCE_EXHAUSTED)
        self.assertIn("max_connections", cm.exception.message)
        srv.close()


class TestAddress(unittest.TestCase):
    def test_parse(self):
        p = nddd.parse_address
        self.assertEqual(p("127.0.0.1:6464"), ("127.0.0.1", 6464))
        self.assertEqual(p("[::1]:80"), ("::1", 80))
        self.assertEqual(p(("localhost", "7")), ("localhost", 7))
        self.assertEqual(nddd.Client("[::1]:80").address, "[::1]:80")
        for bad in ("localhost", ":80", "::1:80", "h:0", "h:65536", "h:x",
                    "[::1]80"):
            with self.assertRaises(ValueError, msg=bad):
                p(bad)


if __name__ == "__main__":
    unittest.main()

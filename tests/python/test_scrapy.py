"""nddd.scrapy.NdddDupeFilter and NdddBatchMiddleware: real crawls with
Scrapy, with the filter alone and with the middleware, and their decisions
called directly.

The crawled site is generated into a temporary directory and served on
loopback by an HTTP proxy in this process: Scrapy is told (http_proxy) to
fetch everything through it, so the site can be http://site.test/ on the
default port, and its links can spell a page's URL in many ways (case of
scheme and host, explicit default port, empty port, dot segments,
fragments, escaped unreserved characters).  The proxy counts the fetches
of each page, redirects /redirect/PATH to /PATH, and can run a function
when a path is fetched (to kill a daemon mid-crawl).  Each crawl is a
`scrapy runspider` subprocess (Twisted's reactor runs once per process).

Crawls record their URLs in the spider's namespace ("crawl", or the name
given with `-a name=`) unless NDDD_NAMESPACE says otherwise.  The crawls
with NDDD_TTL run against a daemon whose wall clock is a file the test
writes (harness.Daemon(clock_ms=...)), so that times to live pass at once.

The daemons of the crawls run with `sync = none`: the filter alone submits
one URL per request and waits for the answer, and with `sync = full` every
answer waits for an fsync, which triples the crawls' time on a slow disk
and is not what these tests are about.  The daemons count the url_submit
requests they answer (/metrics): with the middleware, one per response.
"""

import asyncio
import collections
import http.client
import json
import logging
import os
import posixpath
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import harness  # sets sys.path for nddd

import nddd
from nddd.client import TTL_MAX
from nddd.scrapy import META_KEY, NdddBatchMiddleware, NdddDupeFilter

SPIDER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "crawl_spider.py")
PAGES = 300
PER_DIR = 25
START = "http://site.test/"
SMALL_START = "http://site.test/small/"
MOVED_START = "http://site.test/moved/"
DATA_URL = "data:text/plain,nddd-data"


def page_path(j):
    return "/s/%d/%d.html" % (j // PER_DIR, j)


def page_link(i, j, variant):
    """A link from page i (-1: the start page) to page j, spelt one of
    eight ways; all name the same page once canonicalized."""
    d = j // PER_DIR
    p = page_path(j)
    head, rest = str(j)[0], str(j)[1:]
    forms = [
        ("../%d/%d.html" % (d, j)) if i >= 0 else p.lstrip("/"),
        "HTTP://SITE.TEST" + p,
        "http://Site.Test:80" + p,
        "http://site.test/s/%d/./x/../%d.html" % (d, j),
        "http://site.test%s#from-%d" % (p, i),
        "http://site.test/s/%d/%%%X%s.html" % (d, ord(head), rest),
        "http://site.test:/s/%d/../%d/%d.html" % (d, d, j),
        "http://site.test:80/s/../s/%d/%d.html#x" % (d, j),
    ]
    return forms[variant % len(forms)]


def page_targets(i):
    return [(i + 1) % PAGES, (2 * i + 1) % PAGES, (7 * i + 3) % PAGES,
            (i - 1) % PAGES, (13 * i + 5) % PAGES]


def write_site(root):
    def page(path, title, links):
        full = os.path.join(root, path.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write("<html><head><title>%s</title></head><body><h1>%s</h1>"
                    "\n%s\n</body></html>\n" % (title, title, "\n".join(
                        '<p><a href="%s">link</a></p>' % link
                        for link in links)))

    page("/index.html", "start",
         [page_link(-1, j, j) for j in range(5)])
    for i in range(PAGES):
        page(page_path(i), "page %d" % i,
             [page_link(i, j, 5 * i + k)
              for k, j in enumerate(page_targets(i))])
    local = os.path.join(root, "local.txt")
    with open(local, "w") as f:
        f.write("a local file\n")
    # An acyclic site (it ends even when nothing is filtered) with links
    # nddd refuses: data: and file: URLs.
    page("/small/index.html", "small", [
        "a.html", "http://site.test:80/small/b.html", DATA_URL,
        "file://" + local])
    page("/small/a.html", "a", ["./b.html"])
    page("/small/b.html", "b", [])
    # Redirects: one to a page also linked directly, one to a page linked
    # only through it.
    page("/moved/index.html", "moved", [
        "a.html", "/redirect/moved/a.html", "/redirect/moved/b.html"])
    page("/moved/a.html", "a", [])
    page("/moved/b.html", "b", [])
    return "file://" + local


class SiteProxy(ThreadingHTTPServer):
    """Serves root as http://site.test/ to proxy requests; counts fetches
    per page (the path with escapes decoded and dot segments removed).
    /redirect/PATH answers 302 to /PATH.  hooks[path]() runs once, before
    the page is served."""

    daemon_threads = True

    def __init__(self, root):
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.root = root
        self.lock = threading.Lock()
        self.fetched = collections.Counter()
        self.hooks = {}
        self.thread = threading.Thread(target=self.serve_forever,
                                       daemon=True)
        self.thread.start()

    @property
    def proxy_url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]

    def take(self):
        """The fetches counted since the last take()."""
        with self.lock:
            counts = self.fetched
            self.fetched = collections.Counter()
        return counts


class _ProxyHandler(BaseHTTPRequestHandler):
    def setup(self):
        super().setup()
        # Headers and body leave in two writes: without this, Nagle's
        # algorithm holds the body back until the client's delayed ACK.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self):
        parts = urllib.parse.urlsplit(self.path)
        if (parts.scheme.lower() != "http" or parts.hostname != "site.test"
                or parts.port not in (None, 80)):
            self.send_error(502, "not proxied here")
            return
        path = posixpath.normpath(urllib.parse.unquote(parts.path) or "/")
        path = "/" + path.lstrip("/")
        with self.server.lock:
            self.server.fetched[path] += 1
            hook = self.server.hooks.pop(path, None)
        if hook is not None:
            hook()
        if path.startswith("/redirect/"):
            self.send_response(302)
            self.send_header("Location", "http://site.test/"
                             + path[len("/redirect/"):])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        full = os.path.join(self.server.root, path.lstrip("/"))
        if os.path.isdir(full):
            full = os.path.join(full, "index.html")
        try:
            with open(full, "rb") as f:
                body = f.read()
        except OSError:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Site:
    dir = None
    proxy = None
    file_url = None


def setUpModule():
    Site.dir = tempfile.mkdtemp(prefix="nddd-site-")
    Site.file_url = write_site(Site.dir)
    Site.proxy = SiteProxy(Site.dir)


def tearDownModule():
    Site.proxy.shutdown()
    Site.proxy.server_close()
    shutil.rmtree(Site.dir, ignore_errors=True)


BATCH = json.dumps({"nddd.scrapy.NdddBatchMiddleware": 100})


def run_crawl(start, address, unreachable="open", nddd_filter=True,
              batch=False, settings=(), name=None):
    """Runs the spider from start through the proxy, with nddd's filter
    (nddd_filter) and its middleware (batch), and settings ("NAME=VALUE"),
    named name (default "crawl"); returns the subprocess, with its log as
    stdout, and the path of its output."""
    out = os.path.join(Site.dir, "crawl-%d.json" % time.monotonic_ns())
    cmd = [harness.PYTHON, "-m", "scrapy", "runspider", SPIDER,
           "-a", "start=" + start, "-a", "out=" + out,
           "-s", "LOG_LEVEL=DEBUG", "-s", "TELNETCONSOLE_ENABLED=False",
           "-s", "REQUEST_FINGERPRINTER_IMPLEMENTATION=2.7"]
    if name is not None:
        cmd += ["-a", "name=" + name]
    if nddd_filter:
        cmd += ["-s", "DUPEFILTER_CLASS=nddd.scrapy.NdddDupeFilter",
                "-s", "NDDD_ADDRESS=" + address,
                "-s", "NDDD_UNREACHABLE=" + unreachable,
                "-s", "NDDD_TIMEOUT=5"]
    if batch:
        cmd += ["-s", "SPIDER_MIDDLEWARES=" + BATCH]
    for setting in settings:
        cmd += ["-s", setting]
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("no_proxy", "http_proxy", "https_proxy",
                                "all_proxy")}
    env["http_proxy"] = Site.proxy.proxy_url
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (harness.PYTHONPATH, env.get("PYTHONPATH")) if p)
    p = subprocess.run(cmd, cwd=Site.dir, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=180)
    return p, out


def crawl(test, start, address, unreachable="open", nddd_filter=True,
          batch=False, settings=(), reason="finished", name=None):
    """Runs the spider (see run_crawl); returns its output (fetched,
    stats) and its log."""
    p, out = run_crawl(start, address, unreachable, nddd_filter, batch,
                       settings, name)
    log = p.stdout
    test.assertEqual(p.returncode, 0, log[-5000:])
    test.assertTrue(os.path.exists(out), log[-5000:])
    with open(out) as f:
        result = json.load(f)
    os.unlink(out)
    test.assertEqual(result["reason"], reason, log[-5000:])
    test.assertNotIn("Traceback", log, log[-5000:])
    return result, log


CRAWL_CONF = "[store]\nsync = none\n"


def start_daemon(test, conf=CRAWL_CONF, clock_ms=None):
    """A daemon started for test, with a /metrics listener at
    daemon.metrics (and with clock_ms, a wall clock the test moves)."""
    metrics = "127.0.0.1:%d" % harness.free_port()
    daemon = harness.Daemon("%s\n[metrics]\nlisten = %s\n" % (conf, metrics),
                            clock_ms=clock_ms)
    test.addCleanup(daemon.cleanup)
    daemon.start()
    daemon.metrics = metrics
    return daemon


def seen_urls(daemon, namespace, urls):
    """Those of urls that daemon holds as seen in namespace."""
    with nddd.Client(daemon.address, namespace=namespace) as c:
        return {r.url for r in c.check_urls(urls) if r.seen}


EVERY_PAGE_URL = ["http://site.test" + page_path(i) for i in range(PAGES)]


def url_submits(daemon):
    """The url_submit requests daemon has answered."""
    host, port = daemon.metrics.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", "/metrics")
        body = conn.getresponse().read().decode()
    finally:
        conn.close()
    return int(re.search(r'^nddd_requests_total\{op="url_submit"\} (\d+)$',
                         body, re.M).group(1))


class TestCrawl(unittest.TestCase):
    def setUp(self):
        self.daemon = start_daemon(self)
        self.submits = 0
        Site.proxy.take()

    def new_submits(self):
        """url_submit requests since the last call."""
        total = url_submits(self.daemon)
        new, self.submits = total - self.submits, total
        return new

    def crawl_recrawl_delete(self, batch, namespace):
        """namespace: NDDD_NAMESPACE, None for the spider's name ("crawl")."""
        every_page = {page_path(i): 1 for i in range(PAGES)}
        settings = ([] if namespace is None
                    else ["NDDD_NAMESPACE=" + namespace])
        ns = "crawl" if namespace is None else namespace

        # 1. Every page once, whichever way its links spell it.
        result, log = crawl(self, START, self.daemon.address, batch=batch,
                            settings=settings)
        fetched = Site.proxy.take()
        self.assertEqual(dict(fetched), dict(every_page, **{"/": 1}))
        stats = result["stats"]
        links = 5 + 5 * PAGES
        self.assertEqual(stats["nddd/new"], PAGES)
        self.assertEqual(stats["nddd/duplicate"], links - PAGES)
        self.assertEqual(stats["dupefilter/filtered"], links - PAGES)
        self.assertNotIn("nddd/unreachable", stats)
        self.assertIn("Checking request URLs with nddd at %s in %s"
                      % (self.daemon.address,
                         "namespace %r" % ns if ns
                         else "the default namespace"), log)
        self.assertEqual(log.count("Filtered duplicate request"), 1)
        self.assertIn("no more duplicates will be shown", log)
        if batch:
            # One url_submit per response: the start page and each page.
            self.assertEqual(stats["nddd/batches"], PAGES + 1)
            self.assertEqual(self.new_submits(), PAGES + 1)
        else:
            self.assertNotIn("nddd/batches", stats)
            self.assertEqual(self.new_submits(), links)

        # Recorded in the crawl's namespace only.
        self.assertEqual(seen_urls(self.daemon, ns, EVERY_PAGE_URL),
                         set(EVERY_PAGE_URL))
        other = "" if ns else "crawl"
        self.assertEqual(seen_urls(self.daemon, other, EVERY_PAGE_URL),
                         set())

        # 2. Same nddd: only the start URL (dont_filter) is fetched.
        result, log = crawl(self, START, self.daemon.address, batch=batch,
                            settings=settings)
        self.assertEqual(dict(Site.proxy.take()), {"/": 1})
        self.assertEqual(result["stats"]["dupefilter/filtered"], 5)
        self.assertNotIn("nddd/new", result["stats"])
        self.assertEqual(self.new_submits(), 1 if batch else 5)

        # 3. Page 3 forgotten (named another way): fetched again, alone.
        status, out = self.daemon.nddctl(
            "url-delete", *(["-n", ns] if ns else []),
            "HTTP://Site.Test:80/s/0/./3.html#top")
        self.assertEqual(status, 0, out)
        self.assertTrue(out.startswith("deleted\t"), out)
        result, log = crawl(self, START, self.daemon.address, batch=batch,
                            settings=settings)
        self.assertEqual(dict(Site.proxy.take()), {"/": 1, page_path(3): 1})
        self.assertEqual(result["stats"]["nddd/new"], 1)
        self.assertEqual(result["stats"]["dupefilter/filtered"], 4 + 5)
        self.assertEqual(self.new_submits(), 2 if batch else 10)

    def test_crawl_recrawl_delete(self):
        # In the default namespace, as before namespaces: then a crawl
        # with NDDD_NAMESPACE unset, in the spider's namespace, starts
        # over.
        self.crawl_recrawl_delete(batch=False, namespace="")
        result, log = crawl(self, START, self.daemon.address)
        self.assertIn("in namespace 'crawl'", log)
        self.assertEqual(dict(Site.proxy.take()),
                         dict({page_path(i): 1 for i in range(PAGES)},
                              **{"/": 1}))

    def test_batch_crawl_recrawl_delete(self):
        # In the spider's namespace.
        self.crawl_recrawl_delete(batch=True, namespace=None)

    def namespaces(self, batch):
        # Two spiders (by name), then a spider told another's namespace.
        every_page = dict({page_path(i): 1 for i in range(PAGES)},
                          **{"/": 1})
        for name in ("alpha", "beta"):
            result, log = crawl(self, START, self.daemon.address,
                                batch=batch, name=name)
            self.assertIn("in namespace %r" % name, log)
            self.assertEqual(dict(Site.proxy.take()), every_page)
            self.assertEqual(result["stats"]["nddd/new"], PAGES)
        result, log = crawl(self, START, self.daemon.address, batch=batch,
                            name="beta", settings=["NDDD_NAMESPACE=alpha"])
        self.assertIn("in namespace 'alpha'", log)
        self.assertEqual(dict(Site.proxy.take()), {"/": 1})
        self.assertNotIn("nddd/new", result["stats"])
        for ns in ("alpha", "beta"):
            self.assertEqual(seen_urls(self.daemon, ns, EVERY_PAGE_URL),
                             set(EVERY_PAGE_URL))
        self.assertEqual(seen_urls(self.daemon, "", EVERY_PAGE_URL), set())
        with nddd.Client(self.daemon.address) as c:
            self.assertEqual({n.name: n.urls for n in c.stats().namespaces},
                             {"": 0, "alpha": PAGES, "beta": PAGES})

    def test_namespaces(self):
        self.namespaces(batch=False)

    def test_batch_namespaces(self):
        self.namespaces(batch=True)

    def test_bad_namespace_or_ttl_stops_the_crawl(self):
        # The crawl stops as it opens, nothing fetched, the error naming
        # the setting.  (`scrapy runspider` logs it as an unhandled error
        # and exits with status 0.)
        for name, settings, error in (
                ("my spider", [],
                 "ValueError: NDDD_NAMESPACE is not set, so the crawl's nddd "
                 "namespace would be the spider's name, 'my spider', which "
                 "nddd does not take as a namespace"),
                ("crawl", ["NDDD_NAMESPACE=a/b"],
                 "ValueError: NDDD_NAMESPACE must be at most 64 bytes"),
                ("crawl", ["NDDD_TTL=1.5"],
                 "ValueError: NDDD_TTL must be a whole number of seconds")):
            with self.subTest(name=name, settings=settings):
                p, out = run_crawl(SMALL_START, self.daemon.address,
                                   batch=True, name=name, settings=settings)
                self.assertIn(error, p.stdout, p.stdout[-5000:])
                self.assertFalse(os.path.exists(out))
                self.assertEqual(dict(Site.proxy.take()), {})
        self.assertEqual(url_submits(self.daemon), 0)
        # That spider runs with NDDD_NAMESPACE set.
        crawl(self, SMALL_START, self.daemon.address, batch=True,
              name="my spider", settings=["NDDD_NAMESPACE=mine"])
        self.assertEqual(dict(Site.proxy.take()), {
            "/small": 1, "/small/a.html": 1, "/small/b.html": 1})

    def test_redirects(self):
        # A redirect's request is a copy of the redirected one, meta
        # included: it is checked for its own URL.  /moved/a.html, linked
        # directly and through a redirect, is fetched once.
        for batch in (False, True):
            with self.subTest(batch=batch):
                daemon = start_daemon(self)
                result, log = crawl(self, MOVED_START, daemon.address,
                                    batch=batch)
                self.assertEqual(dict(Site.proxy.take()), {
                    "/moved": 1, "/moved/a.html": 1, "/moved/b.html": 1,
                    "/redirect/moved/a.html": 1,
                    "/redirect/moved/b.html": 1})
                stats = result["stats"]
                self.assertEqual(stats["nddd/new"], 4)
                self.assertEqual(stats["nddd/duplicate"], 1)
                self.assertEqual(stats["dupefilter/filtered"], 1)
                self.assertEqual(stats.get("nddd/batches"),
                                 1 if batch else None)

    def resume(self, batch, namespace):
        # Stopped early, then resumed from JOBDIR: Scrapy keeps the queue,
        # nddd the URLs seen (in namespace: NDDD_NAMESPACE, or None for the
        # spider's name).  The start URL is fetched by each crawl.
        jobdir = tempfile.mkdtemp(prefix="nddd-job-")
        self.addCleanup(shutil.rmtree, jobdir, True)
        settings = ["JOBDIR=" + jobdir]
        if namespace is not None:
            settings.append("NDDD_NAMESPACE=" + namespace)
        crawl(self, START, self.daemon.address, batch=batch,
              settings=settings + ["CLOSESPIDER_PAGECOUNT=50"],
              reason="closespider_pagecount")
        first = Site.proxy.take()
        self.assertLess(sum(first.values()), PAGES // 2)
        result, log = crawl(self, START, self.daemon.address, batch=batch,
                            settings=settings)
        self.assertIn("Resuming crawl", log)
        self.assertEqual(dict(first + Site.proxy.take()),
                         dict({page_path(i): 1 for i in range(PAGES)},
                              **{"/": 2}))
        ns = "crawl" if namespace is None else namespace
        self.assertEqual(seen_urls(self.daemon, ns, EVERY_PAGE_URL),
                         set(EVERY_PAGE_URL))
        self.assertEqual(seen_urls(self.daemon, "", EVERY_PAGE_URL), set())

    def test_resume(self):
        self.resume(batch=False, namespace="resumed")

    def test_batch_resume(self):
        self.resume(batch=True, namespace=None)

    def test_scrapy_default_filter_fetches_variants_again(self):
        # Without nddd, Scrapy's own filter takes some spellings of a page
        # for different pages: what this site's links are for.
        crawl(self, START, None, nddd_filter=False)
        fetched = Site.proxy.take()
        self.assertEqual(set(fetched), set([page_path(i)
                                            for i in range(PAGES)] + ["/"]))
        self.assertGreater(sum(fetched.values()), PAGES + 1 + 100)


class TestShardedCrawl(unittest.TestCase):
    """NDDD_SHARDS: the crawl through three daemons fetches what it
    fetches through one, and its URLs are spread over the shards, each
    on the one ShardedClient names."""

    def test_crawl_over_shards(self):
        every_page = dict({page_path(i): 1 for i in range(PAGES)},
                          **{"/": 1})
        single = start_daemon(self)
        shards = [start_daemon(self) for _ in range(3)]
        shard_list = ",".join(d.address for d in shards)
        Site.proxy.take()
        one, _ = crawl(self, START, single.address, batch=True)
        self.assertEqual(dict(Site.proxy.take()), every_page)
        for batch in (True, False):
            result, log = crawl(self, START, single.address, batch=batch,
                                settings=["NDDD_SHARDS=" + shard_list],
                                name="sharded-%s" % batch)
            self.assertIn(shard_list, log)
            self.assertEqual(dict(Site.proxy.take()), every_page)
            self.assertEqual(result["stats"]["nddd/new"],
                             one["stats"]["nddd/new"])
            self.assertNotIn("nddd/unreachable", result["stats"])
        ns = "sharded-True"
        with nddd.ShardedClient(shard_list.split(",")) as s:
            owners = [s.shard_of(u) for u in EVERY_PAGE_URL]
        for i, d in enumerate(shards):
            mine = [u for u, o in zip(EVERY_PAGE_URL, owners) if o == i]
            self.assertTrue(mine)
            self.assertEqual(seen_urls(d, ns, EVERY_PAGE_URL), set(mine))
        # Again: every page seen, only the start page (dont_filter).
        crawl(self, START, single.address, batch=True,
              settings=["NDDD_SHARDS=" + shard_list], name=ns)
        self.assertEqual(dict(Site.proxy.take()), {"/": 1})


class TestRecrawlAfterTtl(unittest.TestCase):
    """Crawls with NDDD_TTL against a daemon whose wall clock the test
    moves (NDDD_TEST_CLOCK)."""

    T0 = 1800000000000          # ms since the epoch (January 2027)
    TTL = 3600                  # s

    def setUp(self):
        self.daemon = start_daemon(self, clock_ms=self.T0)
        Site.proxy.take()

    def at(self, seconds):
        """Sets the daemon's clock to T0 + seconds."""
        self.daemon.set_clock(self.T0 + seconds * 1000)

    def times(self, i):
        with nddd.Client(self.daemon.address, namespace="crawl") as c:
            r = c.check_url("http://site.test" + page_path(i),
                            with_times=True)
        return r.seen, r.first_seen_ms, r.last_seen_ms, r.expires_ms

    def recrawl_after_ttl(self, batch):
        T = self.TTL
        ttl = ["NDDD_TTL=%d" % T]

        def crawl_at(seconds, settings=ttl):
            self.at(seconds)
            result, log = crawl(self, START, self.daemon.address,
                                batch=batch, settings=settings)
            return dict(Site.proxy.take()), result["stats"], log

        def pages(numbers):
            return {page_path(i): 1 for i in numbers}

        # 1. At T0: every page once, each seen until T0 + T.
        fetched, stats, log = crawl_at(0)
        self.assertIn("in namespace 'crawl' (time to live: %d s" % T, log)
        self.assertEqual(fetched, dict(pages(range(PAGES)), **{"/": 1}))
        self.assertEqual(stats["nddd/new"], PAGES)
        self.assertEqual(self.times(4),
                         (True, self.T0, self.T0, self.T0 + T * 1000))
        # Another namespace, without NDDD_TTL: seen for ever.
        fetched, stats, log = crawl_at(0, ["NDDD_NAMESPACE=forever"])
        self.assertIn("in namespace 'forever' (time to live: the "
                      "namespace's", log)
        self.assertEqual(fetched, dict(pages(range(PAGES)), **{"/": 1}))

        # 2. At T0 + T/2: nothing but the start page.  The links found
        # again (to pages 0 to 4) do not postpone the times to live.
        fetched, stats, log = crawl_at(T // 2)
        self.assertEqual(fetched, {"/": 1})
        self.assertNotIn("nddd/new", stats)
        self.assertEqual(self.times(4),
                         (True, self.T0, self.T0 + T // 2 * 1000,
                          self.T0 + T * 1000))

        # 3. Still at T0 + T/2, pages 0 to 3 (linked from the start page)
        # are deleted and fetched again: seen until T0 + 3T/2.
        forgotten = range(4)
        with nddd.Client(self.daemon.address, namespace="crawl") as c:
            self.assertTrue(all(r.deleted for r in c.delete_urls(
                "http://site.test" + page_path(i) for i in forgotten)))
        fetched, stats, log = crawl_at(T // 2)
        self.assertEqual(fetched, dict(pages(forgotten), **{"/": 1}))
        self.assertEqual(stats["nddd/new"], len(forgotten))
        self.assertEqual(self.times(0)[3], self.T0 + (T + T // 2) * 1000)

        # 4. Just past T0 + T: the other pages are unseen again, and
        # fetched again, each once (page 4 is linked from the start page,
        # and each page from the one before it).
        later = range(len(forgotten), PAGES)
        with nddd.Client(self.daemon.address, namespace="crawl") as c:
            page = "http://site.test" + page_path(4)
            self.daemon.set_clock(self.T0 + T * 1000 - 1)
            self.assertTrue(c.check_url(page).seen)
            self.at(T)
            self.assertFalse(c.check_url(page).seen)
        fetched, stats, log = crawl_at(T + 1)
        self.assertEqual(fetched, dict(pages(later), **{"/": 1}))
        self.assertEqual(stats["nddd/new"], len(later))
        self.assertEqual(self.times(4),
                         (True, self.T0 + (T + 1) * 1000,
                          self.T0 + (T + 1) * 1000,
                          self.T0 + (2 * T + 1) * 1000))

        # 5. Just past T0 + 3T/2: pages 0 to 3 only.
        fetched, stats, log = crawl_at(T + T // 2 + 1)
        self.assertEqual(fetched, dict(pages(forgotten), **{"/": 1}))
        self.assertEqual(stats["nddd/new"], len(forgotten))

        # Without NDDD_TTL, nothing expired.
        fetched, stats, log = crawl_at(T + T // 2 + 1,
                                       ["NDDD_NAMESPACE=forever"])
        self.assertEqual(fetched, {"/": 1})
        self.assertEqual(seen_urls(self.daemon, "forever", EVERY_PAGE_URL),
                         set(EVERY_PAGE_URL))

    def test_recrawl_after_ttl(self):
        self.recrawl_after_ttl(batch=False)

    def test_batch_recrawl_after_ttl(self):
        self.recrawl_after_ttl(batch=True)


class TestCrawlFailures(unittest.TestCase):
    def setUp(self):
        Site.proxy.take()
        self.addCleanup(Site.proxy.hooks.clear)

    def small_crawl(self, address, unreachable, batch=False):
        result, log = crawl(self, SMALL_START, address, unreachable,
                            batch=batch)
        return (result["fetched"], dict(Site.proxy.take()),
                result["stats"], log)

    def test_unreachable_open(self):
        for batch in (False, True):
            with self.subTest(batch=batch):
                address = "127.0.0.1:%d" % harness.free_port()
                fetched, pages, stats, log = self.small_crawl(
                    address, "open", batch)
                # Nothing filtered: b.html twice (linked from the start
                # and a).
                self.assertEqual(pages, {"/small": 1, "/small/a.html": 1,
                                         "/small/b.html": 2})
                self.assertIn(DATA_URL, fetched)
                self.assertIn(Site.file_url, fetched)
                self.assertIn("ERROR: nddd at %s is unreachable" % address,
                              log)
                self.assertIn("letting requests through unchecked", log)
                self.assertEqual(stats["nddd/unreachable"], 5)
                self.assertEqual(stats["nddd/let_through"], 5)
                self.assertNotIn("dupefilter/filtered", stats)
                # Not tried again within NDDD_RETRY_INTERVAL.
                self.assertNotIn("nddd/batches", stats)

    def test_unreachable_closed(self):
        for batch in (False, True):
            with self.subTest(batch=batch):
                address = "127.0.0.1:%d" % harness.free_port()
                fetched, pages, stats, log = self.small_crawl(
                    address, "closed", batch)
                self.assertEqual(pages, {"/small": 1})
                self.assertEqual(fetched, [SMALL_START])
                self.assertIn("ERROR: nddd at %s is unreachable" % address,
                              log)
                self.assertIn("dropping requests (NDDD_UNREACHABLE = "
                              "closed)", log)
                self.assertEqual(stats["nddd/unreachable"], 4)
                self.assertEqual(stats["nddd/dropped"], 4)
                self.assertNotIn("dupefilter/filtered", stats)
                self.assertNotIn("nddd/batches", stats)

    def outage_mid_crawl(self, unreachable):
        # nddd is killed as a.html is fetched: its link to b.html is
        # decided by NDDD_UNREACHABLE.
        daemon = start_daemon(self)
        Site.proxy.hooks["/small/a.html"] = daemon.kill
        fetched, pages, stats, log = self.small_crawl(
            daemon.address, unreachable, batch=True)
        self.assertEqual(stats["nddd/batches"], 2)  # the start's, a.html's
        self.assertEqual(stats["nddd/new"], 2)
        self.assertEqual(stats["nddd/url_error"], 2)
        self.assertEqual(stats["nddd/unreachable"], 1)
        self.assertNotIn("dupefilter/filtered", stats)
        self.assertIn("ERROR: nddd at %s is unreachable" % daemon.address,
                      log)
        return pages, stats, log

    def test_outage_mid_crawl_open(self):
        pages, stats, log = self.outage_mid_crawl("open")
        self.assertEqual(pages, {"/small": 1, "/small/a.html": 1,
                                 "/small/b.html": 2})
        self.assertEqual(stats["nddd/let_through"], 3)
        self.assertIn("1 request(s) were let through unchecked", log)

    def test_outage_mid_crawl_closed(self):
        pages, stats, log = self.outage_mid_crawl("closed")
        self.assertEqual(pages, {"/small": 1, "/small/a.html": 1,
                                 "/small/b.html": 1})
        self.assertEqual(stats["nddd/dropped"], 3)
        self.assertIn("1 request(s) were dropped", log)

    def bad_urls(self, unreachable, batch):
        daemon = start_daemon(self)
        fetched, pages, stats, log = self.small_crawl(daemon.address,
                                                      unreachable, batch)
        self.assertEqual(pages, {"/small": 1, "/small/a.html": 1,
                                 "/small/b.html": 1})
        self.assertEqual(stats["nddd/url_error"], 2)
        self.assertEqual(stats["dupefilter/filtered"], 1)
        for url in (DATA_URL, Site.file_url):
            self.assertRegex(log, r"ERROR: nddd refused the URL of <GET %s>: "
                             r"INVALID_ARGUMENT: " % url)
        self.assertEqual(url_submits(daemon), 2 if batch else 5)
        return fetched, stats, log

    def test_bad_urls_open(self):
        for batch in (False, True):
            with self.subTest(batch=batch):
                fetched, stats, log = self.bad_urls("open", batch)
                self.assertIn(DATA_URL, fetched)
                self.assertIn(Site.file_url, fetched)
                self.assertEqual(stats["nddd/let_through"], 2)
                self.assertIn("letting it through (NDDD_UNREACHABLE = open)",
                              log)

    def test_bad_urls_closed(self):
        for batch in (False, True):
            with self.subTest(batch=batch):
                fetched, stats, log = self.bad_urls("closed", batch)
                self.assertNotIn(DATA_URL, fetched)
                self.assertNotIn(Site.file_url, fetched)
                self.assertEqual(stats["nddd/dropped"], 2)
                self.assertIn("dropping it (NDDD_UNREACHABLE = closed)", log)


class FakeRequest:
    """What the filter reads of a request, with a URL Scrapy's Request
    would have escaped."""

    def __init__(self, url, method="GET", dont_filter=False):
        self.url = url
        self.method = method
        self.dont_filter = dont_filter
        self.headers = {}
        self.meta = {}

    def __str__(self):
        return "<%s %s>" % (self.method, self.url)


class InProcess:
    """A filter made as Scrapy makes it, asked the way Scrapy's scheduler
    asks it (request_seen, then log when it returned True)."""

    def make(self, spider_name="test", **settings):
        """A filter of a spider named spider_name (its namespace unless
        NDDD_NAMESPACE says otherwise), opened."""
        from scrapy.utils.test import get_crawler
        settings.setdefault("NDDD_ADDRESS", self.daemon.address)
        settings.setdefault("REQUEST_FINGERPRINTER_IMPLEMENTATION", "2.7")
        crawler = get_crawler(settings_dict=settings)
        spider = crawler.spidercls.from_crawler(crawler, name=spider_name)
        crawler.spider = spider
        df = NdddDupeFilter.from_crawler(crawler)
        df.open()
        self.addCleanup(df.close, "finished")
        return df, spider, crawler.stats

    def schedule(self, df, spider, request):
        """True if the scheduler would enqueue request."""
        if not request.dont_filter and df.request_seen(request):
            df.log(request, spider)
            return False
        return True


class TestFilterInProcess(InProcess, unittest.TestCase):
    """The filter's decisions."""

    def setUp(self):
        self.daemon = harness.Daemon()
        self.addCleanup(self.daemon.cleanup)
        self.daemon.start()

    def test_duplicates_and_logging(self):
        from scrapy import Request
        df, spider, stats = self.make()
        with self.assertLogs("nddd.scrapy", logging.DEBUG) as logs:
            self.assertTrue(self.schedule(df, spider,
                                          Request("http://a.test/x")))
            for _ in range(3):
                self.assertFalse(self.schedule(
                    df, spider, Request("http://A.TEST:80/./x#y")))
        self.assertEqual(stats.get_value("dupefilter/filtered"), 3)
        self.assertEqual(stats.get_value("nddd/new"), 1)
        self.assertEqual(stats.get_value("nddd/duplicate"), 3)
        dupes = [m for m in logs.output if "Filtered duplicate" in m]
        self.assertEqual(len(dupes), 1)
        self.assertIn("no more duplicates will be shown", dupes[0])

        df, spider, stats = self.make(DUPEFILTER_DEBUG=True)
        with self.assertLogs("nddd.scrapy", logging.DEBUG) as logs:
            for _ in range(3):
                self.schedule(df, spider, Request("http://a.test/x"))
        self.assertEqual(len([m for m in logs.output
                              if "Filtered duplicate" in m]), 3)

    def test_dont_filter_is_not_recorded(self):
        from scrapy import Request
        df, spider, stats = self.make()
        r = Request("http://a.test/start", dont_filter=True)
        # Scrapy's scheduler does not ask; another caller gets "not seen".
        self.assertFalse(df.request_seen(r))
        self.assertFalse(df.request_seen(r))
        with nddd.Client(self.daemon.address, namespace="test") as c:
            self.assertFalse(c.check_url("http://a.test/start").seen)

    def test_other_methods_by_fingerprint(self):
        from scrapy import FormRequest, Request
        df, spider, stats = self.make()
        self.assertTrue(self.schedule(df, spider,
                                      Request("http://a.test/login")))
        post = FormRequest("http://a.test/login", formdata={"u": "me"})
        self.assertTrue(self.schedule(df, spider, post))
        self.assertFalse(self.schedule(df, spider, post.replace()))
        other = FormRequest("http://a.test/login", formdata={"u": "you"})
        self.assertTrue(self.schedule(df, spider, other))
        with nddd.Client(self.daemon.address, namespace="test") as c:
            self.assertEqual(c.check_url("http://a.test/login").count, 1)

    def test_invalid_url(self):
        for mode, enqueued in (("open", True), ("closed", False)):
            df, spider, stats = self.make(NDDD_UNREACHABLE=mode)
            with self.assertLogs("nddd.scrapy", logging.ERROR) as logs:
                self.assertEqual(self.schedule(
                    df, spider, FakeRequest("http://exa mple.com/")),
                    enqueued)
            self.assertIn("nddd refused the URL of <GET http://exa mple.com"
                          "/>: INVALID_ARGUMENT", logs.output[0])
            self.assertEqual(stats.get_value("nddd/url_error"), 1)
            self.assertIsNone(stats.get_value("dupefilter/filtered"))

    def test_outage_and_recovery(self):
        from scrapy import Request
        port = harness.free_port()
        with self.assertLogs("nddd.scrapy", logging.DEBUG) as logs:
            df, spider, stats = self.make(
                NDDD_ADDRESS="127.0.0.1:%d" % port, NDDD_RETRY_INTERVAL=0.5,
                NDDD_UNREACHABLE="closed")
            for i in range(6):
                self.assertFalse(self.schedule(
                    df, spider, Request("http://a.test/%d" % i)))
        errors = [m for m in logs.output if m.startswith("ERROR")]
        self.assertEqual(len(errors), 1)  # once per outage
        self.assertIn("is unreachable", errors[0])
        self.assertEqual(stats.get_value("nddd/dropped"), 6)
        self.assertEqual(stats.get_value("nddd/unreachable"), 6)
        self.assertIsNone(stats.get_value("dupefilter/filtered"))
        # The daemon comes up on that port; after the retry interval the
        # filter asks it again and says so.
        daemon = harness.Daemon(port=port)
        self.addCleanup(daemon.cleanup)
        daemon.start()
        time.sleep(0.6)
        with self.assertLogs("nddd.scrapy", logging.WARNING) as logs:
            self.assertTrue(self.schedule(df, spider,
                                          Request("http://a.test/7")))
        self.assertIn("answers again: 6 request(s) were dropped",
                      logs.output[0])
        self.assertFalse(self.schedule(df, spider,
                                       Request("http://a.test:80/7")))
        self.assertEqual(stats.get_value("dupefilter/filtered"), 1)

    def test_bad_setting(self):
        with self.assertRaises(ValueError):
            self.make(NDDD_UNREACHABLE="maybe")
        with self.assertRaises(ValueError) as cm:
            self.make(NDDD_DURABILITY="maybe")
        self.assertIn("NDDD_DURABILITY", str(cm.exception))

    def test_namespace_and_ttl(self):
        from scrapy import Request
        url = "http://n.test/x"
        # The spider's name by default.
        df, spider, stats = self.make()
        self.assertEqual((df.namespace, df.ttl), ("test", None))
        self.assertTrue(self.schedule(df, spider, Request(url)))
        # Another namespace, with a time to live: the same URL is new
        # there, recorded until its time to live ends.
        df, spider, stats = self.make(NDDD_NAMESPACE="other.ns_1-2",
                                      NDDD_TTL="60")
        self.assertEqual((df.namespace, df.ttl), ("other.ns_1-2", 60))
        self.assertTrue(self.schedule(df, spider, Request(url)))
        self.assertFalse(self.schedule(df, spider, Request(url)))
        # "": the default namespace; an int, as in settings.py.
        df, spider, stats = self.make(spider_name="not a namespace",
                                      NDDD_NAMESPACE="", NDDD_TTL=7 * 86400)
        self.assertEqual((df.namespace, df.ttl), ("", 7 * 86400))
        self.assertTrue(self.schedule(df, spider, Request(url)))
        with nddd.Client(self.daemon.address) as c:
            r = c.check_url(url, namespace="test", with_times=True)
            self.assertEqual((r.count, r.expires_ms), (1, 0))
            r = c.check_url(url, namespace="other.ns_1-2", with_times=True)
            self.assertEqual(r.count, 2)
            self.assertEqual(r.expires_ms - r.first_seen_ms, 60000)
            r = c.check_url(url, with_times=True)
            self.assertEqual(r.count, 1)
            self.assertEqual(r.expires_ms - r.first_seen_ms, 7 * 86400000)
        # NDDD_TTL unset or "": none.
        df, spider, stats = self.make(NDDD_TTL="")
        self.assertIsNone(df.ttl)

    def test_bad_namespace_or_ttl(self):
        with self.assertRaises(ValueError) as cm:
            self.make(spider_name="my/spider")
        self.assertIn("NDDD_NAMESPACE is not set, so the crawl's nddd "
                      "namespace would be the spider's name, 'my/spider'",
                      str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            self.make(spider_name="x" * 65)
        self.assertIn("set NDDD_NAMESPACE", str(cm.exception))
        for value in ("a b", "x" * 65, "é", 7):
            with self.assertRaises(ValueError) as cm:
                self.make(NDDD_NAMESPACE=value)
            self.assertIn("NDDD_NAMESPACE must be at most 64 bytes",
                          str(cm.exception))
        for value in ("0", 0, "-1", "1.5", 1.5, "1h", True,
                      TTL_MAX + 1):
            with self.assertRaises(ValueError) as cm:
                self.make(NDDD_TTL=value)
            self.assertIn("NDDD_TTL must be a whole number of seconds",
                          str(cm.exception))
        df, spider, stats = self.make(NDDD_TTL=str(TTL_MAX))
        self.assertEqual(df.ttl, TTL_MAX)

    def test_token_limited_to_namespaces(self):
        # A token of the crawl's namespace; another namespace (the
        # spider's name, NDDD_NAMESPACE unset) is refused, request by
        # request, and NDDD_UNREACHABLE decides.
        from scrapy import Request
        token = "crawler-token-0123456789"
        tokens = os.path.join(tempfile.mkdtemp(prefix="nddd-py-tokens-"),
                              "tokens")
        self.addCleanup(shutil.rmtree, os.path.dirname(tokens), True)
        with open(tokens, "w") as f:
            f.write("%s write namespaces=news\n" % token)
        daemon = harness.Daemon("[auth]\ntokens_file = %s\n" % tokens)
        self.addCleanup(daemon.cleanup)
        daemon.start()
        old = os.environ.get("NDDD_TOKEN")
        os.environ["NDDD_TOKEN"] = token
        try:
            df, spider, stats = self.make(NDDD_ADDRESS=daemon.address,
                                          NDDD_NAMESPACE="news")
            self.assertTrue(self.schedule(df, spider,
                                          Request("http://k.test/x")))
            self.assertFalse(self.schedule(df, spider,
                                           Request("http://k.test/x")))
            with self.assertLogs("nddd.scrapy", logging.ERROR) as logs:
                df, spider, stats = self.make(NDDD_ADDRESS=daemon.address,
                                              NDDD_UNREACHABLE="closed")
                self.assertFalse(self.schedule(df, spider,
                                               Request("http://k.test/x")))
        finally:
            if old is None:
                del os.environ["NDDD_TOKEN"]
            else:
                os.environ["NDDD_TOKEN"] = old
        self.assertIn("refused to check <GET http://k.test/x>: "
                      "PERMISSION_DENIED", logs.output[0])
        self.assertEqual(stats.get_value("nddd/dropped"), 1)

    def test_tls_settings(self):
        from scrapy import Request
        certs = tempfile.mkdtemp(prefix="nddd-py-certs-")
        self.addCleanup(shutil.rmtree, certs, True)
        path = harness.make_certs(certs)
        tls_address = "127.0.0.1:%d" % harness.free_port()
        daemon = harness.Daemon(
            "[tls]\nlisten = %s\ncert = %s\nkey = %s\nclient_ca = %s\n"
            % (tls_address, path("server.pem"), path("server.key"),
               path("ca.pem")))
        self.addCleanup(daemon.cleanup)
        daemon.start()
        df, spider, stats = self.make(
            NDDD_ADDRESS=tls_address, NDDD_TLS_CA=path("ca.pem"),
            NDDD_TLS_CERT=path("crawler.pem"),
            NDDD_TLS_KEY=path("crawler.key"))
        self.assertTrue(df.client.tls)
        self.assertTrue(self.schedule(df, spider, Request("http://t.test/x")))
        self.assertFalse(self.schedule(df, spider,
                                       Request("http://T.TEST:80/x")))
        self.assertEqual(stats.get_value("nddd/new"), 1)
        self.assertEqual(stats.get_value("nddd/duplicate"), 1)
        with nddd.Client(daemon.address, namespace="test") as c:
            self.assertEqual(c.check_url("http://t.test/x").count, 2)
        # Without a client certificate nddd refuses the crawler: an
        # outage, decided by NDDD_UNREACHABLE, its reason logged.
        with self.assertLogs("nddd.scrapy", logging.ERROR) as logs:
            df, spider, stats = self.make(
                NDDD_ADDRESS=tls_address, NDDD_TLS=True,
                NDDD_TLS_CA=path("ca.pem"), NDDD_UNREACHABLE="closed")
            self.assertFalse(self.schedule(df, spider,
                                           Request("http://t.test/y")))
        self.assertIn("is unreachable (TLS", logs.output[0])
        self.assertEqual(stats.get_value("nddd/dropped"), 1)
        # A file that cannot be loaded stops the filter at once.
        with self.assertRaises(ValueError) as cm:
            self.make(NDDD_TLS_CA="/nonexistent/ca.pem")
        self.assertIn("/nonexistent/ca.pem", str(cm.exception))

    def test_durability_and_digests(self):
        from scrapy import Request
        df, spider, stats = self.make()
        self.assertIsNone(df.client.durability)
        self.assertFalse(df.client.digests)
        df, spider, stats = self.make(NDDD_DURABILITY="relaxed",
                                      NDDD_DIGESTS=True)
        self.assertEqual(df.client.durability, "relaxed")
        self.assertTrue(df.client.digests)
        self.assertTrue(self.schedule(df, spider,
                                      Request("http://d.test/x")))
        self.assertFalse(self.schedule(df, spider,
                                       Request("http://D.TEST:80/./x#y")))
        with self.assertLogs("nddd.scrapy", logging.ERROR) as logs:
            self.assertTrue(self.schedule(
                df, spider, FakeRequest("http://exa mple.com/")))
        self.assertIn("INVALID_ARGUMENT", logs.output[0])
        self.assertEqual(stats.get_value("nddd/new"), 1)
        self.assertEqual(stats.get_value("nddd/duplicate"), 1)
        self.assertEqual(stats.get_value("nddd/url_error"), 1)
        # Recorded as any submit is: by its canonical form.
        with nddd.Client(self.daemon.address, namespace="test") as c:
            self.assertEqual(c.check_url("http://d.test/x").count, 2)
        df, spider, stats = self.make(NDDD_DURABILITY="durable",
                                      NDDD_DIGESTS="false")
        self.assertEqual(df.client.durability, "durable")
        self.assertFalse(df.client.digests)


class TestBatchInProcess(InProcess, unittest.TestCase):
    """NdddBatchMiddleware given a callback's output as Scrapy gives it,
    its requests then scheduled (the daemon syncs every submit)."""

    def setUp(self):
        self.daemon = start_daemon(self, "")

    def make_batch(self, **settings):
        settings.setdefault("DUPEFILTER_CLASS",
                            "nddd.scrapy.NdddDupeFilter")
        df, spider, stats = self.make(**settings)
        mw = NdddBatchMiddleware.from_crawler(spider.crawler)
        mw.df = df                  # as the spider's opening does
        return df, mw, spider, stats

    def batch(self, mw, spider, output):
        """What mw passes on of a callback's output, as a list."""
        return list(self.passed(mw, spider, output))

    def passed(self, mw, spider, output):
        from scrapy.http import HtmlResponse
        return mw.process_spider_output(
            HtmlResponse("http://a.test/", body=b""), iter(output), spider)

    def test_one_call_per_response(self):
        from scrapy import FormRequest, Request
        df, mw, spider, stats = self.make_batch()
        x = Request("http://a.test/x")
        output = [x, {"item": 1}, Request("http://A.TEST:80/./x#y"),
                  Request("http://a.test/start", dont_filter=True),
                  FormRequest("http://a.test/x", formdata={"u": "me"}),
                  Request(DATA_URL), {"item": 2}, x,
                  Request("http://a.test/z")]
        with self.assertLogs("nddd.scrapy", logging.DEBUG) as logs:
            # All of it, in order.
            self.assertEqual(self.batch(mw, spider, output), output)
            self.assertEqual(url_submits(self.daemon), 1)
            self.assertEqual(
                [self.schedule(df, spider, r) for r in output
                 if isinstance(r, Request)],
                [True, False, True, True, True, False, True])
        # The filter took the answers: none was asked for again but x's
        # second scheduling (a request scheduled again is a duplicate).
        self.assertEqual(url_submits(self.daemon), 2)
        self.assertFalse(any(META_KEY in r.meta for r in output
                             if isinstance(r, Request)))
        self.assertEqual(stats.get_value("nddd/batches"), 1)
        self.assertEqual(stats.get_value("nddd/new"), 2)
        self.assertEqual(stats.get_value("nddd/duplicate"), 2)
        self.assertEqual(stats.get_value("nddd/url_error"), 1)
        self.assertEqual(stats.get_value("nddd/let_through"), 1)
        self.assertEqual(stats.get_value("dupefilter/filtered"), 2)
        self.assertIn("nddd refused the URL of <GET %s>: INVALID_ARGUMENT"
                      % DATA_URL, "\n".join(logs.output))
        with nddd.Client(self.daemon.address, namespace="test") as c:
            self.assertEqual(c.check_url("http://a.test/x").count, 3)
            self.assertFalse(c.check_url("http://a.test/start").seen)
        # A response without requests costs nothing.
        self.assertEqual(self.batch(mw, spider, [{"item": 3}]),
                         [{"item": 3}])
        self.assertEqual(url_submits(self.daemon), 2)

    def test_large_responses_split(self):
        from scrapy import Request
        df, mw, spider, stats = self.make_batch(NDDD_BATCH_SIZE=100)
        output = [Request("http://a.test/%d" % (i % 200)) for i in range(250)]
        self.batch(mw, spider, output)
        self.assertEqual(url_submits(self.daemon), 3)
        scheduled = [self.schedule(df, spider, r) for r in output]
        # Every URL is scheduled once.  Which of a repeated URL's two
        # requests is, is not fixed: they went in different url_submit
        # requests in flight together, which nddd may carry out in any
        # order.
        self.assertEqual(scheduled[50:200], [True] * 150)
        self.assertEqual([scheduled[i] + scheduled[200 + i]
                          for i in range(50)], [1] * 50)
        self.assertEqual(url_submits(self.daemon), 3)
        self.assertEqual(stats.get_value("nddd/batches"), 1)

    def test_answer_is_for_its_url(self):
        from scrapy import Request
        df, mw, spider, stats = self.make_batch()
        self.assertTrue(self.schedule(df, spider,
                                      Request("http://a.test/old")))
        new = Request("http://a.test/new")
        self.batch(mw, spider, [new])
        # Copies carry the answer (Request.replace copies meta); it holds
        # for the URL it was given for only.
        moved = new.replace(url="http://a.test/old")
        self.assertIn(META_KEY, moved.meta)
        self.assertFalse(self.schedule(df, spider, moved))
        self.assertTrue(self.schedule(df, spider, new.replace(priority=1)))
        self.assertEqual(url_submits(self.daemon), 3)

    def test_outage_and_recovery(self):
        from scrapy import Request
        df, mw, spider, stats = self.make_batch(
            NDDD_RETRY_INTERVAL=0.5, NDDD_UNREACHABLE="closed")

        def response(i):
            output = [Request("http://a.test/%d/%d" % (i, j))
                      for j in range(4)]
            self.batch(mw, spider, output)
            return [self.schedule(df, spider, r) for r in output]

        self.assertEqual(response(0), [True] * 4)
        self.daemon.kill()
        with self.assertLogs("nddd.scrapy", logging.DEBUG) as logs:
            self.assertEqual(response(1), [False] * 4)
            self.assertEqual(response(2), [False] * 4)
        errors = [m for m in logs.output if m.startswith("ERROR")]
        self.assertEqual(len(errors), 1)  # once per outage
        self.assertIn("is unreachable", errors[0])
        # The second response was decided without trying nddd.
        self.assertEqual(stats.get_value("nddd/batches"), 2)
        self.assertEqual(stats.get_value("nddd/unreachable"), 8)
        self.assertEqual(stats.get_value("nddd/dropped"), 8)
        self.daemon.start()
        time.sleep(0.6)
        with self.assertLogs("nddd.scrapy", logging.WARNING) as logs:
            self.assertEqual(response(3), [True] * 4)
        self.assertIn("answers again: 8 request(s) were dropped",
                      logs.output[0])
        self.assertEqual(stats.get_value("nddd/batches"), 3)
        self.assertEqual(url_submits(self.daemon), 1)  # since its restart

    def test_refused_batch(self):
        from scrapy import Request
        daemon = start_daemon(self, "[server]\nmax_batch = 10\n")
        df, mw, spider, stats = self.make_batch(
            NDDD_ADDRESS=daemon.address)
        output = [Request("http://a.test/%d" % (i % 12)) for i in range(15)]
        with self.assertLogs("nddd.scrapy", logging.WARNING) as logs:
            self.batch(mw, spider, output)
        self.assertIn("refused a batch of 15 URL(s): RESOURCE_EXHAUSTED",
                      logs.output[0])
        # Each request is then asked about alone.
        self.assertEqual([self.schedule(df, spider, r) for r in output],
                         [True] * 12 + [False] * 3)
        self.assertEqual(url_submits(daemon), 1 + 15)
        self.assertIsNone(stats.get_value("nddd/unreachable"))
        # At the daemon's max_batch, they go in two requests.
        df, mw, spider, stats = self.make_batch(
            NDDD_ADDRESS=daemon.address, NDDD_BATCH_SIZE=10)
        output = [Request("http://b.test/%d" % i) for i in range(15)]
        self.batch(mw, spider, output)
        self.assertEqual(url_submits(daemon), 16 + 2)
        self.assertEqual([self.schedule(df, spider, r) for r in output],
                         [True] * 15)
        self.assertEqual(url_submits(daemon), 18)

    def test_namespace_and_ttl(self):
        # The batches go to the crawl's namespace, with its time to live.
        from scrapy import Request
        df, mw, spider, stats = self.make_batch(NDDD_NAMESPACE="batch",
                                                NDDD_TTL=90)
        output = [Request("http://a.test/1"), Request("http://a.test/2")]
        self.batch(mw, spider, output)
        self.assertEqual(url_submits(self.daemon), 1)
        self.assertEqual([self.schedule(df, spider, r) for r in output],
                         [True, True])
        self.assertEqual(url_submits(self.daemon), 1)
        with nddd.Client(self.daemon.address, namespace="batch") as c:
            for r in c.check_urls(["http://a.test/1", "http://a.test/2"],
                                  with_times=True):
                self.assertEqual(r.count, 1)
                self.assertEqual(r.expires_ms - r.first_seen_ms, 90000)
            self.assertFalse(c.check_url("http://a.test/1",
                                         namespace="test").seen)

    def test_callback_error(self):
        # What the callback gave before failing goes on, then its error.
        from scrapy import Request
        df, mw, spider, stats = self.make_batch()
        a, b = Request("http://a.test/a"), Request("http://a.test/b")

        def callback():
            yield a
            yield {"item": 1}
            yield b
            raise ValueError("parse error")

        given = []
        with self.assertRaisesRegex(ValueError, "parse error"):
            for r in self.passed(mw, spider, callback()):
                given.append(r)
        self.assertEqual(given, [a, {"item": 1}, b])
        self.assertEqual(url_submits(self.daemon), 1)
        self.assertEqual(a.meta[META_KEY].count, 1)
        self.assertEqual(b.meta[META_KEY].count, 1)

    def test_async_callback(self):
        from scrapy import Request
        from scrapy.http import HtmlResponse
        df, mw, spider, stats = self.make_batch()
        output = [Request("http://a.test/a"), {"item": 1},
                  Request("http://A.test/a")]

        async def callback():
            for r in output:
                yield r

        async def run():
            return [r async for r in mw.process_spider_output_async(
                HtmlResponse("http://a.test/", body=b""), callback(),
                spider)]

        self.assertEqual(asyncio.run(run()), output)
        self.assertEqual(url_submits(self.daemon), 1)
        self.assertEqual([self.schedule(df, spider, r)
                          for r in (output[0], output[2])], [True, False])
        self.assertEqual(url_submits(self.daemon), 1)

    def test_needs_the_filter(self):
        from scrapy.utils.test import get_crawler
        with self.assertRaisesRegex(ValueError, "NdddBatchMiddleware needs "
                                    "DUPEFILTER_CLASS"):
            NdddBatchMiddleware.from_crawler(get_crawler())


if __name__ == "__main__":
    unittest.main()

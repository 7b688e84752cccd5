#!/usr/bin/python3
"""Pages per second of Scrapy crawls deduplicated by nddd and by Scrapy's
own filter, in the same run.

    PYTHONPATH=clients/python tests/bench/scrapy_bench.py --bin BIN_DIR

A site of --pages pages (default 1,500), each with --links links (default
100) to pages drawn at random (and to the next page, so that every page is
reachable), is generated into a temporary directory and served on loopback
through the counting proxy of tests/python/test_scrapy.py, its links spelt
the eight ways that test spells them (case of scheme and host, explicit
default port, dot segments, fragments, escaped characters: eight URLs, one
page).  Each crawl is `scrapy runspider tests/python/crawl_spider.py` from
page 0, with --concurrency requests in flight (default 32, for the site's
one host too), with:

  scrapy       Scrapy's default filter (RFPDupeFilter: request
               fingerprints, in memory)
  nddd-batch   NdddDupeFilter and NdddBatchMiddleware (one url_submit per
               response), on a fresh nddd with sync = full (its default:
               every answer waits for the disk)
  nddd-filter  NdddDupeFilter alone (one url_submit per request), on a
               fresh nddd with sync = full

The nddd crawls record their URLs in the namespace a crawl with default
settings uses, the spider's name ("crawl": NDDD_NAMESPACE unset), unless
--namespace names one ("" for nddd's default namespace, where the filter
recorded every crawl's URLs before NDDD_NAMESPACE existed).  The output
says which, as the filter logged it.

For each crawl: pages/s (the pages fetched, over the crawl's
elapsed_time_seconds in Scrapy's stats, from the spider's opening to its
closing), fetches in all and per page, the pages fetched more than once,
and for nddd the url_submit requests it answered (its /metrics).  Page 0,
the start page, is fetched once more than the links to it make it: Scrapy
never gives start requests to a dupe filter, so the first link found to it
is not taken for a duplicate.  --repeat runs each crawl that
many times (in turns); the summary compares medians of pages/s and of
fetches/s, nddd's over Scrapy's filter's, from this run.
"""

import argparse
import http.client
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

from test_scrapy import SiteProxy, page_link, page_path  # noqa: E402

SPIDER = os.path.join(ROOT, "tests", "python", "crawl_spider.py")
FILTERS = ("scrapy", "nddd-batch", "nddd-filter")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_site(root, pages, links):
    rng = random.Random(1)
    for i in range(pages):
        targets = [(i + 1) % pages] + [rng.randrange(pages)
                                       for _ in range(links - 1)]
        path = os.path.join(root, page_path(i).lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("<html><head><title>page %d</title></head><body>\n%s\n"
                    "</body></html>\n" % (i, "\n".join(
                        '<p><a href="%s">link</a></p>'
                        % page_link(i, j, i + k)
                        for k, j in enumerate(targets))))


class Nddd:
    """A fresh nddd, durable (sync = full), with its /metrics."""

    def __init__(self, bin_dir, tmp, name):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        self.address = "127.0.0.1:%d" % free_port()
        self.metrics = free_port()
        conf = os.path.join(self.dir, "nddd.conf")
        with open(conf, "w") as f:
            f.write("[server]\nlisten = %s\n[store]\ndata_dir = %s\n"
                    "sync = full\n[metrics]\nlisten = 127.0.0.1:%d\n"
                    % (self.address, os.path.join(self.dir, "data"),
                       self.metrics))
        self.log = open(os.path.join(self.dir, "nddd.log"), "wb")
        root = ["--allow-root"] if os.geteuid() == 0 else []
        self.proc = subprocess.Popen(
            [os.path.join(bin_dir, "nddd"), "-c", conf] + root, cwd=ROOT,
            stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                sys.exit("scrapy_bench: nddd exited (%s); see %s"
                         % (self.proc.returncode, self.log.name))
            try:
                socket.create_connection(("127.0.0.1", self.metrics),
                                         0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit("scrapy_bench: nddd does not listen")
                time.sleep(0.05)

    def url_submits(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.metrics,
                                          timeout=10)
        try:
            conn.request("GET", "/metrics")
            body = conn.getresponse().read().decode()
        finally:
            conn.close()
        return int(re.search(r'^nddd_requests_total\{op="url_submit"\} '
                             r'(\d+)$', body, re.M).group(1))

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


def crawl(args, proxy, site, name, nddd):
    """One crawl with the filter name; returns its figures."""
    out = os.path.join(site, "crawl.json")
    cmd = [sys.executable, "-m", "scrapy", "runspider", SPIDER,
           "-a", "start=http://site.test" + page_path(0), "-a", "out=" + out,
           "-s", "LOG_LEVEL=INFO", "-s", "TELNETCONSOLE_ENABLED=False",
           "-s", "REQUEST_FINGERPRINTER_IMPLEMENTATION=2.7",
           "-s", "CONCURRENT_REQUESTS=%d" % args.concurrency,
           "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=%d" % args.concurrency]
    if nddd is not None:
        cmd += ["-s", "DUPEFILTER_CLASS=nddd.scrapy.NdddDupeFilter",
                "-s", "NDDD_ADDRESS=" + nddd.address]
        if args.namespace is not None:
            cmd += ["-s", "NDDD_NAMESPACE=" + args.namespace]
    if name == "nddd-batch":
        cmd += ["-s", "SPIDER_MIDDLEWARES=" + json.dumps(
            {"nddd.scrapy.NdddBatchMiddleware": 100})]
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("no_proxy", "http_proxy", "https_proxy",
                                "all_proxy")}
    env["http_proxy"] = proxy.proxy_url
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.join(ROOT, "clients", "python"),
                    env.get("PYTHONPATH")) if p)
    proxy.take()
    p = subprocess.run(cmd, cwd=site, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    fetched = proxy.take()
    if p.returncode != 0 or not os.path.exists(out):
        sys.exit("scrapy_bench: the %s crawl failed:\n%s"
                 % (name, p.stdout[-5000:]))
    with open(out) as f:
        result = json.load(f)
    os.unlink(out)
    seconds = result["stats"]["elapsed_time_seconds"]
    pages = len(fetched)
    fetches = sum(fetched.values())
    figures = {
        "pages": pages, "fetches": fetches,
        "fetches_per_page": "%.2f" % (fetches / pages),
        "pages_fetched_more_than_once": sum(1 for n in fetched.values()
                                            if n > 1),
        "seconds": "%.1f" % seconds,
        "pages_per_s": "%.1f" % (pages / seconds),
        "fetches_per_s": "%.1f" % (fetches / seconds),
    }
    if nddd is not None:
        figures["url_submits"] = nddd.url_submits()
        # The namespace the filter says it used.
        m = re.search(r"Checking request URLs with nddd at \S+ in "
                      r"(?:namespace '([^']*)'|(the default namespace))",
                      p.stdout)
        if m is None:
            sys.exit("scrapy_bench: the %s crawl does not say its "
                     "namespace:\n%s" % (name, p.stdout[-5000:]))
        namespace = m.group(1) or ""
        if namespace != expected_namespace(args):
            sys.exit("scrapy_bench: the %s crawl used the namespace %r, "
                     "not %r" % (name, namespace, expected_namespace(args)))
        figures["namespace"] = repr(namespace)
    return figures


def expected_namespace(args):
    return "crawl" if args.namespace is None else args.namespace


def namespace_words(args):
    if args.namespace is None:
        return "%r, the spider's name (NDDD_NAMESPACE unset)" % (
            expected_namespace(args))
    if args.namespace == "":
        return "'', the default namespace (NDDD_NAMESPACE = \"\")"
    return "%r (NDDD_NAMESPACE)" % args.namespace


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="build/release/bin",
                    help="directory holding nddd")
    ap.add_argument("--pages", type=int, default=1500,
                    help="pages of the site (default 1500)")
    ap.add_argument("--links", type=int, default=100,
                    help="links per page (default 100)")
    ap.add_argument("--concurrency", type=int, default=32,
                    help="requests in flight (default 32)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="crawls with each filter (default 1)")
    ap.add_argument("--namespace", default=None,
                    help="NDDD_NAMESPACE of the nddd crawls (default: "
                    "unset, the spider's name, \"crawl\"; \"\": nddd's "
                    "default namespace)")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="nddd-scrapybench-")
    site = os.path.join(tmp, "site")
    write_site(site, args.pages, args.links)
    proxy = SiteProxy(site)
    runs = {name: [] for name in FILTERS}
    try:
        print("== scrapy crawls: %d pages x %d links, %d requests in "
              "flight; nddd namespace %s"
              % (args.pages, args.links, args.concurrency,
                 namespace_words(args)), flush=True)
        for rep in range(args.repeat):
            for name in FILTERS:
                nddd = (Nddd(args.bin, tmp, "%s-%d" % (name, rep))
                        if name != "scrapy" else None)
                try:
                    figures = crawl(args, proxy, site, name, nddd)
                finally:
                    if nddd is not None:
                        nddd.close()
                runs[name].append(figures)
                print("%s run=%d %s" % (name, rep + 1, " ".join(
                    "%s=%s" % kv for kv in figures.items())), flush=True)
    finally:
        proxy.shutdown()
        proxy.server_close()
        shutil.rmtree(tmp, ignore_errors=True)

    print("== summary: medians of %d run(s); ratio = nddd / scrapy's "
          "filter, same run" % args.repeat)

    def median(name, key):
        return statistics.median(float(f[key]) for f in runs[name])

    for name in FILTERS:
        parts = []
        for key, what in (("pages_per_s", "pages/s"),
                          ("fetches_per_s", "fetches/s")):
            rate = median(name, key)
            part = "%.1f %s" % (rate, what)
            if name != "scrapy":
                part += " (ratio %.2f)" % (rate / median("scrapy", key))
            parts.append(part)
        print("%s: %s, %.2f fetches per page" % (
            name, ", ".join(parts), median(name, "fetches_per_page")))

if __name__ == "__main__":
    main()

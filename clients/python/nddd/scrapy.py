"""A Scrapy dupe filter that asks nddd, and a spider middleware that asks
it about all the requests of a response at once.

In a Scrapy project's settings::

    DUPEFILTER_CLASS = "nddd.scrapy.NdddDupeFilter"
    SPIDER_MIDDLEWARES = {"nddd.scrapy.NdddBatchMiddleware": 100}
    NDDD_ADDRESS = "127.0.0.1:6464"
    NDDD_NAMESPACE = "news"   # default: the spider's name; "": nddd's default
    NDDD_TTL = 7 * 86400      # seen for a week, then new again; default: none

Each request the scheduler is given is submitted to nddd by URL
(url_submit); nddd records it, and the request is filtered when nddd says
the URL was recorded before (its count is above 1).  nddd compares URLs in
their canonical form (RFC 3986 normalization, default port and fragment
dropped), remembers them across crawls and processes, and can forget them
(``nddctl url-delete -n NAMESPACE URL``) so that they are fetched again.

A change of default: each crawl records its URLs in an nddd namespace of
its own, NDDD_NAMESPACE, by default the spider's name, so that spiders
sharing one nddd do not filter each other's pages.  Earlier versions of
this filter recorded every crawl's URLs in nddd's default namespace: a
crawl that should go on from what they recorded sets
``NDDD_NAMESPACE = ""`` (the default namespace); otherwise it starts over
in its spider's namespace and fetches every page again.  A spider whose
name nddd does not take as a namespace (at most 64 bytes of ASCII
letters, digits, '.', '_' and '-') stops the crawl as it opens, with an
error naming NDDD_NAMESPACE: set it.  With NDDD_TTL, a URL recorded as
new is seen for that many seconds, then fetched again by the next crawl
that finds a link to it; the links found meanwhile do not postpone that.

Scrapy asks the filter about one request at a time and waits for the
answer: alone, the filter costs a round trip to nddd per request, and with
nddd's durable default (``[store] sync = full``) the wait for a disk sync.
NdddBatchMiddleware (for this filter only) takes everything a response's
callback gives, submits in one call the URLs of the requests the filter
would check, then passes it all on in its order (items unchanged), each of
those requests carrying nddd's answer in ``meta["nddd"]``, which the
filter takes instead of asking: a round trip and a disk sync per response.
More than NDDD_BATCH_SIZE such requests go in several url_submit requests,
in flight together (which nddd may carry out in any order: of a URL in
two of them, either request may be the one scheduled).  An answer serves once, and only its URL: a request
scheduled again is asked about again (it is a duplicate), and so is a copy
made for another URL (Request.replace copies meta).  Requests left without
an answer (nddd unreachable, or refusing the batch) are decided by the
filter as without the middleware.  Its order, 100, puts it after the
middlewares that drop requests (OffsiteMiddleware, UrlLengthMiddleware,
DepthMiddleware: a spider's output goes through middlewares from the
highest number down), so that nddd records only the URLs the scheduler is
given.  Start requests do not go through it: those of start_urls are
dont_filter (see below), others are checked by the filter one at a time.

With JOBDIR, Scrapy keeps the crawl's queue there and nddd the URLs seen:
a crawl stopped and resumed fetches each page once (and its start URLs
once per run, as they are dont_filter).

Settings:

``NDDD_ADDRESS`` (default "127.0.0.1:6464")
    the daemon, "HOST:PORT" or "[IPv6]:PORT".
``NDDD_SHARDS`` (default: none)
    a shard list, "HOST:PORT,HOST:PORT,..." (or a list), instead of
    NDDD_ADDRESS: the URLs are routed over several daemons as
    nddd.ShardedClient routes them (docs/sharding.md), libnddd.so needed;
    a shard that is down leaves its URLs to NDDD_UNREACHABLE.
``NDDD_NAMESPACE`` (default: the spider's name)
    the nddd namespace the crawl's URLs are recorded in and checked
    against: at most 64 bytes of ASCII letters, digits, '.', '_' and '-';
    "" is the default namespace (where versions before namespaces recorded
    everything).  Another value, or a spider name that is not a valid
    namespace when this is not set, stops the crawl at its opening.
``NDDD_TTL`` (default: none)
    seconds (a whole number, 1 to 100 years) a URL recorded as new is
    seen: after that nddd answers it is new again, and the next request
    for it is fetched and recorded for as long again.  The time runs from
    the submit that recorded the URL; duplicates do not postpone it.
    Unset (or ""): the namespace's default time to live (``nddctl ns-set
    NAME --default-ttl SECONDS``), none unless one was set.  Another value
    stops the crawl at its opening.
``NDDD_TIMEOUT`` (default 5.0)
    seconds to connect and to wait for each answer.  The scheduler waits
    for the answer (Scrapy calls the filter synchronously), so this bounds
    how long a slow or unreachable daemon can stall the crawl.
``NDDD_UNREACHABLE`` (default "open")
    what happens to a request nddd cannot decide: "open" lets it through
    (it may be a duplicate), "closed" drops it.  Applies when nddd cannot
    be reached, times out or refuses the request as a whole, and when it
    refuses the request's URL (a URL that is not an absolute http, https or
    ftp URL, such as data: or file:).  Logged at ERROR either way.
``NDDD_RETRY_INTERVAL`` (default 10.0)
    after nddd could not be reached, seconds during which requests are
    decided by NDDD_UNREACHABLE without trying nddd again.
``NDDD_METHODS`` (default ["GET"])
    request methods checked by URL with nddd.  Requests with other methods
    (a POST of a form to a URL that was fetched with GET) are not the same
    as a GET of their URL: they are checked as Scrapy's own filter does, by
    request fingerprint, in memory, for this crawl only.
``NDDD_DURABILITY`` (default: the daemon's)
    "durable": nddd answers once a URL is recorded on disk; "relaxed":
    once it is recorded and written to the operating system, not yet on
    disk (it survives a crash of nddd, not of the machine), which spares
    the crawl a disk sync per request (per response with
    NdddBatchMiddleware).
``NDDD_BATCH_SIZE`` (default 1000)
    most URLs per url_submit request of NdddBatchMiddleware; at most the
    daemon's ``[server] max_batch``.
``NDDD_DIGESTS`` (default False)
    canonicalize and hash each URL here, with the daemon's own code
    (libnddd.so, found at $NDDD_LIBRARY, next to the package, in the
    source tree's build/release, or in the system's library path), and
    send its digest: less work for nddd.  Without libnddd.so the filter
    cannot start.
``NDDD_TLS`` (default False)
    speak TLS to nddd's ``[tls] listen``, verifying its certificate and
    its name; any of the NDDD_TLS_* settings below turns it on too.
``NDDD_TLS_CA`` (default: the system's CAs)
    the CA certificates (PEM) nddd's certificate must verify against.
``NDDD_TLS_CERT``, ``NDDD_TLS_KEY`` (default: none)
    the crawler's client certificate and key (PEM), for an nddd that
    requires client certificates (``[tls] client_ca``).
``NDDD_TLS_SERVER_HOSTNAME`` (default: the host of NDDD_ADDRESS)
    the name nddd's certificate must carry.
``DUPEFILTER_DEBUG`` (default False)
    log every filtered duplicate, not only the first.

A token, for an nddd with ``[auth] tokens_file``, comes from the
environment variable NDDD_TOKEN (as for nddd.Client); a token limited to
namespaces must allow NDDD_NAMESPACE (the spider's name unless set), or
nddd refuses every request (PERMISSION_DENIED, decided by
NDDD_UNREACHABLE).  A certificate
that does not verify, or one nddd refuses, counts as nddd being
unreachable (NDDD_UNREACHABLE decides), and its reason is logged.

Requests with ``dont_filter=True`` are never filtered and not recorded:
Scrapy's scheduler does not call the filter for them, and the filter
answers "not seen" without asking nddd if another scheduler does.

Stats: ``dupefilter/filtered`` (duplicates filtered, as Scrapy's own
filter counts them), ``nddd/new`` and ``nddd/duplicate`` (nddd's answers),
``nddd/unreachable`` (requests decided without nddd's answer because it
could not be reached, timed out or refused the request),
``nddd/url_error`` (requests whose URL nddd refused), ``nddd/let_through``
and ``nddd/dropped`` (decisions taken by NDDD_UNREACHABLE); and of
NdddBatchMiddleware, ``nddd/batches`` (its url_submit calls, one per
response with requests to check, none while nddd is unreachable).
"""

import logging
import re
import time
import weakref
from typing import Optional

from scrapy import signals
from scrapy.dupefilters import BaseDupeFilter
from scrapy.http import Request
from scrapy.utils.misc import load_object
from scrapy.utils.request import RequestFingerprinter, referer_str

from .client import (DEFAULT_ADDRESS, DEFAULT_BATCH_SIZE, TTL_MAX, Client,
                     _durability, _namespace)
from .errors import NdddConnectionError, NdddRequestError
from .results import Code
from .shards import ShardedClient

logger = logging.getLogger(__name__)


class _ShardList:
    """A ShardedClient made when first needed, for the filter: its open
    and its calls find the shards down (NdddConnectionError) rather than
    its construction."""

    def __init__(self, addresses, **kwargs):
        self.addresses = list(addresses)
        self.address = ",".join(self.addresses)
        self.tls = bool(kwargs.get("tls"))
        self.durability = kwargs.get("durability")
        self.digests = bool(kwargs.get("digests"))
        self._kwargs = kwargs
        self._shards = None

    def connect(self):
        if self._shards is None:
            self._shards = ShardedClient(self.addresses, **self._kwargs)
        return self._shards

    def close(self):
        if self._shards is not None:
            self._shards.close()
            self._shards = None

    def submit_urls(self, urls, **kwargs):
        return self.connect().submit_urls(urls, **kwargs)

DEFAULT_TIMEOUT = 5.0
DEFAULT_RETRY_INTERVAL = 10.0
DEFAULT_METHODS = ("GET",)
UNREACHABLE_CHOICES = ("open", "closed")
#: The request.meta key under which NdddBatchMiddleware leaves nddd's
#: answer (a SubmitResult) for the filter.
META_KEY = "nddd"

_NAMESPACE_RULE = ("at most 64 bytes of ASCII letters, digits, '.', '_' "
                   "and '-'")


def namespace_setting(value, spider_name: Optional[str] = None) -> str:
    """The namespace NDDD_NAMESPACE names: value, or spider_name when value
    is None (the setting is not set); "" is the default namespace.  Raises
    ValueError, naming NDDD_NAMESPACE, for a name nddd would refuse."""
    if value is None:
        if spider_name is None:
            raise ValueError("NDDD_NAMESPACE is not set and there is no "
                             "spider to take the name of: set it (\"\" for "
                             "nddd's default namespace)")
        if not isinstance(spider_name, str) or not _valid_namespace(
                spider_name):
            raise ValueError(
                "NDDD_NAMESPACE is not set, so the crawl's nddd namespace "
                "would be the spider's name, %r, which nddd does not take "
                "as a namespace (%s): set NDDD_NAMESPACE (\"\" for nddd's "
                "default namespace)" % (spider_name, _NAMESPACE_RULE))
        return spider_name
    if not isinstance(value, str) or not _valid_namespace(value):
        raise ValueError("NDDD_NAMESPACE must be %s (\"\": nddd's default "
                         "namespace), not %r" % (_NAMESPACE_RULE, value))
    return value


def _valid_namespace(name: str) -> bool:
    try:
        _namespace(name)
    except (TypeError, ValueError):
        return False
    return True


def ttl_setting(value) -> Optional[int]:
    """The seconds NDDD_TTL says (a whole number from 1 to TTL_MAX, or a
    string of one), None when it is not set or "".  Raises ValueError,
    naming NDDD_TTL, for another value."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    seconds = None
    if isinstance(value, str) and re.fullmatch(r"[0-9]+", value.strip()):
        seconds = int(value.strip())
    elif isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    if seconds is None or not 1 <= seconds <= TTL_MAX:
        raise ValueError("NDDD_TTL must be a whole number of seconds from 1 "
                         "to %d (100 years), or unset (the namespace's "
                         "default), not %r" % (TTL_MAX, value))
    return seconds


class NdddDupeFilter(BaseDupeFilter):
    """Filters requests whose URL nddd has recorded before.  See the module
    documentation for its settings and stats."""

    def __init__(self, address: str = DEFAULT_ADDRESS,
                 timeout: float = DEFAULT_TIMEOUT,
                 unreachable: str = "open",
                 retry_interval: float = DEFAULT_RETRY_INTERVAL,
                 methods=DEFAULT_METHODS, debug: bool = False, *,
                 durability: Optional[str] = None, digests: bool = False,
                 batch_size: int = DEFAULT_BATCH_SIZE,
                 namespace: str = "", ttl: Optional[int] = None,
                 tls: bool = False, tls_ca: Optional[str] = None,
                 tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None,
                 tls_server_hostname: Optional[str] = None,
                 shards=None,
                 stats=None, fingerprinter=None, spider_source=None):
        unreachable = str(unreachable).strip().lower()
        if unreachable not in UNREACHABLE_CHOICES:
            raise ValueError("NDDD_UNREACHABLE must be \"open\" or "
                             "\"closed\", not %r" % unreachable)
        if isinstance(durability, str) and not durability.strip():
            durability = None
        try:
            _durability(durability)
        except ValueError as e:
            raise ValueError("NDDD_DURABILITY: %s" % e) from None
        #: The nddd namespace of the crawl's URLs ("": the default one).
        self.namespace = namespace_setting(namespace)
        #: The seconds a URL recorded as new is seen (None: the
        #: namespace's default).
        self.ttl = ttl_setting(ttl)
        if isinstance(shards, str):
            shards = [a.strip() for a in shards.split(",") if a.strip()]
        options = dict(timeout=timeout, durability=durability,
                       digests=digests, batch_size=batch_size, tls=tls,
                       ca_file=tls_ca or None, cert_file=tls_cert or None,
                       key_file=tls_key or None,
                       server_hostname=tls_server_hostname or None)
        try:
            self.client = (_ShardList(shards, **options) if shards
                           else Client(address, **options))
        except ValueError as e:
            raise ValueError("nddd settings (NDDD_ADDRESS, NDDD_TIMEOUT, "
                             "NDDD_BATCH_SIZE, NDDD_TLS_*): %s" % e) from None
        self.address = self.client.address
        self.fail_open = unreachable == "open"
        self.retry_interval = retry_interval
        self.methods = frozenset(m.upper() for m in methods)
        self.debug = debug
        self.logdupes = True
        self.stats = stats
        self.fingerprinter = fingerprinter or RequestFingerprinter()
        self._spider_source = spider_source
        self._fingerprints = set()      # requests of other methods
        self._dropped = weakref.WeakSet()  # dropped for an error
        self._down_since: Optional[float] = None
        self._retry_at = 0.0
        self._undecided = 0             # requests decided during an outage

    @classmethod
    def from_settings(cls, settings, *, fingerprinter=None, stats=None,
                      spider_source=None, spider_name=None):
        """The filter the settings describe; spider_name is the namespace
        when NDDD_NAMESPACE is not set."""
        return cls(
            address=settings.get("NDDD_ADDRESS", DEFAULT_ADDRESS),
            timeout=settings.getfloat("NDDD_TIMEOUT", DEFAULT_TIMEOUT),
            unreachable=settings.get("NDDD_UNREACHABLE", "open"),
            retry_interval=settings.getfloat("NDDD_RETRY_INTERVAL",
                                             DEFAULT_RETRY_INTERVAL),
            methods=settings.getlist("NDDD_METHODS", list(DEFAULT_METHODS)),
            debug=settings.getbool("DUPEFILTER_DEBUG"),
            durability=settings.get("NDDD_DURABILITY"),
            digests=settings.getbool("NDDD_DIGESTS", False),
            batch_size=settings.getint("NDDD_BATCH_SIZE",
                                       DEFAULT_BATCH_SIZE),
            namespace=namespace_setting(settings.get("NDDD_NAMESPACE"),
                                        spider_name),
            ttl=settings.get("NDDD_TTL"),
            tls=settings.getbool("NDDD_TLS", False),
            tls_ca=settings.get("NDDD_TLS_CA"),
            tls_cert=settings.get("NDDD_TLS_CERT"),
            tls_key=settings.get("NDDD_TLS_KEY"),
            tls_server_hostname=settings.get("NDDD_TLS_SERVER_HOSTNAME"),
            shards=settings.get("NDDD_SHARDS"),
            fingerprinter=fingerprinter, stats=stats,
            spider_source=spider_source)

    @classmethod
    def from_crawler(cls, crawler):
        return cls.from_settings(
            crawler.settings,
            fingerprinter=getattr(crawler, "request_fingerprinter", None),
            stats=crawler.stats,
            spider_source=lambda: getattr(crawler, "spider", None),
            # Scrapy makes the spider before the scheduler and its filter.
            spider_name=getattr(getattr(crawler, "spider", None), "name",
                                None))

    def open(self) -> None:
        """Connects to nddd to say early whether it answers; a crawl starts
        either way."""
        try:
            self.client.connect()
        except NdddConnectionError as e:
            self._went_down(e)
            return
        logger.info("Checking request URLs with nddd at %s%s in %s (%s, "
                    "unreachable: %s, durability: %s%s)", self.address,
                    " over TLS" if self.client.tls else "",
                    "namespace %r" % self.namespace if self.namespace
                    else "the default namespace",
                    "time to live: %d s" % self.ttl if self.ttl
                    else "time to live: the namespace's",
                    "open" if self.fail_open else "closed",
                    self.client.durability or "the daemon's",
                    ", as digests" if self.client.digests else "",
                    extra=self._extra())

    def close(self, reason: str) -> None:
        self.client.close()
        if self._down_since is not None:
            logger.warning(
                "nddd at %s was unreachable for the last %.1f s of the "
                "crawl: %d request(s) were %s", self.address,
                time.monotonic() - self._down_since, self._undecided,
                self._outcome(), extra=self._extra())

    def request_seen(self, request: Request) -> bool:
        if request.dont_filter:
            return False
        if request.method.upper() not in self.methods:
            fp = self.fingerprinter.fingerprint(request)
            if fp in self._fingerprints:
                return True
            self._fingerprints.add(fp)
            return False
        # NdddBatchMiddleware's answer serves once: a request scheduled
        # again is a duplicate, as nddd would say.  It is copied with meta
        # (Request.replace) into requests for other URLs, which it does not
        # answer for.
        result = request.meta.pop(META_KEY, None)
        if result is None or result.url != request.url:
            if self._holding_off():
                return self._undecided_request(request)
            try:
                result = self._submit([request.url])[0]
            except (NdddConnectionError, NdddRequestError) as e:
                if self._outage(e):
                    return self._undecided_request(request)
                self._inc("nddd/unreachable")
                logger.error("nddd at %s refused to check %s: %s; %s",
                             self.address, request, e, self._decision(),
                             extra=self._extra())
                return self._decide(request)
            self._answered()
        if result.error is not None:
            self._inc("nddd/url_error")
            logger.error("nddd refused the URL of %s: %s; %s", request,
                         result.error, self._decision(),
                         extra=self._extra())
            return self._decide(request)
        if result.count > 1:
            self._inc("nddd/duplicate")
            return True
        self._inc("nddd/new")
        return False

    def submit_requests(self, requests) -> None:
        """Submits the URLs of those of requests that request_seen checks
        with nddd, in one call (several url_submit requests in flight when
        there are more than the client's batch_size), and leaves each
        answer in its request's meta for request_seen.  Requests left
        without an answer (nddd unreachable, or refusing the batch) are
        decided by request_seen as if this had not been called."""
        # A request given twice is submitted once: the second time it is
        # scheduled it is a duplicate.
        checked = list(dict.fromkeys(
            r for r in requests
            if not r.dont_filter and r.method.upper() in self.methods))
        if not checked or self._holding_off():
            return
        self._inc("nddd/batches")
        try:
            results = self._submit([r.url for r in checked])
        except (NdddConnectionError, NdddRequestError) as e:
            results = e.results or ()
            if not self._outage(e):
                logger.warning("nddd at %s refused a batch of %d URL(s): "
                               "%s; checking them one request at a time",
                               self.address, len(checked), e,
                               extra=self._extra())
        else:
            self._answered()
        for request, result in zip(checked, results):
            if result is not None:
                request.meta[META_KEY] = result

    def _submit(self, urls) -> list:
        """nddd's answers for urls: every URL this filter checks is
        submitted here, in the crawl's namespace, with its time to live."""
        return self.client.submit_urls(urls, namespace=self.namespace,
                                       ttl=self.ttl)

    def log(self, request: Request, spider) -> None:
        if request in self._dropped:
            # Dropped for an error, already logged: not a duplicate.
            self._dropped.discard(request)
            return
        if self.debug:
            msg = ("Filtered duplicate request: %(request)s "
                   "(referer: %(referer)s)")
            args = {"request": request, "referer": referer_str(request)}
            logger.debug(msg, args, extra={"spider": spider})
        elif self.logdupes:
            msg = ("Filtered duplicate request: %(request)s"
                   " - no more duplicates will be shown"
                   " (see DUPEFILTER_DEBUG to show all duplicates)")
            logger.debug(msg, {"request": request}, extra={"spider": spider})
            self.logdupes = False
        spider.crawler.stats.inc_value("dupefilter/filtered", spider=spider)

    # Failures.

    def _decision(self) -> str:
        return ("letting it through (NDDD_UNREACHABLE = open)"
                if self.fail_open else
                "dropping it (NDDD_UNREACHABLE = closed)")

    def _decide(self, request: Request) -> bool:
        """The answer to request_seen for a request nddd did not decide."""
        if self.fail_open:
            self._inc("nddd/let_through")
            return False
        self._inc("nddd/dropped")
        self._dropped.add(request)
        return True

    def _undecided_request(self, request: Request) -> bool:
        self._inc("nddd/unreachable")
        self._undecided += 1
        logger.debug("nddd unreachable: %s %s", self._outcome(), request,
                     extra=self._extra())
        return self._decide(request)

    def _outcome(self) -> str:
        return "let through unchecked" if self.fail_open else "dropped"

    def _holding_off(self) -> bool:
        """nddd was unreachable less than retry_interval ago: requests are
        decided without trying it."""
        return (self._down_since is not None
                and time.monotonic() < self._retry_at)

    def _outage(self, error: Exception) -> bool:
        """Whether error says nddd is unreachable (noted as such) rather
        than refusing a request."""
        if (isinstance(error, NdddConnectionError)
                or error.code == Code.UNAVAILABLE):  # shutting down
            self._went_down(error)
            return True
        return False

    def _went_down(self, error: Exception) -> None:
        now = time.monotonic()
        self._retry_at = now + self.retry_interval
        if self._down_since is not None:
            return
        self._down_since = now
        self._undecided = 0
        logger.error(
            "nddd at %s is unreachable (%s): %s until it answers; trying "
            "again every %g s", self.address, error,
            "letting requests through unchecked (NDDD_UNREACHABLE = open)"
            if self.fail_open else
            "dropping requests (NDDD_UNREACHABLE = closed)",
            self.retry_interval, extra=self._extra())

    def _answered(self) -> None:
        """nddd answered: an outage, if any, is over."""
        if self._down_since is None:
            return
        logger.warning(
            "nddd at %s answers again: %d request(s) were %s in the %.1f s "
            "it was unreachable", self.address, self._undecided,
            self._outcome(), time.monotonic() - self._down_since,
            extra=self._extra())
        self._down_since = None
        self._undecided = 0

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, spider=self._spider())

    def _spider(self):
        return self._spider_source() if self._spider_source else None

    def _extra(self) -> dict:
        return {"spider": self._spider()}


class NdddBatchMiddleware:
    """A spider middleware that checks all the requests of a response with
    nddd in one call, for NdddDupeFilter, which must be the crawl's
    DUPEFILTER_CLASS.  See the module documentation."""

    def __init__(self, crawler):
        if not issubclass(load_object(crawler.settings["DUPEFILTER_CLASS"]),
                          NdddDupeFilter):
            raise ValueError("NdddBatchMiddleware needs DUPEFILTER_CLASS = "
                             "\"nddd.scrapy.NdddDupeFilter\", not %r"
                             % crawler.settings["DUPEFILTER_CLASS"])
        self.crawler = crawler
        self.df: Optional[NdddDupeFilter] = None
        crawler.signals.connect(self.spider_opened, signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def spider_opened(self, spider) -> None:
        # The scheduler makes its filter when the spider opens.
        self.df = self.crawler.engine.slot.scheduler.df

    def process_spider_output(self, response, result, spider):
        output = []
        try:
            output.extend(result)
        except Exception:
            # What the callback gave before failing goes on, then the
            # exception, as without this middleware.
            yield from self._checked(output)
            raise
        yield from self._checked(output)

    async def process_spider_output_async(self, response, result, spider):
        output = []
        try:
            async for r in result:
                output.append(r)
        except Exception:
            for r in self._checked(output):
                yield r
            raise
        for r in self._checked(output):
            yield r

    def _checked(self, output: list) -> list:
        """output, once the URLs of its requests have been submitted."""
        self.df.submit_requests(r for r in output if isinstance(r, Request))
        return output

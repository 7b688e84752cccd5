"""A Scrapy dupe filter that asks nddd.

In a Scrapy project's settings::

    DUPEFILTER_CLASS = "nddd.scrapy.NdddDupeFilter"
    NDDD_ADDRESS = "127.0.0.1:6464"

Each request the scheduler is given is submitted to nddd by URL
(url_submit); nddd records it, and the request is filtered when nddd says
the URL was recorded before (its count is above 1).  nddd compares URLs in
their canonical form (RFC 3986 normalization, default port and fragment
dropped), remembers them across crawls and processes, and can forget them
(``nddctl url-delete``) so that they are fetched again.

Settings:

``NDDD_ADDRESS`` (default "127.0.0.1:6464")
    the daemon, "HOST:PORT" or "[IPv6]:PORT".
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
    the crawl a disk sync per request.
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
environment variable NDDD_TOKEN (as for nddd.Client).  A certificate
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
and ``nddd/dropped`` (decisions taken by NDDD_UNREACHABLE).
"""

import logging
import time
import weakref
from typing import Optional

from scrapy.dupefilters import BaseDupeFilter
from scrapy.http import Request
from scrapy.utils.request import RequestFingerprinter, referer_str

from .client import DEFAULT_ADDRESS, Client, _durability
from .errors import NdddConnectionError, NdddRequestError
from .results import Code

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 5.0
DEFAULT_RETRY_INTERVAL = 10.0
DEFAULT_METHODS = ("GET",)
UNREACHABLE_CHOICES = ("open", "closed")


class NdddDupeFilter(BaseDupeFilter):
    """Filters requests whose URL nddd has recorded before.  See the module
    documentation for its settings and stats."""

    def __init__(self, address: str = DEFAULT_ADDRESS,
                 timeout: float = DEFAULT_TIMEOUT,
                 unreachable: str = "open",
                 retry_interval: float = DEFAULT_RETRY_INTERVAL,
                 methods=DEFAULT_METHODS, debug: bool = False, *,
                 durability: Optional[str] = None, digests: bool = False,
                 tls: bool = False, tls_ca: Optional[str] = None,
                 tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None,
                 tls_server_hostname: Optional[str] = None,
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
        try:
            self.client = Client(address, timeout=timeout,
                                 durability=durability, digests=digests,
                                 tls=tls, ca_file=tls_ca or None,
                                 cert_file=tls_cert or None,
                                 key_file=tls_key or None,
                                 server_hostname=tls_server_hostname or None)
        except ValueError as e:
            raise ValueError("nddd settings (NDDD_ADDRESS, NDDD_TIMEOUT, "
                             "NDDD_TLS_*): %s" % e) from None
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
                      spider_source=None):
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
            tls=settings.getbool("NDDD_TLS", False),
            tls_ca=settings.get("NDDD_TLS_CA"),
            tls_cert=settings.get("NDDD_TLS_CERT"),
            tls_key=settings.get("NDDD_TLS_KEY"),
            tls_server_hostname=settings.get("NDDD_TLS_SERVER_HOSTNAME"),
            fingerprinter=fingerprinter, stats=stats,
            spider_source=spider_source)

    @classmethod
    def from_crawler(cls, crawler):
        return cls.from_settings(
            crawler.settings,
            fingerprinter=getattr(crawler, "request_fingerprinter", None),
            stats=crawler.stats,
            spider_source=lambda: getattr(crawler, "spider", None))

    def open(self) -> None:
        """Connects to nddd to say early whether it answers; a crawl starts
        either way."""
        try:
            self.client.connect()
        except NdddConnectionError as e:
            self._went_down(e)
            return
        logger.info("Checking request URLs with nddd at %s%s (unreachable: "
                    "%s, durability: %s%s)", self.address,
                    " over TLS" if self.client.tls else "",
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
        if self._down_since is not None and time.monotonic() < self._retry_at:
            return self._undecided_request(request)
        try:
            result = self.client.submit_url(request.url)
        except NdddConnectionError as e:
            self._went_down(e)
            return self._undecided_request(request)
        except NdddRequestError as e:
            if e.code == Code.UNAVAILABLE:  # shutting down: an outage
                self._went_down(e)
                return self._undecided_request(request)
            self._inc("nddd/unreachable")
            logger.error("nddd at %s refused to check %s: %s; %s",
                         self.address, request, e, self._decision(),
                         extra=self._extra())
            return self._decide(request)
        if self._down_since is not None:
            self._outage_ended()
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

    def _outage_ended(self) -> None:
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

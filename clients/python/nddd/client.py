"""A synchronous client for nddd.

One :class:`Client` holds one TCP connection to a daemon and reuses it from
call to call.  A batch call cuts its items into requests of at most
``batch_size`` items (and at most ``max_frame`` bytes), keeps up to
``window`` of them in flight on the connection (pipelining), matches the
replies to the requests by id whatever order they come back in, and
returns one result per item, in input order.  Documents go the same way
in ``doc_batch`` requests (``doc_batch_size`` documents, and at most half
of ``max_frame``).

Wire format (proto/nddd.proto): every frame is a 4-byte big-endian length
and one protobuf message, ``Request`` one way and ``Response`` the other.
Each request carries an id chosen here (1, 2, ...) and echoed in its
reply.  The daemon closes a connection after a frame it cannot decode or
one over its ``max_frame``, answering with a Response whose id is 0.

Every operation is a method that builds ``Request`` messages and reads its
own field of each ``Response``; :meth:`Client._exchange` does the rest
(connection, ids, window, timeouts, errors).  Batch operations go through
:meth:`Client._batch_op` with a function that builds the request for a
batch and one that reads a reply into typed results (see
:meth:`Client._url_op`); a single request through :meth:`Client._call`.
Further operations (documents) are methods of the same shape.

Connections and failures:

* The connection is made by the first call (or :meth:`Client.connect`).
* Before a call sends anything, a connection the daemon has closed since
  the last call (a restart, an idle close) is noticed and replaced with a
  new one: the call proceeds as if nothing happened.
* If the connection cannot be made, :class:`NdddConnectionError` is raised
  with ``sent`` False: nothing was carried out.
* If it breaks while a call waits for replies, the call raises
  :class:`NdddConnectionError` with ``sent`` True and the results received
  so far; the requests whose reply was lost may or may not have been
  carried out.  Nothing is resent automatically: a resent submit would
  raise the URL's reference count once more.  The next call connects again.
* ``timeout`` bounds how long each request waits for its reply, counted
  from when it is queued for sending; past it, :class:`NdddTimeoutError`
  (an NdddConnectionError) is raised and the connection closed.

Durability: submits and deletes are answered once as durable as the
client asks (``durability``, per client or per call): "durable" (on disk),
"relaxed" (applied and written to the operating system: it survives a crash
of nddd, not of the machine) or None (the daemon's default, durable unless
its ``[store] sync`` is none).

Namespaces: URL and document operations go to a namespace, one of the
independent sets of URLs and of documents sharing the daemon (one crawl,
one customer): the client's (``namespace``, default "": the default
namespace) or the call's.  A document's identity is its namespace and URL:
its neighbours and group are found among its namespace's documents only.
A name is at most 64 bytes of ASCII letters, digits, '.', '_' and '-';
another raises ValueError before anything is sent.  Submits may give the URLs
they record as new a time to live (``ttl``, seconds; 0 or None: the
namespace's default, set by :meth:`Client.set_namespace`), after which
they are unseen, and new again; ``with_times`` has results carry when
each URL was first and last submitted and when its time to live ends.

TLS: with ``tls=True`` (or any of ``ca_file``, ``cert_file``, ``key_file``,
``server_hostname``, ``ssl_context``) the connection is a TLS one, to the
daemon's ``[tls] listen``.  The daemon's certificate must verify against
``ca_file`` (default: the system's CAs) and name the host of the address
(or ``server_hostname``); ``cert_file`` and ``key_file`` are the client's
certificate, for a daemon with ``[tls] client_ca``.  A reconnection
offers the last connection's TLS session, which the daemon resumes
without a full handshake.  The handshake is part of connecting: a
certificate that does not verify raises NdddConnectionError with ``sent``
False.  A daemon that refuses the client's certificate may only say so
once the first request is sent (TLS 1.3 finishes the client's side of the
handshake first).

Digests: with ``digests=True`` URLs are canonicalized and hashed here with
the daemon's own code (libnddd.so, see nddd._canon), with the options the
daemon's stats name (asked once per connection), and only the 16-byte
digests are sent.  A URL the canonicalizer refuses gets its result here,
with the code and message the daemon would give, and is not sent.  Results
are the same as without.

A Client may be shared by threads: calls are serialized by a lock.
"""

import math
import os
import re
import select
import socket
import ssl
import struct
import threading
import time
from itertools import repeat
from typing import Callable, Iterable, Iterator, List, Optional, Tuple, Union

from google.protobuf.message import DecodeError

from ._proto import pb
from . import _bulk, _canon
from .errors import (NdddConnectionError, NdddError, NdddProtocolError,
                     NdddRequestError, NdddTimeoutError)
from .results import (CheckResult, Code, DeleteResult, DocResult, Namespace,
                      QueryResult, Stats, Status, SubmitResult, Url,
                      UrlResult, _neighbours, code_of, content_name,
                      match_number)

DEFAULT_ADDRESS = "127.0.0.1:6464"
#: Seconds a request may wait for its reply (and connecting may take).
DEFAULT_TIMEOUT = 10.0
#: URLs per request; the daemon refuses more than its max_batch (10,000 by
#: default) with RESOURCE_EXHAUSTED.
DEFAULT_BATCH_SIZE = 1000
#: Requests in flight at once; the daemon reads up to its max_inflight (64)
#: requests of a connection ahead of its replies.
DEFAULT_WINDOW = 8
#: The daemon's default max_frame: larger frames are refused.
DEFAULT_MAX_FRAME = 8 * 1024 * 1024
#: Documents per doc_batch request (the daemon takes at most 4,096).
DEFAULT_DOC_BATCH_SIZE = 256

_LEN = struct.Struct(">I")
_RECV_CHUNK = 256 * 1024
# A batch's frame: the Request's id and the op field's tag and length
# around the items, each item a tag and a length before its bytes.
_REQUEST_OVERHEAD = 32
_ITEM_OVERHEAD = 6
_POLLIN_ANY = select.POLLIN | select.POLLHUP | select.POLLERR
# doc_batch: the most documents the daemon takes, and the most its reply
# takes (docreq_batch_reply_bound: a base and per document a result of at
# most 1 KiB and an error), which must fit its max_frame.
_DOC_BATCH_MAX = 4096
_DOC_REPLY_BASE = 4096
_DOC_REPLY_ITEM = 1024 + 96
# A doc_batch frame's fields around its documents (id, the op's tag and
# length), with room to spare; the token comes on top.
_DOC_FRAME_OVERHEAD = 64
# Protocol tags, for requests encoded here: Request.id (varint),
# Request.doc_batch, Request.token, DocBatch.docs, DocSubmit.url and body
# (length-delimited), DocSubmit.format = HTML and query_only = true,
# DocSubmit.namespace, DocSubmit.match (varint) and with_sketch = true.
_TAG_ID = b"\x08"
_TAG_DOC_BATCH = b"\x5a"
_TAG_TOKEN = b"\x7a"
_TAG_DOC = b"\x0a"
_TAG_URL = b"\x0a"
_TAG_BODY = b"\x12"
_HTML = b"\x18\x01"
_QUERY_ONLY = b"\x20\x01"
_TAG_NAMESPACE = b"\x2a"
_TAG_MATCH = b"\x40"
_WITH_SKETCH = b"\x48\x01"
_VARINT_1 = [bytes((i,)) for i in range(128)]


def _varint(n: int) -> bytes:
    """The protobuf varint of n >= 0."""
    if n < 0x80:
        return _VARINT_1[n]
    if n < 0x4000:
        return bytes(((n & 0x7f) | 0x80, n >> 7))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7f) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, data: bytes) -> bytes:
    """A length-delimited protobuf field: its tag, length and bytes."""
    return tag + _varint(len(data)) + data

#: Values of ``durability``: the protocol's Durability.  None and "default"
#: leave it to the daemon.
_DURABILITY = {None: pb.DURABILITY_DEFAULT, "default": pb.DURABILITY_DEFAULT,
               "durable": pb.DURABLE, "relaxed": pb.RELAXED}


def _durability(value) -> int:
    """The protocol's Durability for "durable", "relaxed", "default" or
    None.  Raises ValueError."""
    key = value.strip().lower() if isinstance(value, str) else value
    try:
        return _DURABILITY[key]
    except (KeyError, TypeError):
        raise ValueError("durability must be \"durable\", \"relaxed\" or "
                         "None (the daemon's default), not %r"
                         % (value,)) from None


#: The longest time to live nddd takes: 100 years, in seconds.
TTL_MAX = 3155760000
_NAMESPACE = re.compile(r"[A-Za-z0-9._-]{0,64}")


def _namespace(name) -> str:
    """name, if nddd takes it as a namespace: at most 64 bytes of ASCII
    letters, digits, '.', '_' and '-' ("": the default namespace).  Raises
    TypeError or ValueError, as nddd would refuse it (INVALID_ARGUMENT)."""
    if not isinstance(name, str):
        raise TypeError("a namespace is a str, not %s" % type(name).__name__)
    if not _NAMESPACE.fullmatch(name):
        raise ValueError("namespace %r: at most 64 bytes of ASCII letters, "
                         "digits, '.', '_' and '-'" % name)
    return name


def _ttl(seconds, what: str) -> int:
    """A time to live in seconds, 0 for None.  Raises TypeError or
    ValueError (negative, or beyond nddd's 100 years), naming what."""
    if seconds is None:
        return 0
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise TypeError("%s is a number of seconds (int), not %s"
                        % (what, type(seconds).__name__))
    if not 0 <= seconds <= TTL_MAX:
        raise ValueError("%s must be 0 to %d seconds (100 years), not %d"
                         % (what, TTL_MAX, seconds))
    return seconds


Address = Union[str, Tuple[str, int]]


def _tls_context(tls: bool, ssl_context: Optional[ssl.SSLContext],
                 ca_file: Optional[str], cert_file: Optional[str],
                 key_file: Optional[str],
                 server_hostname: Optional[str]) -> Optional[ssl.SSLContext]:
    """The SSLContext of a client's TLS options, or None for plain TCP.
    Raises ValueError, naming the file that cannot be loaded."""
    if ssl_context is not None:
        if ca_file or cert_file or key_file:
            raise ValueError("give ssl_context, or ca_file, cert_file and "
                             "key_file, not both")
        return ssl_context
    if not (tls or ca_file or cert_file or key_file or server_hostname):
        return None
    if key_file and not cert_file:
        raise ValueError("key_file needs cert_file")
    try:
        ctx = ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as e:
        raise ValueError("cannot load the CA file %s: %s"
                         % (ca_file, e.strerror or e)) from e
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2   # nddd's own minimum
    if cert_file:
        try:
            ctx.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as e:
            raise ValueError("cannot load the client certificate %s%s: %s"
                             % (cert_file, " with the key %s" % key_file
                                if key_file else "",
                                e.strerror or e)) from e
    return ctx


def _tls_failure(e: OSError) -> str:
    """What an ssl exception says, without the ssl module's source line."""
    if isinstance(e, ssl.SSLCertVerificationError) and e.verify_message:
        return e.verify_message
    text = str(e.strerror or e)
    end = text.rfind(" (_ssl.c:")
    return text[:end] if end > 0 else text


def _read_some(sock: socket.socket) -> Optional[bytes]:
    """What sock has to read: bytes, b"" once the daemon closed it, or None
    when what came carried no data (a TLS record of the handshake, such as
    a session ticket).  Raises OSError (ssl.SSLError for TLS alerts)."""
    try:
        data = sock.recv(_RECV_CHUNK)
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
        return None
    if data and isinstance(sock, ssl.SSLSocket):
        # Data OpenSSL has already decrypted wakes no poll: take it now.
        while sock.pending():
            data += sock.recv(_RECV_CHUNK)
    return data


def _send_some(sock: socket.socket, out) -> int:
    """Writes what sock takes of out now: the bytes written, 0 when it
    would block (OpenSSL is then given the same bytes again, and more: it
    keeps its place).  Raises OSError."""
    try:
        return sock.send(out)
    except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
        return 0


def parse_address(address: Address) -> Tuple[str, int]:
    """(host, port) from "HOST:PORT", "[IPv6]:PORT" or a (host, port)
    tuple.  Raises ValueError."""
    if isinstance(address, tuple):
        host, port = address
        port = str(port)
    else:
        text = str(address).strip()
        if text.startswith("["):
            end = text.find("]")
            if end < 0 or text[end + 1:end + 2] != ":":
                raise ValueError("bad address %r: expected [IPv6]:PORT"
                                 % address)
            host, port = text[1:end], text[end + 2:]
        else:
            host, sep, port = text.rpartition(":")
            if not sep or ":" in host:
                raise ValueError("bad address %r: expected HOST:PORT or "
                                 "[IPv6]:PORT" % address)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("bad address %r: expected HOST:PORT with a port "
                         "from 1 to 65535" % (address,))
    return host, int(port)


def _encode_body(body: Union[str, bytes]) -> bytes:
    return body.encode("utf-8") if isinstance(body, str) else bytes(body)


# Request's URL operations (UrlBatch) and UrlBatch's fields, for a request
# of one URL encoded here.
_TAG_URL_OP = {"url_submit": b"\x12", "url_check": b"\x1a",
               "url_delete": b"\x22"}
_TAG_URLS = b"\x0a"
_TAG_DURABILITY = b"\x10"
_TAG_BATCH_NAMESPACE = b"\x2a"
_TAG_TTL = b"\x30"
_WITH_TIMES = b"\x38\x01"


def _one_url_request(field: str, url: bytes, level: int, ns: str, ttl: int,
                     with_times: bool) -> bytes:
    """_url_request for one URL (no digests), encoded: a Request without
    its id and token, as _exchange takes them, at a fraction of the cost
    of building the message."""
    batch = _field(_TAG_URLS, url)
    if level != pb.DURABILITY_DEFAULT:
        batch += _TAG_DURABILITY + _varint(level)
    if ns:
        batch += _field(_TAG_BATCH_NAMESPACE, ns.encode())
    if ttl:
        batch += _TAG_TTL + _varint(ttl)
    if with_times:
        batch += _WITH_TIMES
    return _field(_TAG_URL_OP[field], batch)


def _url_request(field: str, chunk: List[bytes], canon_id: Optional[str],
                 level: int, ns: str, ttl: int,
                 with_times: bool) -> "pb.Request":
    """The Request of the URL operation ``field`` (a UrlBatch) for chunk:
    encoded URLs, or with canon_id their digests made with that
    canonicalization."""
    req = pb.Request()
    batch = getattr(req, field)
    if canon_id is None:
        batch.urls.extend(chunk)
    else:
        batch.digests = b"".join(chunk)
        batch.canon = canon_id
    if level != pb.DURABILITY_DEFAULT:
        batch.durability = level
    if ns:
        batch.namespace = ns
    if ttl:
        batch.ttl_seconds = ttl
    if with_times:
        batch.with_times = True
    return req


class Forgotten(int):
    """How many URLs a forget deleted.  complete is False when the store
    holds URLs its host index never saw (stored by nddd 0.3, or while the
    server's [urls] host_index was off), which no forget finds."""

    def __new__(cls, n: int, complete: bool = True):
        self = super().__new__(cls, n)
        self.complete = complete
        return self


def _encode_url(url: Url) -> bytes:
    if isinstance(url, str):
        try:
            return url.encode()
        except UnicodeEncodeError:
            # Lone surrogates: undo os.fsdecode's escapes where that is what
            # they are, pass the rest on for nddd to judge.
            try:
                return url.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:
                return url.encode("utf-8", "surrogatepass")
    if isinstance(url, (bytes, bytearray, memoryview)):
        return bytes(url)
    raise TypeError("a URL must be str or bytes, not %s"
                    % type(url).__name__)


class Client:
    """A connection to one nddd daemon.

    ``address``: "HOST:PORT", "[IPv6]:PORT" or (host, port).
    ``timeout``: seconds each request may wait for its reply (None: no
    limit).  ``connect_timeout``: seconds to connect (default: timeout).
    ``batch_size``: most URLs per request; keep it at or below the
    daemon's ``max_batch``.  ``window``: most requests in flight at once.
    ``max_frame``: most bytes per request frame; keep it at or below the
    daemon's ``max_frame``.  ``doc_batch_size``: most documents per
    doc_batch request of submit_docs and query_docs (at most 4,096; fewer
    when max_frame is small, since the reply must fit in it too); a
    request holds at most half of max_frame of documents, or one document
    alone.  ``token``: sent with every request, when the
    daemon has tokens configured ([auth] tokens_file); its role decides
    what the daemon allows (default: the NDDD_TOKEN environment variable).
    ``durability``: when submits and deletes are answered: "durable" (on
    disk), "relaxed" (applied and written to the operating system, not yet
    synced) or None (the daemon's default); each call may say otherwise.
    ``match``: the answer document operations ask for: "verified"
    (candidates kept when similar enough, most similar first), "hamming"
    (every document within k, nearest first) or None (the daemon's
    [near] answer, verified unless configured otherwise); each call may
    say otherwise.
    ``namespace``: the namespace of URL and document operations ("": the
    default one; raises ValueError for a name nddd would refuse); each
    call may say otherwise.  ``digests``: canonicalize and hash URLs here,
    through libnddd.so, and send their digests (raises NdddLibraryError at
    once if libnddd.so cannot be loaded).

    TLS (to the daemon's ``[tls] listen``): ``tls``: speak TLS; any of the
    following turns it on too.  ``ca_file``: the CA certificates (PEM) the
    daemon's certificate must verify against (default: the system's).
    ``cert_file``, ``key_file``: the client's certificate chain and its
    key (PEM, unencrypted; the key may be in cert_file), for a daemon that
    requires client certificates ([tls] client_ca).  ``server_hostname``:
    the name the daemon's certificate must carry (default: the host of
    ``address``, a name or an IP address).  ``ssl_context``: an
    ``ssl.SSLContext`` of the caller's making instead of ca_file,
    cert_file and key_file (its own verification settings apply).  Files
    that cannot be loaded raise ValueError here.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, address: Address = DEFAULT_ADDRESS, *,
                 timeout: Optional[float] = DEFAULT_TIMEOUT,
                 connect_timeout: Optional[float] = None,
                 batch_size: int = DEFAULT_BATCH_SIZE,
                 window: int = DEFAULT_WINDOW,
                 max_frame: int = DEFAULT_MAX_FRAME,
                 doc_batch_size: int = DEFAULT_DOC_BATCH_SIZE,
                 token: Optional[str] = None,
                 durability: Optional[str] = None,
                 namespace: str = "",
                 digests: bool = False,
                 match: Optional[str] = None,
                 tls: bool = False,
                 ca_file: Optional[str] = None,
                 cert_file: Optional[str] = None,
                 key_file: Optional[str] = None,
                 server_hostname: Optional[str] = None,
                 ssl_context: Optional[ssl.SSLContext] = None):
        self._host, self._port = parse_address(address)
        if token is None:
            token = os.environ.get("NDDD_TOKEN") or None
        self.token = token
        if ":" in self._host:
            self.address = "[%s]:%d" % (self._host, self._port)
        else:
            self.address = "%s:%d" % (self._host, self._port)
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be positive or None")
        if connect_timeout is not None and connect_timeout <= 0:
            raise ValueError("connect_timeout must be positive or None")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if window < 1:
            raise ValueError("window must be at least 1")
        if max_frame < 64:
            raise ValueError("max_frame must be at least 64")
        if not 1 <= doc_batch_size <= _DOC_BATCH_MAX:
            raise ValueError("doc_batch_size must be 1 to %d"
                             % _DOC_BATCH_MAX)
        self.timeout = timeout
        self.connect_timeout = (connect_timeout if connect_timeout
                                is not None else timeout)
        self.batch_size = batch_size
        self.window = window
        self.max_frame = max_frame
        self.doc_batch_size = doc_batch_size
        self._durability = _durability(durability)
        self.durability = durability
        self.namespace = _namespace(namespace)
        match_number(match)
        self.match = match
        self.digests = bool(digests)
        if self.digests:
            _canon.load_library()
        self._ssl_context = _tls_context(tls, ssl_context, ca_file,
                                         cert_file, key_file, server_hostname)
        # The same as files, for the connections of bulk requests.
        self._tls_files = (ca_file, cert_file, key_file)
        self._ssl_context_given = ssl_context is not None
        self.tls = self._ssl_context is not None
        # Against what the daemon's certificate is verified, for errors.
        self._tls_cas = ca_file or ("the ssl_context's CAs" if ssl_context
                                    else "the system's CAs")
        self.server_hostname = server_hostname or self._host
        # The last connection's TLS session, offered by the next one.
        self._tls_session: Optional[ssl.SSLSession] = None
        # The daemon's canonicalizer, and the connection it was asked on.
        self._canon: Optional[_canon.Canon] = None
        self._canon_sock: Optional[socket.socket] = None
        self._sock: Optional[socket.socket] = None
        self._poll = None
        self._next_id = 1
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "<nddd.Client %s%s%s>" % (
            self.address, " (TLS)" if self.tls else "",
            "" if self._sock else " (not connected)")

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        """A connection is open (it may have been closed by the daemon
        since; the next call finds out)."""
        return self._sock is not None

    def connect(self) -> None:
        """Connects now rather than at the first call (a no-op when
        connected).  Raises NdddConnectionError or NdddTimeoutError."""
        with self._lock:
            self._ready_socket()

    def close(self) -> None:
        """Closes the connection; a later call opens a new one."""
        with self._lock:
            self._drop()

    # URL operations.  Each takes an iterable of URLs (str or bytes) and
    # returns one result per URL, in order.  namespace: the call's (None:
    # the client's); with_times: results carry the times each URL was
    # seen.

    def submit_urls(self, urls: Iterable[Url], *,
                    durability: Optional[str] = None,
                    namespace: Optional[str] = None,
                    ttl: Optional[int] = None,
                    with_times: bool = False) -> List[SubmitResult]:
        """Records the URLs (url_submit).  A result's ``new`` is True when
        the URL was not stored before, ``duplicate`` when it was; ``count``
        is its reference count after this submit.  Submits are answered
        once as durable as ``durability`` asks ("durable", "relaxed",
        "default"; None: the client's).  ``ttl``: the seconds a URL
        recorded as new is seen (0 or None: the namespace's default; at
        most TTL_MAX, 100 years); a duplicate does not postpone its end."""
        return self._url_op("url_submit", urls, SubmitResult, durability,
                            namespace, ttl, with_times)

    def check_urls(self, urls: Iterable[Url], *,
                   namespace: Optional[str] = None,
                   with_times: bool = False) -> List[CheckResult]:
        """Asks whether the URLs are stored (url_check), changing nothing.
        A result's ``seen`` is True when it is; ``count`` is its reference
        count, 0 when unseen (or past its time to live)."""
        return self._url_op("url_check", urls, CheckResult, None,
                            namespace, None, with_times)

    def delete_urls(self, urls: Iterable[Url], *,
                    durability: Optional[str] = None,
                    namespace: Optional[str] = None,
                    with_times: bool = False) -> List[DeleteResult]:
        """Forgets the URLs (url_delete).  A result's ``deleted`` is True
        when the URL was stored; ``count`` is the count it had.
        ``durability`` as for submit_urls."""
        return self._url_op("url_delete", urls, DeleteResult, durability,
                            namespace, None, with_times)

    def submit_url(self, url: Url, *,
                   durability: Optional[str] = None,
                   namespace: Optional[str] = None,
                   ttl: Optional[int] = None,
                   with_times: bool = False) -> SubmitResult:
        """submit_urls for one URL."""
        return self._one_url("url_submit", url, SubmitResult, durability,
                             namespace, ttl, with_times)

    def check_url(self, url: Url, *, namespace: Optional[str] = None,
                  with_times: bool = False) -> CheckResult:
        """check_urls for one URL."""
        return self._one_url("url_check", url, CheckResult, None,
                             namespace, None, with_times)

    def delete_url(self, url: Url, *,
                   durability: Optional[str] = None,
                   namespace: Optional[str] = None,
                   with_times: bool = False) -> DeleteResult:
        """delete_urls for one URL."""
        return self._one_url("url_delete", url, DeleteResult, durability,
                             namespace, None, with_times)

    def check_urls_bulk(self, urls: Iterable[Url], *,
                        namespace: Optional[str] = None,
                        memory: Optional[int] = None,
                        spill_dir: Optional[str] = None,
                        progress: Optional[Callable[[int, int], None]] = None
                        ) -> "_bulk.BulkResults":
        """check_urls for a set of URLs too large to ask about at random
        (a frontier file, a crawl's links of the last hour): every URL is
        hashed here, kept (past ``memory`` bytes, 256 MiB by default, in a
        file in ``spill_dir``, $TMPDIR by default) and sent in the store's
        key order, so that the daemon reads each page of its store once
        (docs/urlstore.md, "Bulk checks").  Each answer is the one
        check_urls gives.  Returns a sequence of CheckResult by the URLs'
        places in the input (their ``url`` is None); ``progress(done,
        total)`` is called as answers come.  Needs libnddd.so, like
        ``digests=True``; the request runs on a connection of its own.
        Raises NdddConnectionError (its ``results`` holding the answers
        received) when the connection fails midway."""
        return self._bulk("check", urls, None, namespace, None, memory,
                          spill_dir, progress)

    def submit_urls_bulk(self, urls: Iterable[Url], *,
                         durability: Optional[str] = None,
                         namespace: Optional[str] = None,
                         ttl: Optional[int] = None,
                         memory: Optional[int] = None,
                         spill_dir: Optional[str] = None,
                         progress: Optional[Callable[[int, int], None]] = None
                         ) -> "_bulk.BulkResults":
        """submit_urls as check_urls_bulk checks: SubmitResults by place;
        a URL given twice is new, then a duplicate, as one submit after
        the other.  A request cut short (a lost connection, a killed
        process) leaves whole batches recorded; run again, it answers
        those URLs as duplicates."""
        return self._bulk("submit", urls, durability, namespace, ttl, memory,
                          spill_dir, progress)

    def delete_urls_bulk(self, urls: Iterable[Url], *,
                         durability: Optional[str] = None,
                         namespace: Optional[str] = None,
                         memory: Optional[int] = None,
                         spill_dir: Optional[str] = None,
                         progress: Optional[Callable[[int, int], None]] = None
                         ) -> "_bulk.BulkResults":
        """delete_urls as check_urls_bulk checks: DeleteResults by
        place."""
        return self._bulk("delete", urls, durability, namespace, None,
                          memory, spill_dir, progress)

    def _bulk(self, op, urls, durability, namespace, ttl, memory, spill_dir,
              progress) -> "_bulk.BulkResults":
        return _bulk.run(
            self, op, urls,
            namespace=(self.namespace if namespace is None
                       else _namespace(namespace)),
            durability=(self._durability if durability is None
                        else _durability(durability)),
            ttl=_ttl(ttl, "ttl"),
            memory=memory, spill_dir=spill_dir, progress=progress)

    # Namespaces (admin).

    def set_namespace(self, name: str, *,
                      default_ttl: Optional[int] = None) -> Namespace:
        """Creates the namespace name if need be ("": the default one) and
        sets its default time to live: the seconds a URL submitted to it
        without a ttl is seen (0 or None: none), for submits from now on,
        not for the URLs recorded before.  Returns the namespace."""
        req = pb.Request()
        req.namespace_set.SetInParent()
        req.namespace_set.name = _namespace(name)
        req.namespace_set.default_ttl_seconds = _ttl(default_ttl,
                                                     "default_ttl")
        return Namespace.from_message(self._result(self._call(req),
                                                   "namespace"))

    def drop_namespace(self, name: str) -> Optional[Namespace]:
        """Drops the namespace name: its name is free at once (a submit to
        it starts an empty set) and its URLs and documents are forgotten
        in the background.  Returns it, ``urls`` and ``docs`` counting
        those being forgotten, or None when it has neither.  The default
        namespace cannot be dropped (NdddRequestError,
        INVALID_ARGUMENT)."""
        req = pb.Request()
        req.namespace_drop.SetInParent()
        req.namespace_drop.name = _namespace(name)
        resp = self._call_found(req)
        if resp is None:
            return None
        return Namespace.from_message(self._result(resp, "namespace"))

    # Forgetting URLs by host or by prefix (admin), in one namespace.  nddd
    # finds them in its index of the URLs submitted as text: URLs sent as
    # digests (digests=True) are not found, nor URLs stored by a daemon
    # before 0.4.0.  A daemon whose [urls] host_index is off refuses them.

    def forget_host(self, host: str, *, subdomains: bool = False,
                    namespace: Optional[str] = None) -> "Forgotten":
        """Forgets every URL of host (url_forget), a host name as
        canonical URLs carry it (lower case, no port), whatever its scheme
        or port; with subdomains, those of every host under it too
        ("example.com" takes "www.example.com", never "badexample.com").
        namespace: the call's (None: the client's).  Returns how many URLs
        were forgotten (0 in a namespace that does not exist), once their
        deletion is durable, as a Forgotten (an int whose complete is
        False when the store holds URLs its host index never saw); filter
        counters are kept exact.  A host that
        is not a str raises TypeError, an empty one ValueError, before
        anything is sent."""
        if not isinstance(host, str):
            raise TypeError("a host is a str, not %s" % type(host).__name__)
        if not host:
            raise ValueError("an empty host")
        req = pb.Request()
        req.url_forget.host = host
        req.url_forget.subdomains = bool(subdomains)
        return self._forget(req, namespace)

    def forget_prefix(self, prefix: Url, *,
                      namespace: Optional[str] = None) -> "Forgotten":
        """Forgets every URL whose canonical form begins with prefix's
        (url_forget): prefix is a URL (str or bytes) that nddd
        canonicalizes as it does a submitted one, so
        "HTTP://Example.com:80/blog/" takes "http://example.com/blog/x";
        one it refuses raises NdddRequestError (INVALID_ARGUMENT).
        namespace and the count returned as for forget_host.  An empty
        prefix raises ValueError before anything is sent."""
        encoded = _encode_url(prefix)
        if not encoded:
            raise ValueError("an empty prefix")
        req = pb.Request()
        req.url_forget.prefix = encoded
        return self._forget(req, namespace)

    def _forget(self, req, namespace: Optional[str]) -> "Forgotten":
        """Sends the url_forget of req in namespace (None: the client's);
        the number of URLs forgotten."""
        req.url_forget.namespace = (self.namespace if namespace is None
                                    else _namespace(namespace))
        res = self._result(self._call(req), "forget")
        return Forgotten(res.forgotten, res.complete)

    # Document operations.  A document is named by its URL, in a namespace
    # (namespace: the call's; None: the client's), and has a body, text or
    # HTML.  nddd prints it (its 64-bit simhash and its shingle sketch, of
    # a page's main content by default), finds the stored documents of its
    # namespace that are its neighbours by the answer asked for (match:
    # the call's; None the client's, whose None is the daemon's), and
    # puts it in the story group of the first (the most similar, ties the
    # oldest; by the Hamming answer the nearest), or a new one of its own.

    def _doc_namespace(self, namespace: Optional[str]) -> str:
        """The namespace of a document call: the call's, None the
        client's.  Raises ValueError for a name nddd would refuse."""
        return self.namespace if namespace is None else _namespace(namespace)

    def _doc_match(self, match: Optional[str]) -> int:
        """The Match of a document call: the call's, None the client's.
        Raises ValueError for another."""
        return match_number(self.match if match is None else match)

    def submit_doc(self, url: Url, body: Union[str, bytes], *,
                   html: bool = False, query_only: bool = False,
                   namespace: Optional[str] = None,
                   match: Optional[str] = None,
                   with_sketch: bool = False) -> DocResult:
        """Stores a document (doc_submit) and returns it with its id,
        fingerprint, group, near duplicates and what it was judged by
        (``content``).  A re-submitted URL keeps its id; its fingerprint
        and group are renewed.  query_only: store nothing, answer what
        would be.  match: "verified", "hamming" or None (the client's).
        with_sketch: the result carries the document's sketch.  Raises
        NdddRequestError (for example EMPTY_DOCUMENT, for a body without
        terms)."""
        req = pb.Request()
        req.doc_submit.url = _encode_url(url)
        req.doc_submit.body = _encode_body(body)
        req.doc_submit.format = pb.HTML if html else pb.TEXT
        req.doc_submit.query_only = query_only
        req.doc_submit.namespace = self._doc_namespace(namespace)
        req.doc_submit.match = self._doc_match(match)
        req.doc_submit.with_sketch = with_sketch
        resp = self._call(req)
        return DocResult.from_message(url, self._result(resp, "doc"))

    def submit_docs(self, docs: Iterable[Tuple], *,
                    query_only: bool = False,
                    namespace: Optional[str] = None,
                    match: Optional[str] = None,
                    with_sketch: bool = False) -> List[DocResult]:
        """Stores many documents in doc_batch requests, pipelined: docs
        yields (url, body) or (url, body, html), a body str (sent as UTF-8)
        or bytes (sent as they are).  Returns a DocResult per document, in
        order; a document nddd refused (EMPTY_DOCUMENT, a bad URL...) has
        its ``error`` set and the others go on, and so has each document
        of a request refused whole (PERMISSION_DENIED...) and one too
        large for a frame of its own (RESOURCE_EXHAUSTED, not sent).  A
        result's neighbours are the first that fit in about 1 KiB
        (``near_total`` counts them all; get_doc lists them).  The
        documents of a request are carried out in order, each seeing those
        before it; requests in flight together (``window``) may be carried
        out in any order, so a document may not see one of an earlier
        request: ``window=1`` keeps the whole input in order.
        query_only: store nothing (see query_docs).  Every document goes
        to namespace (None: the client's), and asks for the answer match
        (None: the client's); with_sketch: each result carries its
        sketch."""
        return self._doc_batch(docs, query_only,
                               self._doc_namespace(namespace),
                               self._doc_match(match), with_sketch)

    def query_docs(self, docs: Iterable[Tuple], *,
                   namespace: Optional[str] = None,
                   match: Optional[str] = None,
                   with_sketch: bool = False) -> List[DocResult]:
        """submit_docs with query_only: each document is printed and
        answered with the stored documents near it and the group it would
        join (0 if it would found one), ``doc_id`` 0; nothing is stored
        (the read role suffices)."""
        return self._doc_batch(docs, True, self._doc_namespace(namespace),
                               self._doc_match(match), with_sketch)

    def _doc_limits(self) -> Tuple[int, int, int]:
        """(documents, bytes of documents) a doc_batch request should hold,
        and the most bytes one document may take (a frame of its own)."""
        by_reply = (self.max_frame - _DOC_REPLY_BASE) // _DOC_REPLY_ITEM
        room = self.max_frame - _DOC_FRAME_OVERHEAD - (
            len(self.token.encode()) + 6 if self.token else 0)
        return (max(1, min(self.doc_batch_size, by_reply)),
                self.max_frame // 2, room)

    def _doc_batch(self, docs: Iterable[Tuple], query_only: bool,
                   namespace: str, match: int = 0,
                   with_sketch: bool = False) -> List[DocResult]:
        """submit_docs and query_docs: the requests are encoded here,
        without protobuf messages (the bodies are copied once, into the
        request)."""
        if isinstance(docs, (str, bytes, tuple)):
            raise TypeError("expected an iterable of (url, body) tuples")
        items = docs if isinstance(docs, list) else list(docs)
        results: List[Optional[DocResult]] = [None] * len(items)
        max_docs, max_bytes, room = self._doc_limits()
        flag = _QUERY_ONLY if query_only else b""
        if namespace:
            flag += _field(_TAG_NAMESPACE, namespace.encode())
        if match:
            flag += _TAG_MATCH + _varint(match)
        if with_sketch:
            flag += _WITH_SKETCH
        varint = _varint

        def requests():
            # parts[0] becomes the request's tag and length.
            parts = [None]
            batch = []
            size = 0
            for i, d in enumerate(items):
                url = d[0]
                body = d[1]
                u = _encode_url(url)
                b = body.encode() if type(body) is str else \
                    _encode_body(body)
                lu = len(u)
                lb = len(b)
                head = (_TAG_URL + varint(lu) if lu else b"")
                mid = (_TAG_BODY + varint(lb) if lb else b"")
                tail = (_HTML if len(d) > 2 and d[2] else b"") + flag
                inner = len(head) + lu + len(mid) + lb + len(tail)
                vi = varint(inner)
                item = 1 + len(vi) + inner
                if item > room:
                    results[i] = DocResult.failed(url, Status(
                        Code.RESOURCE_EXHAUSTED, "a document of %d bytes "
                        "exceeds the max frame (%d bytes)"
                        % (item, self.max_frame)))
                    continue
                if batch and (size + item > max_bytes or
                              len(batch) == max_docs):
                    parts[0] = _TAG_DOC_BATCH + varint(size)
                    yield b"".join(parts), batch
                    parts = [None]
                    batch = []
                    size = 0
                parts += (_TAG_DOC, vi, head, u, mid, b, tail)
                batch.append(i)
                size += item
            if batch:
                parts[0] = _TAG_DOC_BATCH + varint(size)
                yield b"".join(parts), batch

        def handle(batch, resp):
            if resp.HasField("status") and resp.status.code != pb.OK:
                st = Status(code_of(resp.status.code), resp.status.message)
                for i in batch:
                    results[i] = DocResult.failed(items[i][0], st)
                return True
            if resp.WhichOneof("result") != "docs":
                raise self._protocol_error("reply to doc_batch has no "
                                           "document results")
            msgs = resp.docs.docs
            if len(msgs) != len(batch):
                raise self._protocol_error(
                    "reply to doc_batch has %d results for %d documents"
                    % (len(msgs), len(batch)))
            from_message = DocResult.from_message
            for i, m in zip(batch, msgs):
                results[i] = from_message(items[i][0], m)
            for e in resp.docs.errors:
                if e.index >= len(batch):
                    raise self._protocol_error(
                        "reply to doc_batch names document %d of %d"
                        % (e.index, len(batch)))
                i = batch[e.index]
                results[i] = DocResult.failed(items[i][0], Status(
                    code_of(e.status.code), e.status.message))
            return True

        if items:
            with self._lock:
                try:
                    self._exchange(requests(), handle)
                except NdddError as e:
                    e.results = results
                    raise
        return results

    def query_doc(self, body: Union[str, bytes, None] = None, *,
                  html: bool = False, simhash: Optional[int] = None,
                  k: Optional[int] = None,
                  namespace: Optional[str] = None,
                  match: Optional[str] = None,
                  sketch: Optional[bytes] = None,
                  with_sketch: bool = False) -> QueryResult:
        """The stored documents of namespace (None: the client's) near a
        body, near a fingerprint (simhash=, a 64-bit int: the Hamming
        answer only), or near a print (simhash= and sketch=, a sketch as
        the daemon sent it: DocResult.sketch, nddd.engine.Print.sketch),
        by the answer match (None: the client's; a fingerprint alone has the
        Hamming answer only).  k: the Hamming answer within k (at most the
        daemon's k), whatever the client's match is (the call's
        "verified" raises ValueError).  with_sketch: the result
        carries a body's sketch.  Changes nothing."""
        req = pb.Request()
        req.doc_query.namespace = self._doc_namespace(namespace)
        if (body is None) == (simhash is None):
            raise TypeError("give a body or a simhash")
        if sketch is not None and simhash is None:
            raise TypeError("a sketch goes with its simhash")
        m = self._doc_match(match)
        if k is not None and match == "verified":
            raise ValueError("k asks for the Hamming answer, match for "
                             "the verified one")
        if simhash is not None:
            if not 0 <= simhash < 1 << 64:
                raise ValueError("a simhash is a 64-bit unsigned integer")
            if sketch is not None:
                req.doc_query.print.simhash = simhash
                req.doc_query.print.sketch = bytes(sketch)
            else:
                # A fingerprint alone has the Hamming answer only.
                if match == "verified":
                    raise ValueError("a fingerprint alone has only the "
                                     "Hamming answer: give its sketch too")
                req.doc_query.simhash = simhash
                m = match_number("hamming")
        else:
            req.doc_query.body.body = _encode_body(body)
            req.doc_query.body.format = pb.HTML if html else pb.TEXT
        if k is not None:
            req.doc_query.max_distance.k = k
            m = match_number("hamming")
        req.doc_query.match = m
        if with_sketch:
            req.doc_query.with_sketch = True
        msg = self._result(self._call(req), "doc_query")
        return QueryResult(msg.simhash, _neighbours(msg.near),
                           msg.near_total, content_name(msg.content),
                           msg.sketch)

    def get_doc(self, url: Url, *,
                namespace: Optional[str] = None,
                match: Optional[str] = None) -> Optional[DocResult]:
        """The stored document of url in namespace (None: the client's)
        with its near duplicates by the answer match (None: the
        client's), or None."""
        req = pb.Request()
        req.doc_get.url = _encode_url(url)
        req.doc_get.namespace = self._doc_namespace(namespace)
        req.doc_get.match = self._doc_match(match)
        resp = self._call_found(req)
        if resp is None:
            return None
        return DocResult.from_message(url, self._result(resp, "doc"))

    def delete_doc(self, url: Url, *,
                   namespace: Optional[str] = None) -> bool:
        """Forgets the document of url in namespace (None: the client's;
        admin); True if there was one."""
        req = pb.Request()
        req.doc_delete.url = _encode_url(url)
        req.doc_delete.namespace = self._doc_namespace(namespace)
        return self._result(self._call(req), "doc_delete").doc_id != 0

    def _result(self, resp, field: str):
        if resp.WhichOneof("result") != field:
            self.close()
            raise self._protocol_error("reply has no %s result" % field)
        return getattr(resp, field)

    def stats(self) -> Stats:
        """The daemon's statistics."""
        req = pb.Request()
        req.stats.SetInParent()
        resp = self._call(req)
        if resp.WhichOneof("result") != "stats":
            self.close()
            raise self._protocol_error("reply to stats has no stats")
        return Stats.from_message(resp.stats)

    # The machinery.

    def _call(self, req) -> "pb.Response":
        """Sends one request; returns its Response.  Raises NdddRequestError
        if it was refused."""
        with self._lock:
            return self._call_locked(req)

    def _call_found(self, req) -> Optional["pb.Response"]:
        """_call, or None when the server answers NOT_FOUND."""
        try:
            return self._call(req)
        except NdddRequestError as e:
            if e.code == pb.NOT_FOUND:
                return None
            raise

    def _call_locked(self, req) -> "pb.Response":
        """_call, for a caller that holds the lock."""
        resp = self._exchange_one(req)
        if resp.HasField("status") and resp.status.code != pb.OK:
            raise NdddRequestError(code_of(resp.status.code),
                                   resp.status.message)
        return resp

    def _url_args(self, field: str, durability: Optional[str],
                  namespace: Optional[str],
                  ttl: Optional[int]) -> Tuple[int, str, int]:
        """The durability level, namespace and time to live a URL
        operation ``field`` sends, the client's defaults filled in."""
        level = (self._durability if durability is None
                 else _durability(durability))
        if field == "url_check":
            level = pb.DURABILITY_DEFAULT
        ns = self.namespace if namespace is None else _namespace(namespace)
        return level, ns, _ttl(ttl, "ttl")

    def _url_op(self, field: str, urls: Iterable[Url], result_cls: type,
                durability: Optional[str], namespace: Optional[str],
                ttl: Optional[int], with_times: bool) -> List[UrlResult]:
        """The URL operation ``field`` of Request (a UrlBatch) over urls;
        a result_cls per URL from the replies' UrlResults.  With digests,
        the URLs the canonicalizer refuses are answered here and the
        others sent as digests."""
        if isinstance(urls, (str, bytes, bytearray)):
            raise TypeError("expected an iterable of URLs, got a single "
                            "URL; use the singular method for one")
        level, ns, ttl = self._url_args(field, durability, namespace, ttl)
        urls = list(urls)
        encoded = [_encode_url(u) for u in urls]
        canon_id = None
        causes = None
        if self.digests and urls:
            with self._lock:
                canon = self._canon_for(len(urls))
            canon_id = canon.id
            encoded, causes = canon.digests(encoded)
        if causes is None:
            return self._send_urls(field, urls, encoded, canon_id,
                                   result_cls, level, ns, ttl, with_times)
        # Only the valid URLs go out; the others get their result here.
        sent = [i for i, c in enumerate(causes) if c is None]
        results: List[Optional[UrlResult]] = [
            None if c is None else result_cls(u, 0, Status(
                Code.INVALID_ARGUMENT, c)) for u, c in zip(urls, causes)]

        def merge(part):
            for i, r in zip(sent, part):
                results[i] = r
            return results

        try:
            part = self._send_urls(field, [urls[i] for i in sent],
                                   [encoded[i] for i in sent], canon_id,
                                   result_cls, level, ns, ttl, with_times)
        except NdddError as e:
            if e.results is not None:
                e.results = merge(e.results)
            raise
        return merge(part)

    def _one_url(self, field: str, url: Url, result_cls: type,
                 durability: Optional[str], namespace: Optional[str],
                 ttl: Optional[int], with_times: bool) -> UrlResult:
        """_url_op for one URL, the short way: one request (encoded here
        when it carries the URL), answered through _exchange_one (by
        _call_locked).  A client that asks one URL at a time spends most
        of each call in Python, so this path does only what one URL
        needs."""
        level, ns, ttl = self._url_args(field, durability, namespace, ttl)
        encoded = _encode_url(url)
        with self._lock:
            if self.digests:
                canon = self._canon_for(1)
                canon_id = canon.id
                (encoded,), (cause,) = canon.digests((encoded,))
                if cause is not None:
                    return result_cls(url, 0, Status(Code.INVALID_ARGUMENT,
                                                     cause))
                req = _url_request(field, [encoded], canon_id, level, ns,
                                   ttl, with_times)
            else:
                req = _one_url_request(field, encoded, level, ns, ttl,
                                       with_times)
            try:
                resp = self._call_locked(req)
            except NdddError as e:
                e.results = [None]
                raise
        return self._url_results(field, resp, [url], result_cls)[0]

    def _send_urls(self, field: str, urls: List[Url], encoded: List[bytes],
                   canon_id: Optional[str], result_cls: type, level: int,
                   ns: str, ttl: int, with_times: bool) -> List[UrlResult]:
        """Sends the URL operation ``field`` for urls, in batches of their
        encoded forms: the URLs themselves, or with canon_id their digests
        made with that canonicalization."""
        return self._batch_op(
            urls, encoded,
            lambda chunk: _url_request(field, chunk, canon_id, level, ns,
                                       ttl, with_times),
            lambda resp, chunk: self._url_results(field, resp, chunk,
                                                  result_cls))

    def _url_results(self, field: str, resp: "pb.Response", urls: List[Url],
                     result_cls: type) -> List[UrlResult]:
        """A result_cls per URL of urls from resp, the reply to their
        ``field`` request.  Raises NdddProtocolError when the reply does
        not answer them."""
        if resp.WhichOneof("result") != "urls":
            raise self._protocol_error("reply to %s has no URL results"
                                       % field)
        batch = resp.urls
        counts = batch.counts
        n = len(urls)
        if len(counts) != n:
            raise self._protocol_error(
                "reply to %s has %d counts for %d URLs"
                % (field, len(counts), n))
        # The times, one per URL each, or none when not asked for.
        times = (batch.first_seen_ms, batch.last_seen_ms, batch.expires_ms)
        if times[0] or times[1] or times[2]:
            if any(len(t) != n for t in times):
                raise self._protocol_error(
                    "reply to %s has %d, %d and %d times for %d URLs"
                    % ((field,) + tuple(map(len, times)) + (n,)))
            results = list(map(result_cls, urls, counts, repeat(None),
                               *times))
        else:
            results = list(map(result_cls, urls, counts, repeat(None)))
        for err in batch.errors:
            i = err.index
            if i >= n:
                raise self._protocol_error(
                    "reply to %s names item %d of %d" % (field, i, n))
            results[i] = result_cls(urls[i], counts[i], Status(
                code_of(err.status.code), err.status.message))
        return results

    def _canon_for(self, n: int) -> "_canon.Canon":
        """_daemon_canon for a call of n URLs, which fails with
        results [None] * n, none of them carried out (only stats were
        asked).  The caller holds the lock."""
        try:
            return self._daemon_canon()
        except NdddError as e:
            if isinstance(e, NdddConnectionError):
                e.sent = False
            e.results = [None] * n
            raise

    def _daemon_canon(self) -> "_canon.Canon":
        """The daemon's canonicalizer, asked of the daemon once per
        connection (another daemon may be behind the next one).  The
        caller holds the lock."""
        sock = self._ready_socket()
        if self._canon is not None and self._canon_sock is sock:
            return self._canon
        req = pb.Request()
        req.stats.SetInParent()
        resp = self._call_locked(req)
        if resp.WhichOneof("result") != "stats":
            self._drop()
            raise self._protocol_error("reply to stats has no stats")
        canon_id = resp.stats.canon
        if not canon_id:
            raise NdddRequestError(
                Code.INVALID_ARGUMENT, "nddd at %s states no "
                "canonicalization: it takes no digests (too old)"
                % self.address)
        if self._canon is None or self._canon.id != canon_id:
            try:
                self._canon = _canon.Canon(canon_id)
            except ValueError as e:
                raise NdddRequestError(Code.INVALID_ARGUMENT,
                                       "digests: %s" % e) from None
        self._canon_sock = self._sock
        return self._canon

    def _batch_op(self, items: List, encoded: List[bytes],
                  build: Callable, read: Callable) -> List:
        """Runs a batch operation: cuts items into batches (by count, and
        by the sizes of their encoded forms), sends build(encoded batch)
        for each, and returns read(Response, items of the batch) of every
        reply, concatenated in input order.  A reply with a status refuses
        its request: the rest of the call is not sent, and NdddRequestError
        is raised with the results obtained (see nddd.errors)."""
        results: List = [None] * len(items)
        refused: List[NdddRequestError] = []

        # (No annotations on these: they would be evaluated at every call.)
        def requests():
            for start, end in self._cut(encoded):
                yield build(encoded[start:end]), (start, end)

        def handle(span, resp):
            if resp.HasField("status") and resp.status.code != pb.OK:
                if not refused:
                    refused.append(NdddRequestError(
                        code_of(resp.status.code), resp.status.message))
                return False  # send no more of this call
            start, end = span
            results[start:end] = read(resp, items[start:end])
            return True

        if not items:
            return results
        with self._lock:
            try:
                self._exchange(requests(), handle)
            except NdddError as e:
                e.results = results
                raise
        if refused:
            refused[0].results = results
            raise refused[0]
        return results

    def _protocol_error(self, message: str) -> NdddProtocolError:
        return NdddProtocolError(message, address=self.address, sent=True)

    def _cut(self, encoded: List[bytes]) -> Iterator[Tuple[int, int]]:
        """(start, end) of each batch: at most batch_size items and, unless
        one item alone is larger, at most max_frame bytes."""
        limit = self.max_frame - _REQUEST_OVERHEAD - (
            len(self.token.encode()) + 4 if self.token else 0)
        n = len(encoded)
        start = 0
        while start < n:
            stop = min(n, start + self.batch_size)
            size = sum(map(len, encoded[start:stop])) + \
                _ITEM_OVERHEAD * (stop - start)
            if size <= limit:
                end = stop
            else:
                end, size = start, 0
                while end < stop:
                    size += len(encoded[end]) + _ITEM_OVERHEAD
                    if size > limit and end > start:
                        break
                    end += 1
            yield start, end
            start = end

    def _drop(self) -> None:
        if self._sock is not None:
            try:
                if isinstance(self._sock, ssl.SSLSocket):
                    self._tls_session = (self._sock.session
                                         or self._tls_session)
                self._sock.close()
            finally:
                self._sock = None
                self._poll = None

    def _connect(self) -> socket.socket:
        try:
            sock = socket.create_connection((self._host, self._port),
                                            timeout=self.connect_timeout)
        except TimeoutError as e:
            raise NdddTimeoutError(
                "connecting to nddd at %s timed out after %g s"
                % (self.address, self.connect_timeout),
                address=self.address) from e
        except OSError as e:
            raise NdddConnectionError(
                "cannot connect to nddd at %s: %s"
                % (self.address, e.strerror or e),
                address=self.address) from e
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._ssl_context is not None:
                sock = self._handshake(sock)
            sock.setblocking(False)
            poll = select.poll()
            poll.register(sock, select.POLLIN)
        except BaseException:
            sock.close()
            raise
        self._sock, self._poll = sock, poll
        return sock

    def _handshake(self, sock: socket.socket) -> ssl.SSLSocket:
        """The TLS connection over sock, its handshake done within the
        connect timeout; sock is closed if it fails."""
        try:
            return self._ssl_context.wrap_socket(
                sock, server_hostname=self.server_hostname,
                session=self._tls_session)
        except ssl.SSLCertVerificationError as e:
            sock.close()
            raise NdddConnectionError(
                "nddd at %s: its TLS certificate does not verify against "
                "%s: %s" % (self.address, self._tls_cas, _tls_failure(e)),
                address=self.address) from e
        except TimeoutError as e:
            sock.close()
            raise NdddTimeoutError(
                "TLS handshake with nddd at %s timed out after %g s"
                % (self.address, self.connect_timeout),
                address=self.address) from e
        except OSError as e:
            sock.close()
            raise NdddConnectionError(
                "TLS handshake with nddd at %s failed: %s"
                % (self.address, _tls_failure(e)),
                address=self.address) from e

    def _idle_alive(self) -> bool:
        """Whether the connection, readable between calls, is still open.
        Nothing is due from the daemon then: a plain socket that is
        readable was closed (a restart, a refusal).  Over TLS, the daemon's
        session tickets come after the handshake and are no close."""
        if not isinstance(self._sock, ssl.SSLSocket):
            return False
        try:
            return _read_some(self._sock) is None
        except OSError:
            return False

    def _ready_socket(self) -> socket.socket:
        """The connection, made or remade if needed."""
        if (self._sock is not None and self._poll.poll(0)
                and not self._idle_alive()):
            self._drop()
        if self._sock is None:
            return self._connect()
        return self._sock

    def _failure(self, e: BaseException, sent: bool) -> BaseException:
        """What an exchange that failed with e raises: closes the
        connection, and turns the failures of the connection (OSError,
        TLS errors, undecodable replies) into NdddErrors; sent tells
        whether anything of the exchange had been written."""
        self._drop()
        if isinstance(e, NdddError):
            failure = e
        elif isinstance(e, DecodeError):
            failure = NdddProtocolError(
                "undecodable reply from nddd at %s: %s" % (self.address, e),
                address=self.address, sent=sent)
        elif isinstance(e, ssl.SSLError):
            failure = NdddConnectionError(
                "TLS connection to nddd at %s failed: %s"
                % (self.address, _tls_failure(e)),
                address=self.address, sent=sent)
        elif isinstance(e, OSError):
            failure = NdddConnectionError(
                "connection to nddd at %s failed: %s"
                % (self.address, e.strerror or e),
                address=self.address, sent=sent)
        else:
            return e
        if failure is not e:
            failure.__cause__ = e
        return failure

    def _await_bytes(self, sock, deadline: Optional[float], sent: bool,
                     unanswered: int,
                     write_error: Optional[OSError]) -> Optional[bytes]:
        """Waits for sock to be readable, until deadline (time.monotonic();
        None: no limit), and reads what it has: bytes, or None when nothing
        came (wait again).  Raises NdddTimeoutError past the deadline, and
        NdddConnectionError when the daemon closed the connection with
        unanswered requests (write_error: why writing had failed)."""
        wait_ms = None
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise NdddTimeoutError(
                    "no reply from nddd at %s within %g s"
                    % (self.address, self.timeout),
                    address=self.address, sent=sent)
            wait_ms = math.ceil(left * 1000)
        events = self._poll.poll(wait_ms)
        if not events or not events[0][1] & _POLLIN_ANY:
            return None
        chunk = _read_some(sock)
        if chunk is not None and not chunk:
            raise NdddConnectionError(
                "nddd at %s closed the connection with %d request(s) "
                "unanswered%s" % (self.address, unanswered,
                                  " (%s)" % write_error.strerror
                                  if write_error else ""),
                address=self.address, sent=sent)
        return chunk

    def _reply_length(self, inbuf: bytearray, pos: int, sent: bool) -> int:
        """The length of the reply frame whose 4-byte header is at
        inbuf[pos:].  Raises NdddProtocolError for a frame no reply may
        be."""
        (length,) = _LEN.unpack_from(inbuf, pos)
        if length > max(self.max_frame, DEFAULT_MAX_FRAME):
            raise NdddProtocolError(
                "reply frame of %d bytes from %s" % (length, self.address),
                address=self.address, sent=sent)
        return length

    @staticmethod
    def _reply(data: bytes) -> "pb.Response":
        """The Response in a reply frame.  Raises NdddRequestError for one
        of id 0: the daemon refusing the connection or a frame, and
        closing it."""
        resp = pb.Response.FromString(data)
        if resp.id == 0:
            raise NdddRequestError(
                code_of(resp.status.code),
                resp.status.message + " (nddd closed the connection)")
        return resp

    def _unknown_reply(self, resp: "pb.Response",
                       sent: bool) -> NdddProtocolError:
        """What a reply that answers no request sent raises."""
        return NdddProtocolError(
            "reply with unknown id %d from %s" % (resp.id, self.address),
            address=self.address, sent=sent)

    def _request_frame(self, req, rid: int) -> bytes:
        """The frame of req, a Request or one encoded as bytes without its
        id and token (protobuf takes fields in any order), with id rid and
        the client's token."""
        if type(req) is bytes:
            tail = _TAG_ID + _varint(rid)
            if self.token:
                tail += _field(_TAG_TOKEN, self.token.encode())
            return _LEN.pack(len(req) + len(tail)) + req + tail
        req.id = rid
        if self.token:
            req.token = self.token
        data = req.SerializeToString()
        return _LEN.pack(len(data)) + data

    def _exchange_one(self, req) -> "pb.Response":
        """_exchange for one Request (or one encoded, as _exchange takes
        them): sends it with a fresh id and returns its Response, with the
        same failures, but without the window's bookkeeping, a large part
        of what a call of one URL costs in Python.  The caller holds the
        lock."""
        sent = False
        try:
            sock = self._ready_socket()
            rid = self._next_id
            self._next_id = rid + 1
            out = memoryview(self._request_frame(req, rid))
            deadline = (None if self.timeout is None
                        else time.monotonic() + self.timeout)
            inbuf = bytearray()
            polling_out = False
            while True:
                if out:
                    n = _send_some(sock, out)
                    if n:
                        sent = True
                        out = out[n:]
                    if bool(out) != polling_out:
                        # (Only until the request is out: the next call's
                        # _ready_socket takes a writable socket as closed.)
                        polling_out = bool(out)
                        self._poll.modify(sock, select.POLLIN | (
                            select.POLLOUT if out else 0))
                chunk = self._await_bytes(sock, deadline, sent, 1, None)
                if chunk is not None:
                    inbuf += chunk
                    if len(inbuf) >= 4:
                        length = self._reply_length(inbuf, 0, sent)
                        if len(inbuf) - 4 >= length:
                            break
            if len(inbuf) != 4 + length:
                raise NdddProtocolError(
                    "%d bytes from %s after the only reply awaited"
                    % (len(inbuf) - 4 - length, self.address),
                    address=self.address, sent=sent)
            resp = self._reply(bytes(inbuf[4:]))
            if resp.id != rid:
                raise self._unknown_reply(resp, sent)
            return resp
        except BaseException as e:
            raise self._failure(e, sent)

    def _exchange(self, requests: Iterator[Tuple[object, object]],
                  handle: Callable[[object, object], Optional[bool]]) -> None:
        """Sends each (Request, context) of requests with a fresh id, up to
        window of them in flight (a Request may also come encoded, as
        bytes without its id and token, which are appended here: protobuf
        takes fields in any order), and calls handle(context, Response) for
        each reply as it arrives.  When handle returns False, no further
        requests are taken from requests; those in flight are still
        awaited.  Returns when every request sent was answered.

        Any exception closes the connection.  Failures of the connection
        raise NdddConnectionError (sent tells whether anything had been
        written), a timeout NdddTimeoutError, a Response with id 0 (the
        daemon refusing the connection or a frame) NdddRequestError.
        The caller holds the lock."""
        sock = self._ready_socket()
        poll = self._poll
        timeout = self.timeout
        pending = {}                    # id -> (context, time queued)
        out = bytearray()               # bytes queued, not yet written
        inbuf = bytearray()
        more = True
        sent = False
        write_error = None
        try:
            while True:
                while more and len(pending) < self.window:
                    try:
                        req, ctx = next(requests)
                    except StopIteration:
                        more = False
                        break
                    rid = self._next_id
                    self._next_id = rid + 1
                    out += self._request_frame(req, rid)
                    pending[rid] = (ctx, time.monotonic())
                if not pending:
                    return
                if out:
                    try:
                        n = _send_some(sock, out)
                    except OSError as e:
                        # The daemon is gone or closing; what it said last
                        # (an id 0 reply) may still be readable.
                        write_error = e
                        out.clear()
                        more = False
                        n = 0
                    if n:
                        sent = True
                        del out[:n]
                poll.modify(sock, select.POLLIN |
                            (select.POLLOUT if out else 0))
                chunk = self._await_bytes(
                    sock, None if timeout is None else
                    next(iter(pending.values()))[1] + timeout, sent,
                    len(pending), write_error)
                if chunk is None:
                    continue
                inbuf += chunk
                pos = 0
                while len(inbuf) - pos >= 4:
                    length = self._reply_length(inbuf, pos, sent)
                    if len(inbuf) - pos - 4 < length:
                        break
                    resp = self._reply(bytes(inbuf[pos + 4:pos + 4 +
                                                   length]))
                    pos += 4 + length
                    entry = pending.pop(resp.id, None)
                    if entry is None:
                        raise self._unknown_reply(resp, sent)
                    if handle(entry[0], resp) is False:
                        more = False
                del inbuf[:pos]
        except BaseException as e:
            raise self._failure(e, sent)

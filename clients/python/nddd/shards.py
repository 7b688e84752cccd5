"""Several nddd daemons as one service: routing by the clients.

    from nddd import ShardedClient

    with ShardedClient(["nddd-0.nddd:6464", "nddd-1.nddd:6464",
                        "nddd-2.nddd:6464"]) as shards:
        for r in shards.submit_urls(urls):
            ...
        for d in shards.submit_docs([(url, body), ...]):
            print(d.doc_id, d.group)

This is libnddd's shard list (``nddd_shards_*``, docs/sharding.md)
through ctypes, so that Python and C route alike, with one
implementation.  Each daemon (a shard) owns the URLs whose digest (the
MD5 of the canonical form that keys them in a daemon) its place in the
list gets by a jump consistent hash; URLs are canonicalized and hashed
here with the daemons' own code and the settings every shard must state
alike (their canonicalization and their k), and each call's parts go to
the shards in parallel.  A document is stored on the shard of its URL;
its neighbours and its group come from every shard, decided here as one
daemon holding all the documents would decide them; its ids are global
(the shard's place in the list in their top 16 bits).  A shard that
cannot be reached fails its own URLs and documents, with
``Code.UNAVAILABLE`` and its address in the message, and is tried again
at the next call.  Every client of a sharded service must be given the
same list in the same order.
"""

import ctypes
import os
import threading
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from . import _canon
from .client import (Address, DEFAULT_BATCH_SIZE, DEFAULT_TIMEOUT, Url,
                     _encode_body, _encode_url, _namespace, _ttl,
                     parse_address)
from .errors import NdddConnectionError, NdddError
from .results import (CheckResult, DeleteResult, DocResult, Neighbour,
                      QueryResult, Status, SubmitResult, UrlResult, code_of,
                      content_name, match_number)

_c_int = ctypes.c_int
_u64 = ctypes.c_uint64
_size = ctypes.c_size_t
_str = ctypes.c_char_p


class _Options(ctypes.Structure):
    _fields_ = [("timeout_ms", _c_int), ("token", _str), ("tls", _c_int),
                ("tls_ca", _str), ("tls_cert", _str), ("tls_key", _str),
                ("tls_name", _str)]


class _UrlOpts(ctypes.Structure):
    _fields_ = [("ns", _str), ("ttl_seconds", _u64), ("with_times", _c_int)]


class _UrlResult(ctypes.Structure):
    _fields_ = [("code", _c_int), ("count", _u64), ("message", _str),
                ("first_seen_ms", _u64), ("last_seen_ms", _u64),
                ("expires_ms", _u64)]


# struct nddd_neighbour, nddd_doc and nddd_doc_item (clients/libnddd/
# nddd.h), field for field: enums are ints.
class _Neighbour(ctypes.Structure):
    _fields_ = [("doc_id", _u64), ("url", ctypes.c_void_p),
                ("url_len", _size), ("distance", ctypes.c_uint),
                ("group", _u64), ("created_ms", _u64),
                ("resemblance", ctypes.c_float),
                ("containment", ctypes.c_float), ("verified", _c_int)]


class _Doc(ctypes.Structure):
    _fields_ = [("doc_id", _u64), ("simhash", _u64), ("group", _u64),
                ("created", _c_int), ("url", ctypes.c_void_p),
                ("url_len", _size), ("nnear", _size),
                ("near", ctypes.POINTER(_Neighbour)), ("near_total", _u64),
                ("content", _c_int), ("sketch", ctypes.c_void_p),
                ("sketch_len", _size), ("code", _c_int),
                ("message", _str), ("created_ms", _u64),
                ("stored_id", _u64)]


class _DocItem(ctypes.Structure):
    _fields_ = [("url", ctypes.c_void_p), ("url_len", _size),
                ("body", ctypes.c_void_p), ("body_len", _size),
                ("format", _c_int), ("query_only", _c_int),
                ("group", _u64), ("new_group", _c_int),
                ("match", _c_int), ("with_sketch", _c_int)]


_URL_OPS = {"url_submit": 0, "url_check": 1, "url_delete": 2}
_DURABILITY = {None: 0, "default": 0, "durable": 1, "relaxed": 2}
_declared = False


def _library():
    global _declared
    lib = _canon.load_library()
    if _declared:
        return lib
    p = ctypes.POINTER
    lib.nddd_shards_open.restype = ctypes.c_void_p
    lib.nddd_shards_open.argtypes = [p(_str), _size, p(_Options),
                                     p(ctypes.c_void_p)]
    lib.nddd_shards_close.argtypes = [ctypes.c_void_p]
    lib.nddd_shards_close.restype = None
    lib.nddd_shards_canon_id.restype = _str
    lib.nddd_shards_canon_id.argtypes = [ctypes.c_void_p]
    lib.nddd_shards_errstr.restype = _str
    lib.nddd_shards_errstr.argtypes = [ctypes.c_void_p]
    lib.nddd_shards_count.restype = _size
    lib.nddd_shards_count.argtypes = [ctypes.c_void_p]
    lib.nddd_shards_address.restype = _str
    lib.nddd_shards_address.argtypes = [ctypes.c_void_p, _size]
    lib.nddd_shards_use_digests.restype = None
    lib.nddd_shards_use_digests.argtypes = [ctypes.c_void_p, _c_int]
    lib.nddd_shards_set_durability.restype = None
    lib.nddd_shards_set_durability.argtypes = [ctypes.c_void_p, _c_int]
    lib.nddd_shards_set_url_opts.argtypes = [ctypes.c_void_p, p(_UrlOpts)]
    lib.nddd_shards_set_doc_namespace.argtypes = [ctypes.c_void_p, _str]
    lib.nddd_shards_urls.argtypes = [ctypes.c_void_p, _c_int, p(_str),
                                     _size, p(_UrlResult), _size,
                                     ctypes.c_uint]
    lib.nddd_urls_results_free.restype = None
    lib.nddd_urls_results_free.argtypes = [p(_UrlResult), _size]
    lib.nddd_shards_docs.argtypes = [ctypes.c_void_p, p(_DocItem), _size,
                                     p(_Doc), _size]
    lib.nddd_shards_doc_query.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                          _size, _c_int, p(_Doc)]
    lib.nddd_docs_results_free.restype = None
    lib.nddd_docs_results_free.argtypes = [p(_Doc), _size]
    if hasattr(lib, "nddd_shards_set_doc_match"):
        lib.nddd_shards_set_doc_match.restype = None
        lib.nddd_shards_set_doc_match.argtypes = [ctypes.c_void_p, _c_int]
    _declared = True
    return lib


def _text(ptr, length) -> str:
    return ctypes.string_at(ptr, length).decode("utf-8", "replace")


def _near(d: _Doc) -> List[Neighbour]:
    return [Neighbour(n.doc_id, _text(n.url, n.url_len), n.distance,
                      n.group, n.created_ms, n.resemblance, n.containment,
                      bool(n.verified))
            for n in (d.near[i] for i in range(d.nnear))]


def _sketch(d: _Doc) -> bytes:
    return ctypes.string_at(d.sketch, d.sketch_len) if d.sketch_len else b""


def _status(code: int, message: Optional[bytes]) -> Status:
    return Status(code_of(code),
                  message.decode("utf-8", "replace") if message else "")


class ShardedClient:
    """URL and document operations over a list of daemons, routed here.

    ``addresses``: the shard list, in order.  ``timeout``: seconds to
    connect and for each wait (None: none).  ``token`` (default: the
    NDDD_TOKEN environment variable), ``durability``,
    ``namespace`` (of URLs and documents), ``match`` (the answer of
    document calls: "verified", "hamming", or None: the shards'),
    ``batch_size`` (URLs per
    request), ``window`` (requests in flight per shard),
    ``doc_batch_size`` (documents decided and stored together),
    ``digests`` (send URLs as their digests: the daemons then keep no
    text of them, which forget_host and forget_prefix need) and the TLS
    options (``tls``, ``ca_file``, ``cert_file``, ``key_file``,
    ``server_hostname``) as for :class:`nddd.Client`.  Connects to every
    shard at once: raises ValueError for an empty list or a shard listed
    twice, NdddError when two shards state different settings,
    NdddConnectionError when no shard answers, NdddLibraryError without
    libnddd.so.  Calls of several threads take turns.
    """

    def __init__(self, addresses: Sequence[Address], *,
                 timeout: Optional[float] = DEFAULT_TIMEOUT,
                 token: Optional[str] = None,
                 durability: Optional[str] = None, namespace: str = "",
                 match: Optional[str] = None,
                 batch_size: int = DEFAULT_BATCH_SIZE, window: int = 4,
                 doc_batch_size: int = 256, digests: bool = False,
                 tls: bool = False,
                 ca_file: Optional[str] = None,
                 cert_file: Optional[str] = None,
                 key_file: Optional[str] = None,
                 server_hostname: Optional[str] = None):
        if not addresses:
            raise ValueError("a shard list names at least one daemon")
        if token is None:
            token = os.environ.get("NDDD_TOKEN") or None
        names = []
        for a in addresses:
            host, port = parse_address(a)
            names.append("[%s]:%d" % (host, port) if ":" in host
                         else "%s:%d" % (host, port))
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ValueError("shard %s is listed twice" % name)
        if durability not in _DURABILITY:
            raise ValueError("durability: durable, relaxed, default or "
                             "None, not %r" % (durability,))
        if batch_size < 1 or window < 1 or not 1 <= doc_batch_size <= 4096:
            raise ValueError("batch_size and window must be at least 1, "
                             "doc_batch_size 1 to 4096")
        self._names = names
        self.namespace = _namespace(namespace)
        match_number(match)
        self.match = match
        self.durability = durability
        self.batch_size = batch_size
        self.window = window
        self.doc_batch_size = doc_batch_size
        self._lib = _library()
        self._lock = threading.Lock()
        self._s = None
        enc = (lambda v: v.encode() if v is not None else None)
        tls = tls or bool(ca_file or cert_file or key_file)
        # Kept alive: the library copies the strings, but only at open.
        self._opts = _Options(
            0 if timeout is None else max(1, int(timeout * 1000)),
            enc(token), int(tls), enc(ca_file), enc(cert_file),
            enc(key_file), enc(server_hostname))
        addrs = (_str * len(names))(*(n.encode() for n in names))
        err = ctypes.c_void_p()
        s = self._lib.nddd_shards_open(addrs, len(names),
                                       ctypes.byref(self._opts),
                                       ctypes.byref(err))
        if not s:
            message = "out of memory"
            if err.value:
                message = ctypes.string_at(err.value).decode(
                    "utf-8", "replace")
                _canon._free(err.value)
            if message.startswith("no shard answers"):
                raise NdddConnectionError(message, address=names[0])
            if "listed twice" in message:
                raise ValueError(message)
            raise NdddError(message)
        self._s = s
        self._lib.nddd_shards_set_durability(s, _DURABILITY[durability])
        self._lib.nddd_shards_use_digests(s, int(bool(digests)))
        self._check(self._lib.nddd_shards_set_doc_namespace(
            s, self.namespace.encode()))
        self._canon = _canon.Canon(
            self._lib.nddd_shards_canon_id(s).decode())

    @property
    def addresses(self) -> List[str]:
        """The shard list, in order: as given, and longer once a shard is
        added (the daemons' replies say so; docs/sharding.md)."""
        if not self._s:
            return list(self._names)
        with self._lock:
            return [self._lib.nddd_shards_address(self._s, i).decode()
                    for i in range(self._lib.nddd_shards_count(self._s))]

    def __repr__(self) -> str:
        return "<nddd.ShardedClient %s>" % ",".join(self.addresses)

    def __enter__(self) -> "ShardedClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        self.close()

    def close(self) -> None:
        """Closes every shard's connection; the client is then unusable."""
        s, self._s = getattr(self, "_s", None), None
        if s:
            self._lib.nddd_shards_close(s)

    def _handle(self):
        if not self._s:
            raise NdddError("the ShardedClient is closed")
        return self._s

    def _check(self, rc: int) -> None:
        if rc != 0:
            raise NdddError(self._lib.nddd_shards_errstr(self._s).decode(
                "utf-8", "replace"))

    def shard_of(self, url: Url) -> Optional[int]:
        """The index in the list of the shard that owns url (its URL
        operations and its document), or None for a URL no daemon would
        take."""
        with self._lock:
            digests, causes = self._canon.digests([_encode_url(url)])
        if causes[0] is not None:
            return None
        return _canon.route(digests, len(self.addresses))[0]

    # URL operations: as Client's.

    def submit_urls(self, urls: Iterable[Url], *,
                    durability: Optional[str] = None,
                    namespace: Optional[str] = None,
                    ttl: Optional[int] = None,
                    with_times: bool = False) -> List[SubmitResult]:
        """Client.submit_urls over the shards."""
        return self._url_op("url_submit", urls, SubmitResult, durability,
                            namespace, ttl, with_times)

    def check_urls(self, urls: Iterable[Url], *,
                   namespace: Optional[str] = None,
                   with_times: bool = False) -> List[CheckResult]:
        """Client.check_urls over the shards."""
        return self._url_op("url_check", urls, CheckResult, None,
                            namespace, None, with_times)

    def delete_urls(self, urls: Iterable[Url], *,
                    durability: Optional[str] = None,
                    namespace: Optional[str] = None,
                    with_times: bool = False) -> List[DeleteResult]:
        """Client.delete_urls over the shards."""
        return self._url_op("url_delete", urls, DeleteResult, durability,
                            namespace, None, with_times)

    def _url_op(self, field: str, urls: Iterable[Url], result_cls: type,
                durability: Optional[str], namespace: Optional[str],
                ttl: Optional[int], with_times: bool) -> List[UrlResult]:
        if isinstance(urls, (str, bytes, bytearray)):
            raise TypeError("expected an iterable of URLs, got a single "
                            "URL; use a list of one")
        if durability is None:
            durability = self.durability
        if durability not in _DURABILITY:
            raise ValueError("durability: durable, relaxed, default or "
                             "None, not %r" % (durability,))
        ns = self.namespace if namespace is None else _namespace(namespace)
        ttl = _ttl(ttl, "ttl")
        urls = list(urls)
        n = len(urls)
        # A URL with a NUL byte cannot be a C string: no daemon takes it.
        encoded = [_encode_url(u) for u in urls]
        bad = [b"\0" in e for e in encoded]
        arr = (_str * max(n, 1))(*(b"" if b else e
                                   for e, b in zip(encoded, bad)))
        res = (_UrlResult * max(n, 1))()
        opts = _UrlOpts(ns.encode(), ttl or 0, int(with_times))
        lib = self._lib
        with self._lock:
            s = self._handle()
            self._check(lib.nddd_shards_set_url_opts(s, ctypes.byref(opts)))
            lib.nddd_shards_set_durability(
                s, _DURABILITY[durability] if field != "url_check" else 0)
            self._check(lib.nddd_shards_urls(s, _URL_OPS[field], arr, n,
                                             res, self.batch_size,
                                             self.window))
        try:
            out = []
            for u, r, b in zip(urls, res, bad):
                if b:
                    out.append(result_cls(u, 0, Status(
                        code_of(1), "the URL has a NUL byte")))
                elif r.code != 0:
                    out.append(result_cls(u, 0, _status(r.code, r.message)))
                else:
                    out.append(result_cls(u, r.count, None, r.first_seen_ms,
                                          r.last_seen_ms, r.expires_ms))
            return out
        finally:
            lib.nddd_urls_results_free(res, n)

    # Documents.

    def submit_docs(self, docs: Iterable[Tuple], *,
                    namespace: Optional[str] = None,
                    match: Optional[str] = None) -> List[DocResult]:
        """Stores documents on the shards of their URLs: docs yields (url,
        body) or (url, body, html).  Returns a DocResult per document, in
        order: its global id, its group among every shard's documents
        (as one daemon holding them all would decide it, the documents of
        the call in order), its neighbours from every shard by the answer
        match (None: the client's; all of them that the shards list),
        ``url`` as given.  A document refused has its ``error``; the
        others go on."""
        return self._docs(docs, False, namespace, match)

    def query_docs(self, docs: Iterable[Tuple], *,
                   namespace: Optional[str] = None,
                   match: Optional[str] = None) -> List[DocResult]:
        """submit_docs storing nothing: each document's neighbours on
        every shard and the group it would join (0: a new one)."""
        return self._docs(docs, True, namespace, match)

    def _set_match(self, s, match: Optional[str]) -> None:
        """The answer of the next document call (lock held)."""
        m = match_number(self.match if match is None else match)
        if hasattr(self._lib, "nddd_shards_set_doc_match"):
            self._lib.nddd_shards_set_doc_match(s, m)
        elif m != 0:
            raise NdddError("%s has no nddd_shards_set_doc_match: it is "
                            "older than this package; build it again "
                            "with `make`" % _canon.library_path())

    def _docs(self, docs: Iterable[Tuple], query_only: bool,
              namespace: Optional[str],
              match: Optional[str] = None) -> List[DocResult]:
        if isinstance(docs, (str, bytes, tuple)):
            raise TypeError("expected an iterable of (url, body) tuples")
        docs = list(docs)
        n = len(docs)
        ns = self.namespace if namespace is None else _namespace(namespace)
        m = match_number(self.match if match is None else match)
        keep = []
        items = (_DocItem * max(n, 1))()
        for it, d in zip(items, docs):
            u = _encode_url(d[0])
            b = _encode_body(d[1])
            keep.append((u, b))
            it.url = ctypes.cast(ctypes.c_char_p(u), ctypes.c_void_p)
            it.url_len = len(u)
            it.body = ctypes.cast(ctypes.c_char_p(b), ctypes.c_void_p)
            it.body_len = len(b)
            it.format = 1 if len(d) > 2 and d[2] else 0
            it.query_only = int(query_only)
            it.match = m
        res = (_Doc * max(n, 1))()
        lib = self._lib
        with self._lock:
            s = self._handle()
            self._check(lib.nddd_shards_set_doc_namespace(s, ns.encode()))
            self._set_match(s, match)
            self._check(lib.nddd_shards_docs(s, items, n, res,
                                             self.doc_batch_size))
        try:
            return [DocResult.failed(d[0], _status(r.code, r.message))
                    if r.code != 0 else
                    DocResult(d[0], r.doc_id, r.simhash, r.group, _near(r),
                              r.near_total, bool(r.created), None,
                              content_name(r.content), _sketch(r),
                              r.created_ms, r.stored_id)
                    for d, r in zip(docs, res)]
        finally:
            lib.nddd_docs_results_free(res, n)

    def query_doc(self, body: Union[str, bytes], *, html: bool = False,
                  namespace: Optional[str] = None,
                  match: Optional[str] = None) -> QueryResult:
        """The stored documents near body on every shard by the answer
        match (None: the client's): the most similar first (by the
        Hamming answer the nearest), then the oldest.  Raises NdddError
        for a body refused (EMPTY_DOCUMENT...)."""
        b = _encode_body(body)
        ns = self.namespace if namespace is None else _namespace(namespace)
        out = _Doc()
        lib = self._lib
        with self._lock:
            s = self._handle()
            self._check(lib.nddd_shards_set_doc_namespace(s, ns.encode()))
            self._set_match(s, match)
            self._check(lib.nddd_shards_doc_query(s, b, len(b), int(html),
                                                  ctypes.byref(out)))
        try:
            if out.code != 0:
                raise NdddError(str(_status(out.code, out.message)))
            return QueryResult(out.simhash, _near(out), out.near_total,
                               content_name(out.content))
        finally:
            lib.nddd_docs_results_free(ctypes.byref(out), 1)

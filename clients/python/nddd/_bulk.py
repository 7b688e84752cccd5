"""Bulk URL requests through libnddd.so (ctypes): libnddd's nddd_bulk_*.

A bulk request hashes every URL here, keeps them (spilling to a file past
``memory`` bytes), and sends them in the store's key order, so that the
daemon reads each page of its store once however much larger than its
memory the store is (docs/urlstore.md, "Bulk checks").  The answers are
exactly the online requests' (Client.check_urls and the others).  The C
library does the hashing, the sorting and the pipelined requests, on a
connection of its own made with the Client's settings.
"""

import ctypes
import os
from typing import Callable, Iterable, Optional

from . import _canon
from .errors import NdddConnectionError, NdddRequestError
from .results import CheckResult, Code, DeleteResult, Status, SubmitResult

# libnddd's enum nddd_url_op.
OPS = {"submit": (0, SubmitResult), "check": (1, CheckResult),
       "delete": (2, DeleteResult)}

# URLs handed to libnddd at a time.
_CHUNK = 65536

_PROGRESS = ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_uint64,
                             ctypes.c_void_p)


class _Options(ctypes.Structure):
    """struct nddd_options."""
    _fields_ = [("timeout_ms", ctypes.c_int), ("token", ctypes.c_char_p),
                ("tls", ctypes.c_int), ("tls_ca", ctypes.c_char_p),
                ("tls_cert", ctypes.c_char_p), ("tls_key", ctypes.c_char_p),
                ("tls_name", ctypes.c_char_p)]


class _UrlOpts(ctypes.Structure):
    """struct nddd_url_opts."""
    _fields_ = [("ns", ctypes.c_char_p), ("ttl_seconds", ctypes.c_uint64),
                ("with_times", ctypes.c_int)]


class _BulkOpts(ctypes.Structure):
    """struct nddd_bulk_opts."""
    _fields_ = [("memory", ctypes.c_size_t), ("dir", ctypes.c_char_p),
                ("batch", ctypes.c_size_t), ("window", ctypes.c_uint)]


_declared = False


def _library():
    """libnddd.so, with the functions used here declared."""
    global _declared
    lib = _canon.load_library("bulk requests need libnddd.so")
    if _declared:
        return lib
    vp, sz, u64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64
    lib.nddd_connect_opts.restype = vp
    lib.nddd_connect_opts.argtypes = [ctypes.c_char_p,
                                      ctypes.POINTER(_Options),
                                      ctypes.POINTER(vp)]
    lib.nddd_close.argtypes = [vp]
    lib.nddd_close.restype = None
    lib.nddd_errstr.restype = ctypes.c_char_p
    lib.nddd_errstr.argtypes = [vp]
    lib.nddd_set_durability.argtypes = [vp, ctypes.c_int]
    lib.nddd_set_durability.restype = None
    lib.nddd_set_url_opts.argtypes = [vp, ctypes.POINTER(_UrlOpts)]
    lib.nddd_set_url_opts.restype = ctypes.c_int
    lib.nddd_bulk_new.restype = vp
    lib.nddd_bulk_new.argtypes = [vp, ctypes.c_int,
                                  ctypes.POINTER(_BulkOpts),
                                  ctypes.POINTER(vp)]
    lib.nddd_bulk_add_many.argtypes = [vp, ctypes.POINTER(ctypes.c_char_p),
                                       ctypes.POINTER(sz), sz]
    lib.nddd_bulk_add_many.restype = ctypes.c_int
    lib.nddd_bulk_count.argtypes = [vp]
    lib.nddd_bulk_count.restype = u64
    lib.nddd_bulk_spilled.argtypes = [vp]
    lib.nddd_bulk_spilled.restype = u64
    lib.nddd_bulk_run.argtypes = [vp, _PROGRESS, vp]
    lib.nddd_bulk_run.restype = ctypes.c_int
    lib.nddd_bulk_result.argtypes = [vp, u64, ctypes.POINTER(u64),
                                     ctypes.POINTER(ctypes.c_char_p)]
    lib.nddd_bulk_result.restype = ctypes.c_int
    lib.nddd_bulk_errstr.argtypes = [vp]
    lib.nddd_bulk_errstr.restype = ctypes.c_char_p
    lib.nddd_bulk_free.argtypes = [vp]
    lib.nddd_bulk_free.restype = None
    _declared = True
    return lib


def _add(lib, b, chunk) -> None:
    """Adds a chunk of encoded URLs to bulk request b (hashed by libnddd
    on every processor)."""
    n = len(chunk)
    if n == 0:
        return
    ptrs = (ctypes.c_char_p * n)(*chunk)
    lens = (ctypes.c_size_t * n)(*map(len, chunk))
    if lib.nddd_bulk_add_many(b, ptrs, lens, n) != 0:
        raise NdddRequestError(Code.RESOURCE_EXHAUSTED,
                               lib.nddd_bulk_errstr(b).decode())


def _taken(err: ctypes.c_void_p) -> str:
    """A message libnddd allocated, freed."""
    if not err.value:
        return "out of memory"
    message = ctypes.string_at(err.value).decode("utf-8", "replace")
    _canon._free(err.value)
    return message


class BulkResults:
    """The answers of a bulk request, by the URLs' places in its input: a
    sequence of results of the operation's class (CheckResult,
    SubmitResult, DeleteResult) made when asked for, whose ``url`` is None
    (the input names them by place).  The answers are kept by libnddd, 4
    bytes a URL, in a file the kernel caches; ``close()`` (or the end of a
    ``with`` block) frees them.  ``spilled`` is the bytes of URLs that went
    to the spill file."""

    def __init__(self, lib, handle, result_cls, spilled: int):
        self._lib = lib
        self._b = handle
        self._cls = result_cls
        self._n = lib.nddd_bulk_count(handle)
        self.spilled = spilled

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n or self._b is None:
            raise IndexError("bulk result %d of %d" % (i, self._n))
        count = ctypes.c_uint64()
        message = ctypes.c_char_p()
        code = self._lib.nddd_bulk_result(self._b, i, ctypes.byref(count),
                                          ctypes.byref(message))
        if code == 0:
            return self._cls(None, count.value, None)
        return self._cls(None, 0, Status(Code(code), (message.value or b"")
                                         .decode("utf-8", "replace")))

    def __iter__(self):
        for i in range(self._n):
            yield self[i]

    def close(self) -> None:
        if self._b is not None:
            self._lib.nddd_bulk_free(self._b)
            self._b = None

    def __enter__(self) -> "BulkResults":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        self.close()


def run(client, op: str, urls: Iterable, *, namespace: str, durability: int,
        ttl: int, memory: Optional[int], spill_dir: Optional[str],
        progress: Optional[Callable[[int, int], None]]) -> BulkResults:
    """A bulk request of op ("check", "submit", "delete") of urls (str or
    bytes), on a connection of libnddd's made with client's settings.
    Raises NdddConnectionError when the daemon cannot be reached or the
    connection fails midway, NdddRequestError when the request cannot be
    made (memory, a full spill directory), ValueError for a spill_dir this
    process cannot write."""
    lib = _library()
    number, result_cls = OPS[op]
    if spill_dir is not None and not os.access(spill_dir,
                                               os.W_OK | os.X_OK):
        raise ValueError("spill_dir %s: not a directory this process can "
                         "write" % spill_dir)
    opts = _Options(
        timeout_ms=int(client.timeout * 1000) if client.timeout else 0,
        token=client.token.encode() if client.token else None,
        tls=1 if client.tls else 0)
    if client.tls:
        ca, cert, key = client._tls_files
        if client._ssl_context_given:
            raise NdddRequestError(
                Code.INVALID_ARGUMENT, "bulk requests take TLS settings as "
                "files (ca_file, cert_file, key_file), not an ssl_context")
        opts.tls_ca = ca.encode() if ca else None
        opts.tls_cert = cert.encode() if cert else None
        opts.tls_key = key.encode() if key else None
        opts.tls_name = client.server_hostname.encode()
    err = ctypes.c_void_p()
    c = lib.nddd_connect_opts(client.address.encode(), ctypes.byref(opts),
                              ctypes.byref(err))
    if not c:
        raise NdddConnectionError(_taken(err), address=client.address,
                                  sent=False)
    b = None
    try:
        lib.nddd_set_durability(c, durability)
        uo = _UrlOpts(ns=namespace.encode() if namespace else None,
                      ttl_seconds=ttl or 0)
        if lib.nddd_set_url_opts(c, ctypes.byref(uo)) != 0:
            raise NdddRequestError(Code.INVALID_ARGUMENT,
                                   lib.nddd_errstr(c).decode())
        bo = _BulkOpts(memory=memory or 0,
                       dir=spill_dir.encode() if spill_dir else None,
                       batch=client.batch_size, window=client.window)
        b = lib.nddd_bulk_new(c, number, ctypes.byref(bo), ctypes.byref(err))
        if not b:
            raise NdddConnectionError(_taken(err), address=client.address,
                                      sent=False)
        chunk = []
        for url in urls:
            chunk.append(url.encode() if isinstance(url, str) else
                         bytes(url))
            if len(chunk) == _CHUNK:
                _add(lib, b, chunk)
                chunk = []
        _add(lib, b, chunk)
        callback = _PROGRESS(lambda done, total, arg: progress(done, total)
                             if progress is not None else None)
        failed = lib.nddd_bulk_run(b, callback, None) != 0
        message = lib.nddd_bulk_errstr(b).decode("utf-8", "replace")
        results = BulkResults(lib, b, result_cls, lib.nddd_bulk_spilled(b))
        b = None
        if failed:
            # What was answered stays in the results; the rest says
            # UNAVAILABLE.
            raise NdddConnectionError(message, address=client.address,
                                      sent=True, results=results)
        return results
    finally:
        if b is not None:
            lib.nddd_bulk_free(b)
        lib.nddd_close(c)

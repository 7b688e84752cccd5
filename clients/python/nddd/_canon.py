"""URL digests made here, with the daemon's own canonicalizer, through
libnddd.so (ctypes).

The daemon keys a URL by the MD5 of its canonical form.  A client that
sends that digest instead of the URL (``Client(digests=True)``) must make
it exactly as the daemon does, with the daemon's options: libnddd's
``nddd_canon_*`` functions run the daemon's own C code, and the daemon's
stats name the options (``Stats.canon``).

The library is looked for, in order, at ``$NDDD_LIBRARY``; next to this
package (``nddd/libnddd.so``, for an installation that ships it); in the
source tree the package is part of (``build/release/libnddd.so``, made by
``make``); then by ``ctypes.util.find_library("nddd")`` (an installed
``libnddd.so``, ``make install``).
"""

import ctypes
import ctypes.util
import os
from typing import List, Optional, Sequence, Tuple

from .errors import NdddLibraryError

#: Bytes of a digest: an MD5.
DIGEST_LEN = 16
# URLs per call into the library: bounds the memory of one call.
_CHUNK = 65536

_HERE = os.path.dirname(os.path.abspath(__file__))

_lib = None
_lib_path = None


def library_candidates() -> List[str]:
    """Where libnddd.so is looked for, in order (find_library's answer
    last, when it has one)."""
    paths = []
    env = os.environ.get("NDDD_LIBRARY")
    if env:
        paths.append(env)
    paths.append(os.path.join(_HERE, "libnddd.so"))
    paths.append(os.path.normpath(os.path.join(
        _HERE, "..", "..", "..", "build", "release", "libnddd.so")))
    found = ctypes.util.find_library("nddd")
    if found:
        paths.append(found)
    return paths


def _declare(lib) -> None:
    c_size_p = ctypes.POINTER(ctypes.c_size_t)
    lib.nddd_canon_new.restype = ctypes.c_void_p
    lib.nddd_canon_new.argtypes = [ctypes.c_char_p,
                                   ctypes.POINTER(ctypes.c_void_p)]
    lib.nddd_canon_free.restype = None
    lib.nddd_canon_free.argtypes = [ctypes.c_void_p]
    lib.nddd_canon_id.restype = ctypes.c_char_p
    lib.nddd_canon_id.argtypes = [ctypes.c_void_p]
    lib.nddd_canon_digest.restype = ctypes.c_int
    lib.nddd_canon_digest.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_char_p)]
    lib.nddd_shards_route.restype = None
    lib.nddd_shards_route.argtypes = [
        ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32,
        ctypes.POINTER(ctypes.c_uint32)]
    lib.nddd_canon_digests.restype = ctypes.c_size_t
    lib.nddd_canon_digests.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, c_size_p, ctypes.c_size_t,
        ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]


def load_library(need: str = "digests need libnddd.so (the daemon's "
                 "canonicalizer)"):
    """libnddd.so, loaded once.  Raises NdddLibraryError saying where it
    looked, after need (what the caller wanted it for)."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    tried = []
    env = os.environ.get("NDDD_LIBRARY")
    for path in library_candidates():
        # A bare name from find_library is for the dynamic loader to find.
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (no such file)" % path)
        else:
            try:
                lib = ctypes.CDLL(path)
                _declare(lib)
            except (OSError, AttributeError) as e:
                tried.append("%s (%s)" % (path, e))
            else:
                _lib, _lib_path = lib, path
                return lib
        if path == env:
            # Named on purpose: falling back to another would surprise.
            tried[-1] += " from NDDD_LIBRARY"
            break
    raise NdddLibraryError(
        "%s, which was not found: tried %s%s.  Build it with `make` in the "
        "nddd source tree, or set NDDD_LIBRARY to its path"
        % (need, "; ".join(tried),
           "" if ctypes.util.find_library("nddd") else
           "; and no libnddd in the system's library path"))


def library_path() -> Optional[str]:
    """The path libnddd.so was loaded from, once it was."""
    return _lib_path


def _free(pointer: int) -> None:
    """free() of the C library, for the messages libnddd allocates."""
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free.restype = None
    libc.free(pointer)


class Canon:
    """The daemon's canonicalization named by an id (``Stats.canon``).
    Raises ValueError when the library cannot reproduce it (another
    version of the canonical form).  Not thread-safe: the Client serializes
    its calls."""

    def __init__(self, canon_id: str):
        self._lib = load_library()
        self._k = None
        err = ctypes.c_void_p()
        k = self._lib.nddd_canon_new(canon_id.encode(), ctypes.byref(err))
        if not k:
            message = "out of memory"
            if err.value:
                message = ctypes.string_at(err.value).decode(
                    "utf-8", "replace")
                _free(err.value)
            raise ValueError(message)
        self._k = k
        self.id = self._lib.nddd_canon_id(k).decode()

    def __del__(self):
        if self._k:
            self._lib.nddd_canon_free(self._k)
            self._k = None

    def digests(self, encoded: Sequence[bytes]
                ) -> Tuple[List[bytes], List[Optional[str]]]:
        """The digest of each URL (encoded as sent), and why each invalid
        one is refused (None for a valid one; its digest is then b"").
        One call into the library per 65,536 URLs."""
        digests: List[bytes] = []
        causes: List[Optional[str]] = []
        lib, k = self._lib, self._k
        for start in range(0, len(encoded), _CHUNK):
            chunk = encoded[start:start + _CHUNK]
            n = len(chunk)
            lens = (ctypes.c_size_t * n)(*map(len, chunk))
            out = ctypes.create_string_buffer(DIGEST_LEN * n)
            valid = (ctypes.c_int * n)()
            nvalid = lib.nddd_canon_digests(k, b"".join(chunk), lens, n,
                                            out, valid)
            raw = out.raw
            if nvalid == n:
                digests.extend(raw[i:i + DIGEST_LEN]
                               for i in range(0, n * DIGEST_LEN, DIGEST_LEN))
                causes.extend([None] * n)
                continue
            for i in range(n):
                if valid[i]:
                    digests.append(raw[i * DIGEST_LEN:(i + 1) * DIGEST_LEN])
                    causes.append(None)
                else:
                    digests.append(b"")
                    causes.append(self._cause(chunk[i]))
        return digests, causes

    def _cause(self, url: bytes) -> str:
        """The daemon's message for an invalid URL (rare: one call each)."""
        cause = ctypes.c_char_p()
        digest = ctypes.create_string_buffer(DIGEST_LEN)
        if self._lib.nddd_canon_digest(self._k, url, len(url), digest,
                                       ctypes.byref(cause)) == 0:
            raise AssertionError("libnddd takes a URL it refused")
        return cause.value.decode("utf-8", "replace")


def route(digests: Sequence[bytes], nshards: int) -> List[int]:
    """The shard (0 to nshards - 1) of each digest: libnddd's
    nddd_shard_of, the jump consistent hash every client routes by."""
    lib = load_library()
    n = len(digests)
    out = (ctypes.c_uint32 * n)()
    if n:
        lib.nddd_shards_route(b"".join(digests), n, nshards, out)
    return list(out)

"""Fingerprints made here, with the daemon's own simhash engine, through
libnddd.so (ctypes): the bits a daemon of the same [simhash] settings
gives the same document, without a daemon.

    from nddd.engine import Engine

    e = Engine(stopwords="conf/stopwords.txt")
    e.simhash(b"Oil prices rose")                 # an int, or None
    fps, ok = e.simhashes([b"first", b"<p>second</p>"], "html")

Settings are the daemon's [simhash] section: ``term_hash``
("sdbm-fmix64", the default, or "sdbm"), ``stopwords`` (a list file, or
"none"; by default the list ``default_stopwords()`` finds, as ``nddctl
simhash`` does) or ``stopwords_text`` (a list file's content, for workers
on other machines), and ``simd`` ("auto", "avx512", "avx2", "scalar":
process-wide, all give the same bits).  A document with no terms left has
no fingerprint (the daemon refuses it with EMPTY_DOCUMENT).

An Engine holds the engine's working memory: one per thread.  Its calls
release the GIL, so threads fingerprint in parallel.  The library is found
as for digests (nddd._canon: ``$NDDD_LIBRARY`` first).
"""

import array
import ctypes
from typing import Optional, Sequence, Tuple, Union

from . import _canon
from .errors import NdddLibraryError

#: Formats of a document's bytes, as the protocol's (and the accelerators'
#: preprocessed input: terms separated by spaces, taken as they are).
FORMATS = {"text": 0, "html": 1, "preprocessed": 2}
# Documents per call into the library: bounds the memory of one call.
_CHUNK = 65536
_NEED = "local fingerprints need libnddd.so (the daemon's simhash engine)"

_declared = False


class _Opts(ctypes.Structure):
    _fields_ = [("term_hash", ctypes.c_char_p),
                ("stopwords", ctypes.c_char_p),
                ("stopwords_text", ctypes.c_char_p),
                ("stopwords_len", ctypes.c_size_t),
                ("simd", ctypes.c_char_p)]


def _library():
    global _declared
    lib = _canon.load_library(_NEED)
    if _declared:
        return lib
    try:
        lib.nddd_engine_new.restype = ctypes.c_void_p
        lib.nddd_engine_new.argtypes = [ctypes.POINTER(_Opts),
                                        ctypes.POINTER(ctypes.c_void_p)]
        lib.nddd_engine_free.restype = None
        lib.nddd_engine_free.argtypes = [ctypes.c_void_p]
        lib.nddd_engine_simhash.restype = ctypes.c_int
        lib.nddd_engine_simhash.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int,
            ctypes.POINTER(ctypes.c_uint64)]
        lib.nddd_engine_simhashes.restype = ctypes.c_size_t
        lib.nddd_engine_simhashes.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
            ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]
        lib.nddd_engine_stopwords.restype = ctypes.c_char_p
        lib.nddd_engine_stopwords.argtypes = [ctypes.c_void_p]
        lib.nddd_engine_stopwords_count.restype = ctypes.c_size_t
        lib.nddd_engine_stopwords_count.argtypes = [ctypes.c_void_p]
        lib.nddd_engine_simd.restype = ctypes.c_char_p
        lib.nddd_engine_simd.argtypes = []
        lib.nddd_engine_default_stopwords.restype = ctypes.c_void_p
        lib.nddd_engine_default_stopwords.argtypes = []
    except AttributeError as e:
        raise NdddLibraryError(
            "%s; %s has none (%s): it is older than this package; build "
            "it again with `make`" % (_NEED, _canon.library_path(), e)
        ) from None
    _declared = True
    return lib


def _text(pointer) -> str:
    """A string libnddd allocated, freed once read."""
    text = ctypes.string_at(pointer).decode("utf-8", "replace")
    _canon._free(pointer)
    return text


def default_stopwords() -> Optional[str]:
    """The stop-word list an Engine without one uses: the first of
    ``$NDDD_STOPWORDS``, ``./conf/stopwords.txt``, the
    ``conf/stopwords.txt`` of the source tree the program or libnddd.so
    was built in, and ``/etc/nddd/stopwords.txt``; None if there is
    none."""
    p = _library().nddd_engine_default_stopwords()
    return _text(p) if p else None


def simd() -> str:
    """The vector code this process runs ("avx512", "avx2", "scalar")."""
    return _library().nddd_engine_simd().decode()


def _encode(s: Optional[Union[str, bytes]]) -> Optional[bytes]:
    return s.encode() if isinstance(s, str) else s


class Engine:
    """The daemon's simhash engine with its [simhash] settings.  Raises
    ValueError for settings it refuses (an unknown term hash or level, a
    level this CPU cannot run, a stop-word list that cannot be read, no
    list found), NdddLibraryError when libnddd.so cannot be loaded."""

    def __init__(self, term_hash: Optional[str] = None,
                 stopwords: Optional[str] = None,
                 stopwords_text: Optional[Union[str, bytes]] = None,
                 simd: Optional[str] = None):
        self._lib = _library()
        self._e = None
        self.term_hash = term_hash or "sdbm-fmix64"
        text = _encode(stopwords_text)
        opts = _Opts(_encode(term_hash), _encode(stopwords), text,
                     len(text) if text is not None else 0, _encode(simd))
        err = ctypes.c_void_p()
        e = self._lib.nddd_engine_new(ctypes.byref(opts), ctypes.byref(err))
        if not e:
            raise ValueError(_text(err.value) if err.value
                             else "out of memory")
        self._e = e
        #: Where the stop words came from: the file, "none", or "" for
        #: stopwords_text.
        self.stopwords = self._lib.nddd_engine_stopwords(e).decode(
            "utf-8", "replace")
        #: How many words the list has.
        self.stopwords_count = self._lib.nddd_engine_stopwords_count(e)

    def __del__(self):
        if self._e:
            self._lib.nddd_engine_free(self._e)
            self._e = None

    @staticmethod
    def _format(format: str) -> int:
        try:
            return FORMATS[format]
        except KeyError:
            raise ValueError("unknown format %r (one of %s)" % (
                format, ", ".join(FORMATS))) from None

    def simhash(self, body: Union[bytes, str],
                format: str = "text") -> Optional[int]:
        """The fingerprint of one document (a str is sent as UTF-8, as
        the client sends it), or None when no term is left."""
        body = _encode(body)
        fp = ctypes.c_uint64()
        code = self._lib.nddd_engine_simhash(self._e, body, len(body),
                                             self._format(format),
                                             ctypes.byref(fp))
        return fp.value if code == 0 else None

    def simhashes(self, bodies: Sequence[bytes], format: str = "text"
                  ) -> Tuple[array.array, bytearray]:
        """The fingerprints of many documents of one format (bytes), one
        call into the library per 65,536: an array of unsigned 64-bit
        integers (``array('Q')``, 0 for a document without terms) and a
        bytearray of 1 (a fingerprint) or 0 (no term left), in order."""
        fmt = self._format(format)
        fps = array.array("Q")
        ok = bytearray()
        for start in range(0, len(bodies), _CHUNK):
            chunk = bodies[start:start + _CHUNK]
            n = len(chunk)
            lens = (ctypes.c_size_t * n)(*map(len, chunk))
            out = array.array("Q", bytes(8 * n))
            flags = bytearray(n)
            if n:
                self._lib.nddd_engine_simhashes(
                    self._e, fmt, b"".join(chunk), lens, n,
                    out.buffer_info()[0],
                    ctypes.addressof((ctypes.c_ubyte * n).from_buffer(
                        flags)))
            fps.extend(out)
            ok.extend(flags)
        return fps, ok

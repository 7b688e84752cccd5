"""Fingerprints and sketches made here, with the daemon's own engine,
through libnddd.so (ctypes): the bits a daemon of the same settings gives
the same document, without a daemon.

    from nddd.engine import Engine, sketch_compare

    e = Engine(stopwords="conf/stopwords.txt")
    e.simhash(b"Oil prices rose")                 # an int, or None
    fps, ok = e.simhashes([b"first", b"<p>second</p>"], "html")
    a = e.print(b"Oil prices rose sharply on Monday")   # a Print, or None
    b = e.print(b"Oil prices rose sharply on Monday, traders said")
    sketch_compare(a.sketch, b.sketch)            # (resemblance, containment)

Settings are the daemon's [simhash] section: ``term_hash``
("sdbm-fmix64", the default, or "sdbm"), ``stopwords`` (a list file, or
"none"; by default the list ``default_stopwords()`` finds, as ``nddctl
simhash`` does) or ``stopwords_text`` (a list file's content, for workers
on other machines), and ``simd`` ("auto", "avx512", "avx2", "scalar":
process-wide, all give the same bits); and [text] ``html``: what an HTML
page is judged by, "main" (the default: its main content, or its whole
text when it has no article) or "whole" (all its visible text).  A
document with no terms left has no fingerprint (the daemon refuses it
with EMPTY_DOCUMENT).

A document's print is what a daemon keeps of it (docs/neardup.md): its
fingerprint, what it was judged by (``content``: "text", "main" or
"whole") and its shingle sketch, the SKETCH_HASHES smallest hashes of its
3-term shingles with the count of its distinct shingles.  ``prints``
gives many at once, decoded into rows; ``sketch_similarities`` estimates
the resemblance and containment of pairs of those rows, and
``sketch_compare`` of two encoded sketches, as the daemon does, bit for
bit.

An Engine holds the engine's working memory: one per thread.  Its calls
release the GIL, so threads fingerprint in parallel.  The library is found
as for digests (nddd._canon: ``$NDDD_LIBRARY`` first).
"""

import array
import ctypes
from typing import Any, NamedTuple, Optional, Sequence, Tuple, Union

from . import _canon
from .errors import NdddLibraryError

#: Formats of a document's bytes, as the protocol's (and the accelerators'
#: preprocessed input: terms separated by spaces, taken as they are).
FORMATS = {"text": 0, "html": 1, "preprocessed": 2}
#: What a document was judged by, by the library's number (enum
#: nddd_content): a text document, a page's main content, a page's whole
#: visible text.
CONTENTS = ("text", "main", "whole")
#: [text] html: what an HTML page is judged by.
HTML_MODES = ("main", "whole")
#: The most hashes a sketch holds (a row of ``prints``' hashes).
SKETCH_HASHES = 128
#: A sketch's first hashes, its keys, which a daemon files it under; how
#: many of a stored document's keys must be among a query's first
#: SKETCH_PROBES hashes for it to be a candidate (docs/neardup.md).
SKETCH_KEYS = 16
SKETCH_MIN_KEYS = 2
SKETCH_PROBES = 64
#: The longest encoded sketch (DocResult.sketch).
SKETCH_MAX = 518
# Documents per call into the library: bounds the memory of one call.
_CHUNK = 65536
_NEED = "local fingerprints need libnddd.so (the daemon's simhash engine)"

_declared = False


class _Opts(ctypes.Structure):
    _fields_ = [("term_hash", ctypes.c_char_p),
                ("stopwords", ctypes.c_char_p),
                ("stopwords_text", ctypes.c_char_p),
                ("stopwords_len", ctypes.c_size_t),
                ("simd", ctypes.c_char_p),
                ("html", ctypes.c_char_p)]


class _Print(ctypes.Structure):
    _fields_ = [("simhash", ctypes.c_uint64),
                ("content", ctypes.c_int),
                ("sketch_len", ctypes.c_size_t),
                ("sketch", ctypes.c_ubyte * SKETCH_MAX)]


class Print(NamedTuple):
    """What a daemon keeps of a document: its fingerprint, what it was
    judged by ("text", "main", "whole") and its sketch, encoded as the
    daemon sends it (DocResult.sketch; for Client.query_doc's
    ``sketch``)."""
    simhash: int
    content: str
    sketch: bytes


class Prints(NamedTuple):
    """The prints of n documents (Engine.prints), each field in document
    order: ``fps`` (array 'Q', 0 without terms), ``ok`` (a bytearray: 1,
    or 0 for a document without terms), ``content`` (a bytearray of
    indexes into CONTENTS), ``shingles`` (array 'I': distinct shingles),
    ``nhashes`` (array 'I': hashes in the sketch) and ``hashes`` (array
    'I' of n rows of SKETCH_HASHES: each row's first nhashes ascending,
    the rest 0)."""
    fps: array.array
    ok: bytearray
    content: bytearray
    shingles: array.array
    nhashes: array.array
    hashes: array.array


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
        lib.nddd_engine_text.restype = ctypes.c_int
        lib.nddd_engine_text.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int,
            ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
            ctypes.POINTER(ctypes.c_int)]
        lib.nddd_engine_print.restype = ctypes.c_int
        lib.nddd_engine_print.argtypes = [
            ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int,
            ctypes.POINTER(_Print)]
        lib.nddd_engine_prints.restype = ctypes.c_size_t
        lib.nddd_engine_prints.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
            ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p,
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
            ctypes.c_void_p]
        lib.nddd_sketch_compare.restype = ctypes.c_int
        lib.nddd_sketch_compare.argtypes = [
            ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
            ctypes.c_size_t, ctypes.POINTER(ctypes.c_float),
            ctypes.POINTER(ctypes.c_float)]
        lib.nddd_sketch_similarities.restype = None
        lib.nddd_sketch_similarities.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
            ctypes.c_void_p, ctypes.c_void_p]
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


def _content(n: int) -> str:
    return CONTENTS[n] if 0 <= n < len(CONTENTS) else "text"


def sketch_compare(a: bytes, b: bytes) -> Tuple[float, float]:
    """The estimated (resemblance, containment) of the documents of two
    encoded sketches (Print.sketch, DocResult.sketch), as a daemon
    estimates them: floats of 32 bits.  Raises ValueError for bytes that
    are not a sketch."""
    res, con = ctypes.c_float(), ctypes.c_float()
    if _library().nddd_sketch_compare(bytes(a), len(a), bytes(b), len(b),
                                      ctypes.byref(res),
                                      ctypes.byref(con)) != 0:
        raise ValueError("not a sketch nddd made")
    return res.value, con.value


def _address(buf: Any, itemsize: int, count: int, what: str) -> int:
    """The address of a C-contiguous buffer of count items of itemsize
    bytes (a numpy array, an array.array, a bytearray...); raises
    ValueError for one of another size or layout."""
    iface = getattr(buf, "__array_interface__", None)
    if iface is not None:
        if iface.get("strides") is not None or \
                int(iface["typestr"][2:]) != itemsize:
            raise ValueError("%s: a contiguous array of %d-byte items"
                             % (what, itemsize))
        n = 1
        for d in iface["shape"]:
            n *= d
        if n < count:
            raise ValueError("%s: %d items, %d needed" % (what, n, count))
        return iface["data"][0]
    if isinstance(buf, array.array):
        if buf.itemsize != itemsize or len(buf) < count:
            raise ValueError("%s: an array of at least %d %d-byte items"
                             % (what, count, itemsize))
        return buf.buffer_info()[0]
    mv = memoryview(buf)
    if not mv.c_contiguous or mv.readonly or mv.nbytes < count * itemsize:
        raise ValueError("%s: a writable contiguous buffer of %d bytes"
                         % (what, count * itemsize))
    return ctypes.addressof(ctypes.c_char.from_buffer(mv))


def sketch_similarities(shingles: Any, nhashes: Any, hashes: Any, a: Any,
                        b: Any) -> Tuple[array.array, array.array]:
    """The estimated resemblance and containment of m pairs of decoded
    sketches, the daemon's estimates bit for bit: shingles, nhashes
    (uint32 each) and hashes (rows of SKETCH_HASHES uint32) as
    Engine.prints gives them, a and b (int64: m rows each) the pairs'
    rows.  Returns two arrays of m floats ('f').  The rows must be in
    range (nothing is checked there)."""
    m = len(a)
    if len(b) != m:
        raise ValueError("a and b hold %d and %d rows" % (m, len(b)))
    rows = len(shingles)
    res = array.array("f", bytes(4 * m))
    con = array.array("f", bytes(4 * m))
    if m:
        _library().nddd_sketch_similarities(
            _address(shingles, 4, rows, "shingles"),
            _address(nhashes, 4, rows, "nhashes"),
            _address(hashes, 4, rows * SKETCH_HASHES, "hashes"),
            _address(a, 8, m, "a"), _address(b, 8, m, "b"), m,
            res.buffer_info()[0], con.buffer_info()[0])
    return res, con


class Engine:
    """The daemon's engine with its [simhash] settings and its [text]
    html.  Raises ValueError for settings it refuses (an unknown term hash,
    level or html mode, a level this CPU cannot run, a stop-word list that
    cannot be read, no list found), NdddLibraryError when libnddd.so
    cannot be loaded."""

    def __init__(self, term_hash: Optional[str] = None,
                 stopwords: Optional[str] = None,
                 stopwords_text: Optional[Union[str, bytes]] = None,
                 simd: Optional[str] = None, html: Optional[str] = None):
        self._lib = _library()
        self._e = None
        self.term_hash = term_hash or "sdbm-fmix64"
        #: [text] html: "main" or "whole".
        self.html = html or "main"
        text = _encode(stopwords_text)
        opts = _Opts(_encode(term_hash), _encode(stopwords), text,
                     len(text) if text is not None else 0, _encode(simd),
                     _encode(html))
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
            if n and self._lib.nddd_engine_simhashes(
                    self._e, fmt, b"".join(chunk), lens, n,
                    out.buffer_info()[0],
                    ctypes.addressof((ctypes.c_ubyte * n).from_buffer(
                        flags))) == ctypes.c_size_t(-1).value:
                raise MemoryError("nddd_engine_simhashes: out of memory")
            fps.extend(out)
            ok.extend(flags)
        return fps, ok

    def text(self, body: Union[bytes, str], format: str = "text"
             ) -> Tuple[bytes, str]:
        """The text a daemon of these settings judges body by, and what it
        is ("text", "main" or "whole"), as ``nddctl text`` prints it."""
        body = _encode(body)
        p = ctypes.c_void_p()
        n = ctypes.c_size_t()
        content = ctypes.c_int()
        code = self._lib.nddd_engine_text(self._e, body, len(body),
                                          self._format(format),
                                          ctypes.byref(p), ctypes.byref(n),
                                          ctypes.byref(content))
        if code != 0:
            raise MemoryError("nddd_engine_text: out of memory")
        return ctypes.string_at(p.value, n.value) if n.value else b"", \
            _content(content.value)

    def print(self, body: Union[bytes, str],
              format: str = "text") -> Optional[Print]:
        """The print of one document (its fingerprint, content and
        encoded sketch), or None when no term is left."""
        body = _encode(body)
        out = _Print()
        code = self._lib.nddd_engine_print(self._e, body, len(body),
                                           self._format(format),
                                           ctypes.byref(out))
        if code == 5:       # NDDD_EMPTY_DOCUMENT
            return None
        if code != 0:
            raise MemoryError("nddd_engine_print: out of memory")
        return Print(out.simhash, _content(out.content),
                     bytes(out.sketch[:out.sketch_len]))

    def prints(self, bodies: Sequence[bytes], format: str = "text"
               ) -> Prints:
        """The prints of many documents of one format (bytes), decoded
        (see Prints), one call into the library per 65,536."""
        fmt = self._format(format)
        total = Prints(array.array("Q"), bytearray(), bytearray(),
                       array.array("I"), array.array("I"),
                       array.array("I"))
        for start in range(0, len(bodies), _CHUNK):
            chunk = bodies[start:start + _CHUNK]
            n = len(chunk)
            if not n:
                continue
            lens = (ctypes.c_size_t * n)(*map(len, chunk))
            part = Prints(array.array("Q", bytes(8 * n)), bytearray(n),
                          bytearray(n), array.array("I", bytes(4 * n)),
                          array.array("I", bytes(4 * n)),
                          array.array("I", bytes(4 * n * SKETCH_HASHES)))
            got = self._lib.nddd_engine_prints(
                self._e, fmt, b"".join(chunk), lens, n,
                part.fps.buffer_info()[0], _address(part.ok, 1, n, "ok"),
                _address(part.content, 1, n, "content"),
                part.shingles.buffer_info()[0],
                part.nhashes.buffer_info()[0],
                part.hashes.buffer_info()[0])
            if got == ctypes.c_size_t(-1).value:
                raise MemoryError("nddd_engine_prints: out of memory")
            for whole, p in zip(total, part):
                whole.extend(p)
        return total

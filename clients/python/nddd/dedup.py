"""Corpus-scale batch deduplication on Dask: every document's near
duplicates among the documents before it, as one nddd daemon fed the
corpus in order would find them, and their groups, for archives too large
for one daemon.

    python3 -m nddd.dedup --local 4 crawl-*.jsonl --out dedup.jsonl
    python3 -m nddd.dedup --scheduler tcp://10.0.0.1:8786 /data/pages/ \\
        --out dedup.jsonl --progress

or from Python, on the Dask scheduler in use (a distributed Client, or
Dask's local schedulers)::

    from nddd.dedup import dedup
    r = dedup(bag_of_url_and_body)
    r.pairs.compute()       # a, b, distance, resemblance, containment
    r.docs.compute()        # doc, id, simhash, content, group, component,
                            # error
    r.write_jsonl("dedup.jsonl")

Prints are made inside the workers by nddd's own engine (libnddd.so,
nddd.engine), with the daemon's [simhash] settings, stop words and [text]
html: each document's fingerprint and shingle sketch, the same bits as a
daemon's.  Documents are numbered by their position in the input
(``doc``, from 0), which is a daemon's submit order.

The default answer is the daemon's verified one (docs/dedup.md gives the
rule exactly).  Its candidates for document b among the documents a < b:

- those within Hamming distance k of b's fingerprint, found as in Manku,
  Jain and Das Sarma (WWW 2007, section 3.1.2, the MapReduce form): the
  64 bits are cut into ``blocks`` blocks, as the daemon cuts them; for
  each choice of ``blocks - k`` blocks (a table: C(blocks, k) of them) the
  fingerprints are shuffled by those blocks' bits (the key), and every
  two fingerprints of a bucket (one key) are compared; a pair is kept
  when it is within distance k, by the first table whose key blocks the
  two share (so each pair once).  Buckets of up to SMALL_BUCKET
  fingerprints are compared with vector operations over the whole
  partition; larger ones in tiles of TILE x TILE;
- those of which at least SKETCH_MIN_KEYS keys (the first SKETCH_KEYS
  hashes of a's sketch) are among b's first SKETCH_PROBES sketch hashes
  (those the daemon looks up): those hashes of every sketch are shuffled
  by their value, and each a that holds one as a key meets each later b
  that has it; a hash that more than KEY_LIST_MAX earlier documents hold
  as a key is passed over for b, as the daemon passes it over;

at most VERIFY_MAX of each kind per document, as the daemon looks at.  A
candidate is a neighbour when the two sketches' estimated containment
reaches ``containment`` and their resemblance ``resemblance`` (libnddd's
estimate, the daemon's bit for bit).  ``answer="hamming"`` gives the
other answer instead: every pair within k, unverified.

Groups, both exact:

- ``component``: the connected components of the graph of neighbour
  pairs, named by their smallest doc;
- ``group``: the daemon's story groups.  A document joins the group of its
  first earlier neighbour (the most similar, ties the earliest; by the
  Hamming answer the nearest, ties the earliest), otherwise it founds its
  own, named by its doc.  These are the groups one daemon gives the same
  documents submitted in this order, one at a time or in batches, with
  fresh URLs.

docs/dedup.md tells how to run it, the output format, and what each
worker and the client hold in memory.
"""

import argparse
import collections
import contextlib
import itertools
import json
import os
import sys
import threading
import time
import warnings
from typing import (Any, Iterable, Iterator, List, NamedTuple, Optional,
                    Sequence, Tuple)

import dask
import dask.bag as db
import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask.dataframe.shuffle import rearrange_by_column

from . import engine as _engine

DEFAULT_K = 3
DEFAULT_BLOCKS = 4
#: The answers: the daemon's verified one, and the Hamming one.
ANSWERS = ("verified", "hamming")
DEFAULT_ANSWER = "verified"
#: The daemon's [near] containment and resemblance defaults.
DEFAULT_CONTAINMENT = 0.2
DEFAULT_RESEMBLANCE = 0.05
#: The daemon's limit on tables ([near] blocks and k), kept here too.
MAX_TABLES = 64
#: Candidates of each kind (within k; sharing keys) a verified answer
#: looks at, at most, per document: the daemon's (daemon/doc/docset.c,
#: VERIFY_MAX): the nearest within k, then the oldest; the oldest sharing
#: keys.
VERIFY_MAX = 4096
#: A key that more earlier documents hold is passed over: the daemon's
#: (daemon/doc/sketchidx.h, SKETCHIDX_LIST_MAX).
KEY_LIST_MAX = 4096
SKETCH_HASHES = _engine.SKETCH_HASHES
SKETCH_KEYS = _engine.SKETCH_KEYS
SKETCH_MIN_KEYS = _engine.SKETCH_MIN_KEYS
SKETCH_PROBES = _engine.SKETCH_PROBES
#: The verified answer numbers documents in 32 bits, as the daemon's
#: sketch index does.
MAX_DOCS_VERIFIED = 1 << 32
#: Buckets up to this size are compared by offsets: for d = 1, 2, ...
#: every fingerprint with the one d places after it in its bucket, over
#: the whole partition at once.
SMALL_BUCKET = 64
#: Larger buckets are compared in tiles of TILE x TILE fingerprints (8 MiB
#: of XORs each).
TILE = 1024
#: Files of an input directory per partition.
FILES_PER_PARTITION = 256
#: Bytes of JSON lines per partition.
DEFAULT_BLOCKSIZE = 64 << 20

EMPTY_DOCUMENT = "EMPTY_DOCUMENT"
_MASK56 = (1 << 56) - 1
_MASK32 = (1 << 32) - 1
#: No Hamming distance: a pair met by its keys only.
_NO_DISTANCE = 255
_CONTENTS = np.array(_engine.CONTENTS, dtype=object)

# The frames' columns.
_SEQ_META = pd.DataFrame({"seq": pd.Series([], dtype="int64"),
                          "simhash": pd.Series([], dtype="uint64")})
_KEY_META = _SEQ_META.assign(key=pd.Series([], dtype="uint64"))
HAMMING_META = pd.DataFrame({"a": pd.Series([], dtype="int64"),
                             "b": pd.Series([], dtype="int64"),
                             "distance": pd.Series([], dtype="uint8")})
PAIRS_META = HAMMING_META.assign(
    resemblance=pd.Series([], dtype="float32"),
    containment=pd.Series([], dtype="float32"))
DOCS_META = pd.DataFrame({"doc": pd.Series([], dtype="int64"),
                          "id": pd.Series([], dtype=object),
                          "simhash": pd.Series([], dtype="uint64"),
                          "content": pd.Series([], dtype=object),
                          "group": pd.Series([], dtype="int64"),
                          "component": pd.Series([], dtype="int64"),
                          "error": pd.Series([], dtype=object)})
# A sketch hash of a document (doc), shuffled by its value (key): holder,
# one of the document's keys.
_SKETCH_KEY_META = pd.DataFrame({
    "key": pd.Series([], dtype="uint32"),
    "doc": pd.Series([], dtype="uint32"),
    "holder": pd.Series([], dtype="bool"),
    "_partitions": pd.Series([], dtype="int32")})
# A pair b, a (a < b) met: by one of a's keys that b holds (distance
# _NO_DISTANCE), or within k (distance).
_MEET_META = pd.DataFrame({"b": pd.Series([], dtype="uint32"),
                           "a": pd.Series([], dtype="uint32"),
                           "distance": pd.Series([], dtype="uint8"),
                           "_partitions": pd.Series([], dtype="int32")})
# A candidate pair, to be verified where a's print is.
_CAND_META = pd.DataFrame({"a": pd.Series([], dtype="uint32"),
                           "b": pd.Series([], dtype="uint32"),
                           "_partitions": pd.Series([], dtype="int32")})
# The print of a document b sent to the partition of some of its
# candidates: its fingerprint, its count of shingles and its hashes (the
# bytes of the uint32 array, native order).
_PRINT_META = pd.DataFrame({"b": pd.Series([], dtype="uint32"),
                            "simhash": pd.Series([], dtype="uint64"),
                            "shingles": pd.Series([], dtype="uint32"),
                            "hashes": pd.Series([], dtype=object),
                            "_partitions": pd.Series([], dtype="int32")})

# --- the engine in the workers ----------------------------------------------

class EngineSpec(NamedTuple):
    """The [simhash] settings and [text] html as shipped to the workers:
    the stop words as text (None: no list), so that workers on other
    machines need not have the file."""
    term_hash: Optional[str]
    stopwords_text: Optional[bytes]
    simd: Optional[str]
    #: Where the words came from, for messages.
    source: str
    #: What an HTML page is judged by: "main" (None: the same) or "whole".
    html: Optional[str] = None


def engine_spec(term_hash: Optional[str] = None,
                stopwords: Optional[str] = None,
                simd: Optional[str] = None,
                html: Optional[str] = None) -> EngineSpec:
    """Resolves the settings here, on the client: the stop-word file
    (``stopwords``; "none"; None: the one ``nddd.engine.default_stopwords``
    finds, as ``nddctl simhash`` does) is read and checked with an engine
    made here.  Raises ValueError for settings the engine refuses."""
    if stopwords is None:
        stopwords = _engine.default_stopwords()
        if stopwords is None:
            raise ValueError("no stop-word list found; give one (a file, "
                             "or \"none\" for none)")
    e = _engine.Engine(term_hash=term_hash, stopwords=stopwords, simd=simd,
                       html=html)
    if stopwords == "none":
        return EngineSpec(term_hash, None, simd, "none", html)
    with open(stopwords, "rb") as f:
        text = f.read()
    return EngineSpec(term_hash, text, simd, "%s (%d words)"
                      % (e.stopwords, e.stopwords_count), html)


_local = threading.local()


def _engine_for(spec: EngineSpec) -> _engine.Engine:
    """This thread's engine for spec (an Engine is one thread's)."""
    cache = getattr(_local, "engines", None)
    if cache is None:
        cache = _local.engines = {}
    e = cache.get(spec)
    if e is None:
        if spec.stopwords_text is None:
            e = _engine.Engine(spec.term_hash, stopwords="none",
                               simd=spec.simd, html=spec.html)
        else:
            e = _engine.Engine(spec.term_hash,
                               stopwords_text=spec.stopwords_text,
                               simd=spec.simd, html=spec.html)
        cache[spec] = e
    return e


class DocFile(NamedTuple):
    """A document that is a whole file: read in the worker."""
    id: str
    path: str
    format: str


class Part(NamedTuple):
    """A partition of documents as the job keeps it in the workers:
    ``frame`` (id, simhash, error, content: an index into
    nddd.engine.CONTENTS), and for the verified answer their sketches,
    one row per document (zeros for one without a print): ``shingles``
    and ``nhashes`` (uint32), ``hashes`` (uint32, SKETCH_HASHES per
    row); None for the Hamming answer."""
    frame: pd.DataFrame
    shingles: Optional[np.ndarray] = None
    nhashes: Optional[np.ndarray] = None
    hashes: Optional[np.ndarray] = None


def _record(r: Any) -> Optional[Tuple[Any, Optional[bytes], str]]:
    """(id, body, format) of one input record; None for a blank line.
    Raises ValueError (its args: the message, the id if known) for a
    record that is not a document."""
    if isinstance(r, DocFile):
        with open(r.path, "rb") as f:
            return r.id, f.read(), r.format
    if isinstance(r, (bytes, str)):
        if not r.strip():
            return None
        try:
            r = json.loads(r)
        except ValueError as e:
            raise ValueError("not JSON: %s" % e) from None
        if not isinstance(r, dict):
            raise ValueError("not a JSON object")
    if isinstance(r, dict):
        ident = r.get("url", r.get("id"))
        for fmt in ("text", "html"):
            if fmt in r:
                body = r[fmt]
                break
        else:
            raise ValueError("no \"text\" or \"html\"", ident)
        fmt = r.get("format", fmt)
    elif isinstance(r, (tuple, list)) and len(r) in (2, 3):
        ident, body = r[0], r[1]
        fmt = r[2] if len(r) == 3 else "text"
    else:
        raise ValueError("a record is (id, body), (id, body, format) or "
                         "{\"url\"|\"id\": ..., \"text\"|\"html\": ...}")
    if fmt not in _engine.FORMATS:
        raise ValueError("unknown format %r" % (fmt,), ident)
    if isinstance(body, str):
        try:
            body = body.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("the text is not valid Unicode", ident) \
                from None
    elif not isinstance(body, (bytes, bytearray, memoryview)):
        raise ValueError("the body is %s, not text" % type(body).__name__,
                         ident)
    return ident, bytes(body), fmt


def _fingerprint(ids: List[Any], bodies: List[Optional[bytes]],
                 formats: List[str], errors: List[Optional[str]],
                 spec: EngineSpec, sketches: bool) -> Part:
    """The partition of documents: one call into the library per format.
    With sketches, every document's print; without, fingerprints (and
    what an HTML page was judged by)."""
    e = _engine_for(spec)
    n = len(ids)
    fps = np.zeros(n, dtype=np.uint64)
    content = np.zeros(n, dtype=np.uint8)
    if sketches:
        shingles = np.zeros(n, dtype=np.uint32)
        nhashes = np.zeros(n, dtype=np.uint32)
        hashes = np.zeros((n, SKETCH_HASHES), dtype=np.uint32)
    for fmt in _engine.FORMATS:
        idx = [i for i in range(n) if formats[i] == fmt and
               bodies[i] is not None]
        if not idx:
            continue
        chosen = [bodies[i] for i in idx]
        if sketches or fmt == "html":
            p = e.prints(chosen, fmt)
            got, ok = p.fps, p.ok
            content[idx] = np.frombuffer(p.content, dtype=np.uint8)
            if sketches:
                shingles[idx] = np.frombuffer(p.shingles, dtype=np.uint32)
                nhashes[idx] = np.frombuffer(p.nhashes, dtype=np.uint32)
                hashes[idx] = np.frombuffer(
                    p.hashes, dtype=np.uint32).reshape(-1, SKETCH_HASHES)
        else:
            got, ok = e.simhashes(chosen, fmt)
        fps[idx] = np.frombuffer(got, dtype=np.uint64)
        for j in np.flatnonzero(np.frombuffer(ok, dtype=np.uint8) == 0):
            errors[idx[j]] = EMPTY_DOCUMENT
    frame = pd.DataFrame({"id": pd.Series(ids, dtype=object),
                          "simhash": fps,
                          "error": pd.Series(errors, dtype=object),
                          "content": content})
    if not sketches:
        return Part(frame)
    return Part(frame, shingles, nhashes, hashes)


def _records_part(records: Iterable[Any], spec: EngineSpec,
                  sketches: bool) -> Part:
    """Prints of a partition of records (a bag's)."""
    ids, bodies, formats, errors = [], [], [], []
    for r in records:
        try:
            got = _record(r)
        except ValueError as e:
            ids.append(e.args[1] if len(e.args) > 1 else None)
            bodies.append(None)
            formats.append("text")
            errors.append("INVALID_ARGUMENT: %s" % e.args[0])
            continue
        except OSError as e:
            ids.append(getattr(r, "id", None))
            bodies.append(None)
            formats.append("text")
            errors.append("INVALID_ARGUMENT: %s" % e)
            continue
        if got is None:
            continue
        ids.append(got[0])
        bodies.append(got[1])
        formats.append(got[2])
        errors.append(None)
    return _fingerprint(ids, bodies, formats, errors, spec, sketches)


def _frame_records(df: pd.DataFrame) -> Iterator[Any]:
    """The records of a frame of documents: columns id (or url), and text
    or html, or body and format."""
    ident = df["id"] if "id" in df else df["url"] if "url" in df else \
        pd.Series([None] * len(df), index=df.index)
    if "body" in df:
        fmt = df["format"] if "format" in df else itertools.repeat("text")
        return zip(ident, df["body"], fmt)
    for name in ("text", "html"):
        if name in df:
            return zip(ident, df[name], itertools.repeat(name))
    raise ValueError("a frame of documents has a column text, html or body "
                     "(and format); these are %s" % list(df.columns))


def _frame_part(df: pd.DataFrame, spec: EngineSpec, sketches: bool) -> Part:
    return _records_part(_frame_records(df), spec, sketches)


def _given_part(df: pd.DataFrame) -> Part:
    """A frame of fingerprints made elsewhere: simhash, and id if any."""
    ident = df["id"].to_numpy() if "id" in df else [None] * len(df)
    return Part(pd.DataFrame({
        "id": pd.Series(ident, dtype=object),
        "simhash": df["simhash"].to_numpy(dtype=np.uint64),
        "error": pd.Series([None] * len(df), dtype=object),
        "content": np.zeros(len(df), dtype=np.uint8)}))


# --- tables -----------------------------------------------------------------

def block_masks(blocks: int) -> List[int]:
    """The bits of each block, as the daemon cuts them (daemon/doc/
    nearidx.h): block 0 holds the most significant bits, and the first
    64 mod blocks blocks are one bit wider than the others."""
    masks = []
    top = 64
    for j in range(blocks):
        width = 64 // blocks + (j < 64 % blocks)
        top -= width
        masks.append(((1 << width) - 1) << top)
    return masks


def tables(k: int, blocks: int) -> List[Tuple[int, ...]]:
    """The tables: each choice of blocks - k blocks, in lexicographic
    order (the daemon's).  Raises ValueError as the daemon refuses."""
    if not 2 <= blocks <= 64:
        raise ValueError("blocks = %d: must be between 2 and 64" % blocks)
    if not 1 <= k < blocks:
        raise ValueError("k = %d with %d blocks: k must be at least 1 and "
                         "below the number of blocks" % (k, blocks))
    n = 1
    for i in range(k):
        n = n * (blocks - i) // (i + 1)
        if n > MAX_TABLES:
            raise ValueError("k = %d with %d blocks needs more than %d "
                             "tables" % (k, blocks, MAX_TABLES))
    return list(itertools.combinations(range(blocks), blocks - k))


_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


def popcount(x: np.ndarray) -> np.ndarray:
    """Bits set in each of an array of uint64, as uint8."""
    y = x >> np.uint64(1)
    y &= _M1
    y = x - y
    z = y >> np.uint64(2)
    z &= _M2
    y &= _M2
    y += z
    z = y >> np.uint64(4)
    y += z
    y &= _M4
    y *= _H01
    y >>= np.uint64(56)
    return y.astype(np.uint8)


def _with_key(df: pd.DataFrame, key_mask: int) -> pd.DataFrame:
    return df.assign(key=df["simhash"].to_numpy() & np.uint64(key_mask))


class _Pairs:
    """Pairs found in one partition of one table, kept only where this
    table is the first whose key blocks the two fingerprints share."""

    def __init__(self, table: int, k: int, key_blocks: Sequence[int],
                 masks: Sequence[int]):
        self.table = table
        self.k = k
        self.earlier = [np.uint64(b) for b in key_blocks[:table]]
        self.masks = [np.uint64(m) for m in masks]
        self.a: List[np.ndarray] = []
        self.b: List[np.ndarray] = []
        self.d: List[np.ndarray] = []

    def add(self, a: np.ndarray, b: np.ndarray, x: np.ndarray,
            dist: np.ndarray) -> None:
        if a.size == 0:
            return
        if self.earlier:
            equal = np.zeros(x.size, dtype=np.uint64)
            for j, m in enumerate(self.masks):
                equal |= ((x & m) == 0).astype(np.uint64) << np.uint64(j)
            keep = np.ones(x.size, dtype=bool)
            for blocks in self.earlier:
                keep &= (blocks & ~equal) != 0
            a, b, dist = a[keep], b[keep], dist[keep]
        self.a.append(a)
        self.b.append(b)
        self.d.append(dist)

    def frame(self) -> pd.DataFrame:
        if not self.a:
            return HAMMING_META.copy()
        a = np.concatenate(self.a)
        b = np.concatenate(self.b)
        d = np.concatenate(self.d)
        order = np.lexsort((b, a))
        return pd.DataFrame({"a": a[order], "b": b[order],
                             "distance": d[order]})


def bucket_pairs(df: pd.DataFrame, table: int, k: int,
                 key_blocks: Sequence[int], masks: Sequence[int],
                 small: int = SMALL_BUCKET, tile: int = TILE
                 ) -> pd.DataFrame:
    """Every pair within distance k of one partition of a table shuffled
    by its key (columns seq, simhash, key): a, b (seq, a < b), distance."""
    out = _Pairs(table, k, key_blocks, masks)
    n = len(df)
    if n < 2:
        return out.frame()
    key = df["key"].to_numpy()
    seq = df["seq"].to_numpy()
    order = np.lexsort((seq, key))
    key, seq = key[order], seq[order]
    fp = df["simhash"].to_numpy()[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    sizes = np.diff(np.r_[starts, n])
    size_of = np.repeat(sizes, sizes)
    # How many fingerprints come after each in its bucket.
    after = np.repeat(starts + sizes, sizes) - 1 - np.arange(n)
    # Small buckets: each fingerprint with the one d places after it.
    cand = np.flatnonzero((size_of <= small) & (after > 0))
    d = 1
    while cand.size:
        j = cand + d
        x = fp[cand] ^ fp[j]
        dist = popcount(x)
        hit = dist <= k
        out.add(seq[cand[hit]], seq[j[hit]], x[hit], dist[hit])
        d += 1
        cand = cand[after[cand] >= d]
    # Large buckets: tile by tile, the upper triangle.
    for s, size in zip(starts[sizes > small], sizes[sizes > small]):
        end = s + size
        for i0 in range(s, end, tile):
            i1 = min(i0 + tile, end)
            for j0 in range(i0, end, tile):
                j1 = min(j0 + tile, end)
                x = fp[i0:i1, None] ^ fp[None, j0:j1]
                dist = popcount(x)
                hit = dist <= k
                if j0 == i0:
                    hit &= np.tri(i1 - i0, j1 - j0, 0, dtype=bool) == 0
                ii, jj = np.nonzero(hit)
                out.add(seq[i0 + ii], seq[j0 + jj], x[ii, jj], dist[ii, jj])
    return out.frame()


# --- the verified answer ----------------------------------------------------

def _doc_partition(docs: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The partition of documents (numbered by offsets) of each doc."""
    return (np.searchsorted(offsets, docs, side="right") - 1).astype(
        np.int32)


def _sketch_keys(part: Part, offset: int, nparts: int) -> pd.DataFrame:
    """The first SKETCH_PROBES hashes of every sketch of a partition of
    documents (those the daemon looks up), with its doc and whether it is
    one of the document's keys (its first SKETCH_KEYS), to be shuffled by
    its value into nparts partitions."""
    ok = part.frame["error"].isna().to_numpy()
    docs = np.arange(offset, offset + len(ok), dtype=np.uint32)[ok]
    nh = np.minimum(part.nhashes[ok], SKETCH_PROBES)
    rows = part.hashes[ok, :SKETCH_PROBES]
    col = np.arange(SKETCH_PROBES, dtype=np.uint32)[None, :]
    have = col < nh[:, None]
    key = rows[have]
    holder = (col < np.minimum(nh, SKETCH_KEYS)[:, None])[have]
    return pd.DataFrame({
        "key": key, "doc": np.repeat(docs, nh.astype(np.int64)),
        "holder": holder,
        "_partitions": ((key.astype(np.uint64) * np.uint64(nparts)) >>
                        np.uint64(32)).astype(np.int32)})


def key_meetings(df: pd.DataFrame, offsets: np.ndarray,
                 list_max: int = KEY_LIST_MAX) -> pd.DataFrame:
    """The meetings of one partition of sketch hashes shuffled by value
    (columns key, doc, holder): for each key, each document b that has it
    meets each earlier document a that holds it as a key, unless more
    than list_max earlier documents hold it (then b passes it over, as
    the daemon does).  Returns b and a, once per key they meet by, to be
    shuffled by b's partition of documents (offsets), where the keys of
    a pair are counted."""
    n = len(df)
    if n == 0:
        return _MEET_META.copy()
    code = (df["key"].to_numpy().astype(np.uint64) << np.uint64(32)) | \
        df["doc"].to_numpy().astype(np.uint64)
    order = np.argsort(code)
    code = code[order]
    holder = df["holder"].to_numpy()[order]
    key = code >> np.uint64(32)
    doc = code.astype(np.uint32)
    new = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    sizes = np.diff(np.r_[new, n])
    # Holders before each row (its key's earlier documents, as docs are
    # in order within a key, each once), and before its key's first row:
    # the index in held of the key's first holder.
    before = np.cumsum(holder) - holder
    base = np.repeat(before[new], sizes)
    seen = before - base
    probe = np.flatnonzero((seen >= 1) & (seen <= list_max))
    held = np.flatnonzero(holder)
    count = seen[probe]
    total = int(count.sum())
    starts = np.repeat(np.cumsum(count) - count, count)
    a = doc[held[np.repeat(base[probe], count) +
                 (np.arange(total) - starts)]]
    b = doc[probe]
    return pd.DataFrame({
        "b": np.repeat(b, count), "a": a,
        "distance": np.full(total, _NO_DISTANCE, dtype=np.uint8),
        "_partitions": np.repeat(_doc_partition(b, offsets), count)})


def _hamming_meetings(df: pd.DataFrame, offsets: np.ndarray
                      ) -> pd.DataFrame:
    """Pairs within k as candidates, to be shuffled by b's partition."""
    b = df["b"].to_numpy().astype(np.uint32)
    return pd.DataFrame({
        "b": b, "a": df["a"].to_numpy().astype(np.uint32),
        "distance": df["distance"].to_numpy().astype(np.uint8),
        "_partitions": _doc_partition(b, offsets)})


def _rank_in_groups(group: np.ndarray) -> np.ndarray:
    """Each row's place among the rows of its group (rows sorted by
    group)."""
    if group.size == 0:
        return np.zeros(0, np.int64)
    new = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    sizes = np.diff(np.r_[new, group.size])
    return np.arange(group.size) - np.repeat(new, sizes)


def candidates(df: pd.DataFrame, part: Part, offset: int,
               offsets: np.ndarray, verify_max: int = VERIFY_MAX
               ) -> Tuple[pd.DataFrame, pd.DataFrame]:
    """A verified answer's candidates for the documents b of one partition
    (part, its first doc offset), from the pairs met there: those within
    k, the nearest verify_max of each b (then the earliest), and those
    whose a has SKETCH_MIN_KEYS keys or more that b holds, the earliest
    verify_max.  Returns the candidates (a, b) and the prints of their
    b, each once per partition of their a's, both to be shuffled there
    (by offsets)."""
    dist = df["distance"].to_numpy()
    code = (df["b"].to_numpy().astype(np.uint64) << np.uint64(32)) | \
        df["a"].to_numpy().astype(np.uint64)
    within = dist != _NO_DISTANCE
    # By keys: the pairs met by two keys or more, the earliest a of each b.
    met = np.sort(code[~within])
    if met.size:
        new = np.flatnonzero(np.r_[True, met[1:] != met[:-1]])
        times = np.diff(np.r_[new, met.size])
        met = met[new[times >= SKETCH_MIN_KEYS]]
    met = met[_rank_in_groups(met >> np.uint64(32)) < verify_max]
    # Within k: the nearest, then the earliest.
    near, nd_ = code[within], dist[within]
    near = near[np.lexsort((near, nd_, near >> np.uint64(32)))]
    near = near[_rank_in_groups(near >> np.uint64(32)) < verify_max]
    code = np.union1d(met, near)
    b = (code >> np.uint64(32)).astype(np.uint32)
    a = code.astype(np.uint32)
    dest = _doc_partition(a, offsets)
    cands = pd.DataFrame({"a": a, "b": b, "_partitions": dest})
    # b's print, once for each partition of its candidates' a.
    pb = np.unique((b.astype(np.uint64) << np.uint64(32)) |
                   dest.astype(np.uint64))
    b = (pb >> np.uint64(32)).astype(np.uint32)
    row = b.astype(np.int64) - offset
    nh = part.nhashes[row]
    rows = part.hashes[row]
    ends = np.cumsum(nh.astype(np.int64) * 4)
    flat = rows[np.arange(SKETCH_HASHES)[None, :] < nh[:, None]].tobytes()
    hashes = np.empty(b.size, dtype=object)
    hashes[:] = [flat[e - 4 * int(h):e] for e, h in zip(ends, nh)]
    prints = pd.DataFrame({
        "b": b, "simhash": part.frame["simhash"].to_numpy()[row],
        "shingles": part.shingles[row], "hashes": hashes,
        "_partitions": pb.astype(np.uint32).astype(np.int32)})
    return cands, prints


def verify(cands: pd.DataFrame, prints: pd.DataFrame, part: Part,
           offset: int, containment: float, resemblance: float
           ) -> Tuple[pd.DataFrame, int]:
    """The candidates whose a is in one partition (part, its first doc
    offset), with the prints of their b, estimated by libnddd as the
    daemon estimates them: the pairs kept (containment and resemblance at
    least the thresholds, as 32-bit floats, as the daemon holds them),
    sorted by a then b, and the number of candidates."""
    m = len(cands)
    if m == 0:
        return PAIRS_META.copy(), 0
    a = cands["a"].to_numpy().astype(np.int64)
    b = cands["b"].to_numpy().astype(np.int64)
    # The prints received, in order of b, after this partition's rows.
    pb = prints["b"].to_numpy().astype(np.int64)
    order = np.argsort(pb)
    pb = pb[order]
    blobs = prints["hashes"].to_numpy()[order]
    nh = np.fromiter((len(x) // 4 for x in blobs), dtype=np.uint32,
                     count=len(blobs))
    got = np.zeros((pb.size, SKETCH_HASHES), dtype=np.uint32)
    got[np.arange(SKETCH_HASHES)[None, :] < nh[:, None]] = np.frombuffer(
        b"".join(blobs), dtype=np.uint32)
    n = len(part.frame)
    shingles = np.concatenate(
        [part.shingles, prints["shingles"].to_numpy()[order]])
    nhashes = np.concatenate([part.nhashes, nh])
    hashes = np.concatenate([part.hashes, got])
    row_a = a - offset
    at = np.searchsorted(pb, b)
    row_b = n + at
    fp_b = prints["simhash"].to_numpy()[order][at]
    dist = popcount(part.frame["simhash"].to_numpy()[row_a] ^ fp_b)
    # b (the later document, the daemon's query) first, as the daemon
    # compares.
    res, con = _engine.sketch_similarities(shingles, nhashes, hashes,
                                           row_b, row_a)
    res = np.frombuffer(res, dtype=np.float32)
    con = np.frombuffer(con, dtype=np.float32)
    keep = (con >= np.float32(containment)) & \
        (res >= np.float32(resemblance))
    a, b, dist, res, con = a[keep], b[keep], dist[keep], res[keep], \
        con[keep]
    order = np.lexsort((b, a))
    return pd.DataFrame({"a": a[order], "b": b[order],
                         "distance": dist[order],
                         "resemblance": res[order],
                         "containment": con[order]}), m


def _unverified(df: pd.DataFrame) -> pd.DataFrame:
    """Pairs of the Hamming answer: no estimates (0, as a daemon's
    unverified neighbours have)."""
    return df.assign(resemblance=np.zeros(len(df), dtype=np.float32),
                     containment=np.zeros(len(df), dtype=np.float32))


# --- groups -----------------------------------------------------------------

def components(a: np.ndarray, b: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The connected components of the graph of edges (a[i], b[i]): the
    nodes that have an edge, sorted, and for each the smallest node of its
    component.  Hook and compress (Shiloach-Vishkin style) over arrays:
    every root with an edge to a smaller root is hooked under the
    smallest, then the pointers are halved until each points at a root."""
    nodes = np.unique(np.concatenate([a, b]))
    ia = np.searchsorted(nodes, a)
    ib = np.searchsorted(nodes, b)
    lab = np.arange(nodes.size)
    while ia.size:
        la, lb = lab[ia], lab[ib]
        lo, hi = np.minimum(la, lb), np.maximum(la, lb)
        live = lo != hi
        if not live.any():
            break
        ia, ib, lo, hi = ia[live], ib[live], lo[live], hi[live]
        order = np.lexsort((lo, hi))
        hi, lo = hi[order], lo[order]
        first = np.r_[True, hi[1:] != hi[:-1]]
        lab[hi[first]] = np.minimum(lab[hi[first]], lo[first])
        while True:
            up = lab[lab]
            if np.array_equal(up, lab):
                break
            lab = up
    return nodes, nodes[lab]


def _forest(df: pd.DataFrame) -> Tuple[np.ndarray, np.ndarray]:
    """A partition's pairs reduced to a spanning forest: the same
    components with at most one edge per document."""
    if len(df) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    nodes, labels = components(df["a"].to_numpy(), df["b"].to_numpy())
    keep = nodes != labels
    return nodes[keep], labels[keep]


def pair_ranks(df: pd.DataFrame, answer: str) -> np.ndarray:
    """Each pair's rank among b's neighbours, the least first, with a in
    its low bits (RANK_MASKS[answer]): by the verified answer the most
    similar (resemblance, a 32-bit float, from its bits: positive floats
    order as their bits do), then the earliest; by the Hamming answer the
    nearest, then the earliest."""
    a = df["a"].to_numpy().astype(np.int64)
    if answer == "hamming":
        return (df["distance"].to_numpy().astype(np.int64) << 56) | a
    bits = df["resemblance"].to_numpy().astype(np.float32).view(np.int32)
    return ((0x7FFFFFFF - bits.astype(np.int64)) << 32) | a


#: The bits of a rank (pair_ranks) that hold the earlier doc.
RANK_MASKS = {"verified": _MASK32, "hamming": _MASK56}


def _first_earlier(df: pd.DataFrame, answer: str
                   ) -> Tuple[np.ndarray, np.ndarray]:
    """For each later document b of a partition's pairs, its first
    neighbour's rank (pair_ranks)."""
    if len(df) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    b = df["b"].to_numpy()
    rank = pair_ranks(df, answer)
    order = np.lexsort((rank, b))
    b, rank = b[order], rank[order]
    first = np.r_[True, b[1:] != b[:-1]]
    return b[first], rank[first]


def story_groups(children: np.ndarray, ranks: np.ndarray,
                 mask: int = _MASK56) -> Tuple[np.ndarray, np.ndarray]:
    """The daemon's groups from every document's candidates for first
    earlier neighbour (children[i], ranks[i]: pair_ranks, the earlier doc
    in the bits of mask; several per child, from several partitions): the
    documents that have one, sorted, and the founder of each one's group
    (the group of its first earlier neighbour: that one's founder, or
    itself when it has none).  Pointer doubling over arrays."""
    if children.size == 0:
        return children, children
    order = np.lexsort((ranks, children))
    children, ranks = children[order], ranks[order]
    first = np.r_[True, children[1:] != children[:-1]]
    children = children[first]
    founder = ranks[first] & mask
    while True:
        pos = np.minimum(np.searchsorted(children, founder),
                         children.size - 1)
        has = children[pos] == founder
        if not has.any():
            return children, founder
        founder = np.where(has, founder[pos], founder)


def _lookup(keys: np.ndarray, values: np.ndarray, at: np.ndarray,
            default: np.ndarray) -> np.ndarray:
    """values[i] where keys[i] == at[j], else default[j] (keys sorted)."""
    if keys.size == 0:
        return default
    pos = np.minimum(np.searchsorted(keys, at), keys.size - 1)
    return np.where(keys[pos] == at, values[pos], default)


def _counts(part: Part) -> Tuple[int, int]:
    """Documents of a partition, and those with a fingerprint."""
    return len(part.frame), int(part.frame["error"].isna().sum())


def _with_seq(part: Part, offset: int) -> pd.DataFrame:
    df = part.frame
    ok = df["error"].isna().to_numpy()
    seq = np.arange(offset, offset + len(df), dtype=np.int64)
    return pd.DataFrame({"seq": seq[ok],
                         "simhash": df["simhash"].to_numpy()[ok]})


def _attach(part: Part, offset: int,
            groups: Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
            ) -> pd.DataFrame:
    """A partition of documents with its groups and components: groups
    holds the documents of the partition that have an earlier neighbour
    and their founders, and those that have a pair and their
    components."""
    df = part.frame
    children, founders, nodes, labels = groups
    seq = np.arange(offset, offset + len(df), dtype=np.int64)
    ok = df["error"].isna().to_numpy()
    group = np.where(ok, _lookup(children, founders, seq, seq), -1)
    comp = np.where(ok, _lookup(nodes, labels, seq, seq), -1)
    content = _CONTENTS[np.minimum(df["content"].to_numpy(),
                                   len(_CONTENTS) - 1)]
    return pd.DataFrame({"doc": seq,
                         "id": pd.Series(df["id"].to_numpy(), dtype=object),
                         "simhash": df["simhash"].to_numpy(),
                         "content": pd.Series(np.where(ok, content, None),
                                              dtype=object),
                         "group": group.astype(np.int64),
                         "component": comp.astype(np.int64),
                         "error": pd.Series(df["error"].to_numpy(),
                                            dtype=object)})


# --- output -----------------------------------------------------------------

def _json_id(v: Any) -> str:
    """An id as JSON: numbers as numbers, a missing one (None, NaN) as
    null, what JSON has no form for as its str()."""
    if isinstance(v, np.integer):
        v = int(v)
    elif isinstance(v, (float, np.floating)):
        v = None if v != v else float(v)
    return json.dumps(v, default=str)


def docs_jsonl(df: pd.DataFrame) -> str:
    """A frame of documents as JSON lines."""
    lines = []
    for doc, ident, fp, content, group, comp, err in zip(
            df["doc"], df["id"], df["simhash"], df["content"], df["group"],
            df["component"], df["error"]):
        if err is None:
            lines.append('{"doc": %d, "id": %s, "simhash": "%016x", '
                         '"content": "%s", "group": %d, "component": %d}\n'
                         % (doc, _json_id(ident), fp, content, group, comp))
        else:
            lines.append('{"doc": %d, "id": %s, "error": %s}\n'
                         % (doc, _json_id(ident), json.dumps(err)))
    return "".join(lines)


def pairs_jsonl(df: pd.DataFrame, verified: bool = True) -> str:
    """A frame of pairs as JSON lines; verified: with their estimates
    (each the shortest decimal that reads back as the same 64-bit float,
    which holds the 32-bit one exactly)."""
    if not verified:
        return "".join('{"a": %d, "b": %d, "distance": %d}\n' % t
                       for t in zip(df["a"], df["b"], df["distance"]))
    return "".join('{"a": %d, "b": %d, "distance": %d, "resemblance": %r, '
                   '"containment": %r}\n' % (a, b, d, float(r), float(c))
                   for a, b, d, r, c in zip(
                       df["a"], df["b"], df["distance"], df["resemblance"],
                       df["containment"]))


# --- the job ----------------------------------------------------------------

def _client():
    """The distributed Client in use, or None (Dask's local schedulers)."""
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


def _persist(collections: Sequence[Any], progress: bool, what: str
             ) -> List[Any]:
    """Computes collections into the workers' memory (into this process
    with a local scheduler), with a progress bar on standard error."""
    client = _client()
    if not progress:
        return list(dask.persist(*collections))
    sys.stderr.write("%s\n" % what)
    sys.stderr.flush()
    if client is None:
        from dask.diagnostics import ProgressBar
        with ProgressBar(out=sys.stderr):
            return list(dask.persist(*collections))
    from distributed import progress as dprogress
    out = list(client.persist(list(collections)))
    # distributed's bar writes to standard output, and clears itself.
    with contextlib.redirect_stdout(sys.stderr):
        dprogress(*out)
    return out


def _ordered(delayeds: Sequence[Any], window: int) -> Iterator[Any]:
    """The results of delayeds in order, at most window computed ahead."""
    client = _client()
    if client is None:
        for d in delayeds:
            yield dask.compute(d)[0]
        return
    pending: collections.deque = collections.deque()
    it = iter(delayeds)
    for d in itertools.islice(it, window):
        pending.append(client.compute(d))
    while pending:
        f = pending.popleft()
        result = f.result()
        nxt = next(it, None)
        if nxt is not None:
            pending.append(client.compute(nxt))
        f.release()
        yield result


class Dedup:
    """The result of dedup: ``docs`` and ``pairs``, Dask DataFrames held
    in the workers' memory; the counts; and write_jsonl."""

    def __init__(self, docs: dd.DataFrame, pairs: dd.DataFrame, ndocs: int,
                 nfingerprints: int, npairs: int, ngroups: int,
                 ncomponents: int, k: int, blocks: int,
                 tables_: List[Tuple[int, ...]], spec: Optional[EngineSpec],
                 seconds: float, answer: str = "hamming",
                 ncandidates: Optional[int] = None,
                 containment: float = DEFAULT_CONTAINMENT,
                 resemblance: float = DEFAULT_RESEMBLANCE,
                 keep: Any = None):
        #: doc, id, simhash, content, group, component, error (one row per
        #: document, in input order; a document without a fingerprint
        #: has simhash 0, content None, group and component -1, and its
        #: error).
        self.docs = docs
        #: a, b (docs, a < b), distance, resemblance, containment: each
        #: document b's neighbours a among the documents before it, once
        #: each (the estimates 0 in the Hamming answer).
        self.pairs = pairs
        self.ndocs = ndocs
        self.nfingerprints = nfingerprints
        self.npairs = npairs
        self.ngroups = ngroups
        self.ncomponents = ncomponents
        self.k = k
        self.blocks = blocks
        self.tables = tables_
        self.spec = spec
        self.seconds = seconds
        #: "verified" or "hamming".
        self.answer = answer
        #: The verified answer's candidate pairs (None for the Hamming
        #: answer: there every candidate is a pair).
        self.ncandidates = ncandidates
        self.containment = containment
        self.resemblance = resemblance
        # What the frames are made of, held in the workers.
        self._keep = keep

    def summary(self) -> str:
        if self.answer == "verified":
            found = ("%d pairs verified (containment >= %g, resemblance "
                     ">= %g) of %d candidates (within %d or sharing %d "
                     "sketch keys)" % (self.npairs, self.containment,
                                       self.resemblance, self.ncandidates,
                                       self.k, SKETCH_MIN_KEYS))
        else:
            found = "%d pairs within %d" % (self.npairs, self.k)
        return ("%d documents, %d fingerprinted, %s, %d groups, %d "
                "components; %d tables of %d blocks; %.1f s"
                % (self.ndocs, self.nfingerprints, found, self.ngroups,
                   self.ncomponents, len(self.tables), self.blocks,
                   self.seconds))

    def neighbours(self, doc: int) -> List[Tuple[int, int, float, float]]:
        """The neighbours of one document among those before it, as a
        daemon lists them (most similar first, then the earliest; by the
        Hamming answer the nearest first): (a, distance, resemblance,
        containment) each.  Computes the pairs: for a look at a few."""
        df = self.pairs.map_partitions(
            lambda p: p[p["b"] == doc], meta=PAIRS_META).compute()
        rank = pair_ranks(df, self.answer)
        df = df.iloc[np.argsort(rank, kind="stable")]
        return [(int(a), int(d), float(r), float(c)) for a, d, r, c in zip(
            df["a"], df["distance"], df["resemblance"], df["containment"])]

    def write_jsonl(self, out, progress: bool = False,
                    window: int = 8) -> None:
        """Writes the document lines (in input order), then the pair
        lines, to out (a path, or a file open for text); a path is
        written under a temporary name and renamed when complete."""
        if isinstance(out, (str, os.PathLike)):
            tmp = "%s.tmp%d" % (out, os.getpid())
            try:
                with open(tmp, "w", encoding="utf-8") as f:
                    self.write_jsonl(f, progress, window)
                os.replace(tmp, out)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            return
        verified = self.answer == "verified"
        parts = ([dask.delayed(docs_jsonl)(p)
                  for p in self.docs.to_delayed()] +
                 [dask.delayed(pairs_jsonl)(p, verified)
                  for p in self.pairs.to_delayed()])
        for i, text in enumerate(_ordered(parts, window)):
            out.write(text)
            if progress:
                sys.stderr.write("\rwriting: %d of %d partitions"
                                 % (i + 1, len(parts)))
                sys.stderr.flush()
        if progress:
            sys.stderr.write("\n")
        out.flush()


def _npartitions(n: int, per: int) -> int:
    """Partitions for n rows given here: about per each, 1 to 64."""
    return min(64, max(1, n // per))


def _as_parts(docs: Any, spec: EngineSpec, sketches: bool) -> List[Any]:
    """The partitions of docs as delayed Parts, fingerprinted (and
    sketched) in the workers."""
    if isinstance(docs, db.Bag):
        return [dask.delayed(_records_part)(p, spec, sketches)
                for p in docs.to_delayed()]
    if isinstance(docs, pd.DataFrame):
        docs = dd.from_pandas(docs, sort=False,
                              npartitions=_npartitions(len(docs), 1000))
    if isinstance(docs, dd.DataFrame):
        return [dask.delayed(_frame_part)(p, spec, sketches)
                for p in docs.to_delayed()]
    docs = list(docs)
    return _as_parts(db.from_sequence(
        docs, npartitions=_npartitions(len(docs), 1000)), spec, sketches)


def _check_answer(answer: str, containment: float,
                  resemblance: float) -> None:
    if answer not in ANSWERS:
        raise ValueError("answer: %s, not %r" % (" or ".join(ANSWERS),
                                                 answer))
    for name, v in (("containment", containment),
                    ("resemblance", resemblance)):
        if not 0 <= v <= 1:
            raise ValueError("%s = %r: a number from 0 to 1" % (name, v))


def dedup(docs: Any, k: int = DEFAULT_K, blocks: int = DEFAULT_BLOCKS, *,
          term_hash: Optional[str] = None, stopwords: Optional[str] = None,
          simd: Optional[str] = None, html: Optional[str] = None,
          answer: str = DEFAULT_ANSWER,
          containment: float = DEFAULT_CONTAINMENT,
          resemblance: float = DEFAULT_RESEMBLANCE,
          partitions: Optional[int] = None,
          key_partitions: Optional[int] = None, progress: bool = False,
          small_bucket: int = SMALL_BUCKET, tile: int = TILE) -> Dedup:
    """Prints docs in the workers and finds each document's neighbours
    among the documents before it, the components and the daemon's story
    groups.

    docs: a Dask bag of records ((id, body), (id, body, format), a dict
    {"url" or "id": ..., "text" or "html": ...}, or such a dict as a JSON
    line); a Dask or pandas DataFrame with columns id (or url) and text,
    html, or body and format; or a sequence of records.  Bodies are bytes,
    or str (fingerprinted as UTF-8, as the client sends them).  Order is
    the documents' numbering (doc), the daemon's submit order.

    k: the daemon's [near] k.  answer: "verified" (the daemon's default)
    or "hamming" (every pair within k).  containment, resemblance: the
    daemon's [near] thresholds of the verified answer.  term_hash,
    stopwords, simd: the daemon's [simhash] settings, html its [text]
    html (see engine_spec).  partitions: of each table's shuffle,
    key_partitions: of the sketch keys' (default: as many as the documents
    have).  progress: progress bars on standard error.
    small_bucket, tile: how buckets are compared (see bucket_pairs).
    """
    _check_answer(answer, containment, resemblance)
    spec = engine_spec(term_hash, stopwords, simd, html)
    return _dedup(_as_parts(docs, spec, answer == "verified"), k, blocks,
                  spec, partitions, progress, small_bucket, tile, answer,
                  containment, resemblance, key_partitions)


def dedup_fingerprints(fps: Any, k: int = DEFAULT_K,
                       blocks: int = DEFAULT_BLOCKS, *,
                       partitions: Optional[int] = None,
                       progress: bool = False,
                       small_bucket: int = SMALL_BUCKET,
                       tile: int = TILE) -> Dedup:
    """dedup's Hamming answer for fingerprints made elsewhere (without
    sketches there is no other): a Dask or pandas DataFrame with a column
    simhash (uint64) and optionally id, or an array of fingerprints
    (their ids: their positions)."""
    if isinstance(fps, np.ndarray):
        fps = pd.DataFrame({"id": np.arange(fps.size, dtype=np.int64),
                            "simhash": fps.astype(np.uint64, copy=False)})
    if isinstance(fps, pd.DataFrame):
        fps = dd.from_pandas(fps, sort=False,
                             npartitions=_npartitions(len(fps), 250000))
    parts = [dask.delayed(_given_part)(p) for p in fps.to_delayed()]
    return _dedup(parts, k, blocks, None, partitions, progress,
                  small_bucket, tile, "hamming", DEFAULT_CONTAINMENT,
                  DEFAULT_RESEMBLANCE)


def _shuffle(df: dd.DataFrame, nparts: int) -> dd.DataFrame:
    """df's rows in the partition its column _partitions names (Dask's
    task shuffle)."""
    return rearrange_by_column(df, "_partitions", npartitions=nparts,
                               shuffle="tasks", ignore_index=True)


def _concat(frames: Sequence[dd.DataFrame]) -> dd.DataFrame:
    with warnings.catch_warnings():
        # Partitions of pairs have no order to keep across tables.
        warnings.simplefilter("ignore", UserWarning)
        return dd.concat(list(frames), interleave_partitions=False)


def _first(x: Tuple[Any, ...]) -> Any:
    return x[0]


def _second(x: Tuple[Any, ...]) -> Any:
    return x[1]


def _dedup(parts: List[Any], k: int, blocks: int,
           spec: Optional[EngineSpec], partitions: Optional[int],
           progress: bool, small_bucket: int, tile: int, answer: str,
           containment: float, resemblance: float,
           key_partitions: Optional[int] = None) -> Dedup:
    t0 = time.monotonic()
    _check_answer(answer, containment, resemblance)
    chosen = tables(k, blocks)
    if small_bucket < 0 or tile < 1:
        raise ValueError("small_bucket must be 0 or more, tile 1 or more")
    for name, v in (("partitions", partitions),
                    ("key_partitions", key_partitions)):
        if v is not None and v < 1:
            raise ValueError("%s = %d: at least 1" % (name, v))
    masks = block_masks(blocks)
    key_blocks = [sum(1 << j for j in t) for t in chosen]
    key_masks = [sum(masks[j] for j in t) for t in chosen]
    verified = answer == "verified"

    parts = _persist(parts, progress, "%s: %d partitions" % (
        "prints" if verified else "fingerprints", len(parts)))
    counts = dask.compute(*[dask.delayed(_counts)(p) for p in parts])
    offsets = np.r_[0, np.cumsum([c[0] for c in counts])].astype(np.int64)
    nfps = sum(c[1] for c in counts)
    if verified and offsets[-1] > MAX_DOCS_VERIFIED:
        raise ValueError("%d documents: the verified answer numbers at "
                         "most 2^32" % offsets[-1])
    seqs = dd.from_delayed(
        [dask.delayed(_with_seq)(p, int(off))
         for p, off in zip(parts, offsets)], meta=_SEQ_META,
        verify_meta=False)
    nparts = partitions or max(1, len(parts))
    found = []
    for t, key_mask in enumerate(key_masks):
        keyed = seqs.map_partitions(_with_key, key_mask, meta=_KEY_META)
        shuffled = keyed.shuffle("key", npartitions=nparts, shuffle="tasks",
                                 ignore_index=True)
        found.append(shuffled.map_partitions(
            bucket_pairs, t, k, key_blocks, masks, small_bucket, tile,
            meta=HAMMING_META))
    within = _concat(found)
    keep = None
    ncandidates = None
    if not verified:
        pairs = within.map_partitions(_unverified, meta=PAIRS_META)
        (pairs,) = _persist([pairs], progress,
                            "pairs: %d tables, %d partitions each"
                            % (len(chosen), nparts))
    else:
        ndocparts = len(parts)
        nkeyparts = key_partitions or ndocparts
        sketch_keys = dd.from_delayed(
            [dask.delayed(_sketch_keys)(p, int(off), nkeyparts)
             for p, off in zip(parts, offsets)], meta=_SKETCH_KEY_META,
            verify_meta=False)
        met = _shuffle(sketch_keys, nkeyparts).map_partitions(
            key_meetings, offsets, meta=_MEET_META)
        met = _concat([met, within.map_partitions(
            _hamming_meetings, offsets, meta=_MEET_META)])
        by_b = _shuffle(met, ndocparts).to_delayed()
        found = [dask.delayed(candidates, nout=2)(m, p, int(off), offsets)
                 for m, p, off in zip(by_b, parts, offsets)]
        cands = _shuffle(dd.from_delayed(
            [c[0] for c in found], meta=_CAND_META, verify_meta=False),
            ndocparts).to_delayed()
        prints = _shuffle(dd.from_delayed(
            [c[1] for c in found], meta=_PRINT_META, verify_meta=False),
            ndocparts).to_delayed()
        keep = _persist(
            [dask.delayed(verify)(c, q, p, int(off), containment,
                                  resemblance)
             for c, q, p, off in zip(cands, prints, parts, offsets)],
            progress, "pairs: %d tables of %d partitions, sketch keys in "
            "%d, candidates verified" % (len(chosen), nparts, nkeyparts))
        pairs = dd.from_delayed([dask.delayed(_first)(v) for v in keep],
                                meta=PAIRS_META, verify_meta=False)
        ncandidates = int(sum(dask.compute(
            *[dask.delayed(_second)(v) for v in keep])))

    pair_parts = pairs.to_delayed()
    forests, firsts, npairs = dask.compute(
        [dask.delayed(_forest)(p) for p in pair_parts],
        [dask.delayed(_first_earlier)(p, answer) for p in pair_parts],
        [dask.delayed(len)(p) for p in pair_parts])
    empty = np.zeros(0, np.int64)
    nodes, labels = components(
        np.concatenate([f[0] for f in forests] + [empty]),
        np.concatenate([f[1] for f in forests] + [empty]))
    children, founders = story_groups(
        np.concatenate([x[0] for x in firsts] + [empty]),
        np.concatenate([x[1] for x in firsts] + [empty]),
        RANK_MASKS[answer])

    # Each partition of documents gets the slices of its own docs (sent
    # to the workers, not through the scheduler, where there are some).
    slices = []
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        c0, c1 = np.searchsorted(children, [lo, hi])
        n0, n1 = np.searchsorted(nodes, [lo, hi])
        slices.append((children[c0:c1], founders[c0:c1], nodes[n0:n1],
                       labels[n0:n1]))
    client = _client()
    if client is not None:
        # Keys of their own: a job's slices may equal an earlier job's,
        # whose futures may be on their way out.
        slices = client.scatter(slices, hash=False)
    attached = [dask.delayed(_attach)(p, int(lo), sl)
                for p, lo, sl in zip(parts, offsets[:-1], slices)]
    docs = dd.from_delayed(attached, meta=DOCS_META, verify_meta=False)
    (docs,) = _persist([docs], progress, "groups")
    return Dedup(docs, pairs, int(offsets[-1]), nfps, int(sum(npairs)),
                 nfps - int(children.size),
                 nfps - int(nodes.size - np.unique(labels).size), k, blocks,
                 chosen, spec, time.monotonic() - t0, answer, ncandidates,
                 containment, resemblance, keep)


# --- the command ------------------------------------------------------------

def read_inputs(paths: Sequence[str], blocksize: int = DEFAULT_BLOCKSIZE
                ) -> db.Bag:
    """A bag of the records of paths, in order: a file holds JSON lines
    ({"url" or "id": ..., "text" or "html": ...}; .gz, .bz2 or .xz ones
    are read whole); a directory holds one document per file (every file
    under it, by path; its id the path below the directory; .html and
    .htm files are HTML, the others text)."""
    bags = []
    for path in paths:
        if os.path.isdir(path):
            files = []
            for root, dirs, names in os.walk(path):
                dirs.sort()
                for name in sorted(names):
                    full = os.path.join(root, name)
                    if os.path.isfile(full):
                        files.append(full)
            files.sort()
            if not files:
                continue
            recs = [DocFile(os.path.relpath(f, path), os.path.abspath(f),
                            "html" if f.lower().endswith((".html", ".htm"))
                            else "text") for f in files]
            bags.append(db.from_sequence(
                recs, partition_size=FILES_PER_PARTITION))
        elif os.path.isfile(path):
            whole = path.endswith((".gz", ".bz2", ".xz"))
            bags.append(db.read_text(
                os.path.abspath(path), compression="infer",
                blocksize=None if whole else blocksize))
        else:
            raise FileNotFoundError("%s: no such file or directory" % path)
    if not bags:
        raise ValueError("no documents in %s" % ", ".join(paths))
    return db.concat(bags) if len(bags) > 1 else bags[0]


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().rstrip("ib")
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python3 -m nddd.dedup",
        description="Near duplicates and groups of a corpus, on Dask, as "
        "one nddd daemon would find them (see docs/dedup.md).")
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="a Dask scheduler (tcp://HOST:8786) whose "
                       "workers have nddd and libnddd.so")
    where.add_argument("--local", type=int, metavar="N",
                       help="N worker processes on this machine")
    ap.add_argument("--threads", type=int, default=1, metavar="T",
                    help="threads per local worker (default 1)")
    ap.add_argument("inputs", nargs="+", metavar="INPUT",
                    help="a file of JSON lines, or a directory of "
                    "documents, one per file")
    ap.add_argument("--out", required=True, metavar="OUT.jsonl",
                    help="where the results go (- for standard output)")
    ap.add_argument("--answer", choices=ANSWERS, default=DEFAULT_ANSWER,
                    help="verified (default: the daemon's, candidates kept "
                    "by their similarity) or hamming (every pair within "
                    "k)")
    ap.add_argument("-k", type=int, default=DEFAULT_K,
                    help="the daemon's [near] k: the largest distance of "
                    "a pair by the Hamming answer, of a candidate by "
                    "fingerprint of the verified one (default 3)")
    ap.add_argument("--containment", type=float,
                    default=DEFAULT_CONTAINMENT, metavar="C",
                    help="the verified answer's threshold on "
                    "containment, [near] containment (default 0.2)")
    ap.add_argument("--resemblance", type=float,
                    default=DEFAULT_RESEMBLANCE, metavar="R",
                    help="its floor on resemblance, [near] resemblance "
                    "(default 0.05)")
    ap.add_argument("--blocks", type=int, default=DEFAULT_BLOCKS,
                    help="blocks of the 64 bits (default 4; tables: "
                    "C(blocks, k))")
    ap.add_argument("--term-hash", metavar="H",
                    help="sdbm-fmix64 (default) or sdbm, as [simhash] "
                    "term_hash")
    ap.add_argument("--stopwords", metavar="FILE",
                    help="the stop-word list, or none (default: as nddctl "
                    "simhash finds it)")
    ap.add_argument("--simd", metavar="LEVEL",
                    help="auto, avx512, avx2 or scalar (the same bits)")
    ap.add_argument("--html", choices=_engine.HTML_MODES,
                    help="what a page is judged by, as [text] html: main "
                    "(default: its main content) or whole")
    ap.add_argument("--partitions", type=int, metavar="N",
                    help="partitions of each table's shuffle (default: as "
                    "many as the input has)")
    ap.add_argument("--key-partitions", type=int, metavar="N",
                    help="partitions of the sketch keys' shuffle "
                    "(default: as many as the input has)")
    ap.add_argument("--blocksize", default="64MiB", metavar="BYTES",
                    help="bytes of JSON lines per partition (default "
                    "64MiB)")
    ap.add_argument("--progress", action="store_true",
                    help="progress bars on standard error")
    args = ap.parse_args(argv)

    from distributed import Client, LocalCluster
    try:
        _check_answer(args.answer, args.containment, args.resemblance)
        spec = engine_spec(args.term_hash, args.stopwords, args.simd,
                           args.html)
        tables(args.k, args.blocks)
        bag = read_inputs(args.inputs, _size(args.blocksize))
    except (ValueError, OSError, _engine.NdddLibraryError) as e:
        print("nddd.dedup: %s" % e, file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        if args.local is not None:
            cluster = stack.enter_context(LocalCluster(
                n_workers=args.local, threads_per_worker=args.threads,
                processes=True, dashboard_address=None))
            stack.enter_context(Client(cluster))
        else:
            stack.enter_context(Client(args.scheduler))
        parts = _as_parts(bag, spec, args.answer == "verified")
        result = _dedup(parts, args.k, args.blocks, spec, args.partitions,
                        args.progress, SMALL_BUCKET, TILE, args.answer,
                        args.containment, args.resemblance,
                        args.key_partitions)
        if args.out == "-":
            result.write_jsonl(sys.stdout, args.progress)
        else:
            result.write_jsonl(args.out, args.progress)
        print("nddd.dedup: %s; stop words %s" % (result.summary(),
                                                  spec.source),
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    # Run as nddd.dedup, not __main__: the workers then import the tasks'
    # functions by name rather than receive copies of this module's.
    from nddd.dedup import main as _main
    sys.exit(_main())

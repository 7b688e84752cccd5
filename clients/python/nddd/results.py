"""Typed results of nddd's operations.

A batch operation answers one result per item, in the order given.  A URL's
result keeps the URL exactly as the caller gave it (``str`` or ``bytes``),
its reference count as nddd reports it, when asked (``with_times``) the
times it was seen, and, when that one item failed, the error nddd gave for
it (the rest of the batch is unaffected).
"""

import enum
from dataclasses import dataclass, fields
from datetime import datetime, timedelta, timezone
from typing import List, Optional, Union

from google.protobuf.message import Message

from ._proto import pb

#: The protocol's status codes (``nddd.v1.Code``), as an IntEnum:
#: OK, INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED,
#: EMPTY_DOCUMENT, UNAVAILABLE, INTERNAL, FAILED_PRECONDITION, MOVED.
Code = enum.IntEnum("Code", dict(pb.Code.items()), module=__name__)
Code.__doc__ = "Status codes of the nddd protocol (nddd.v1.Code)."

CodeLike = Union[Code, int]


def code_of(number: int) -> CodeLike:
    """The Code for a number; a number this client does not know stays an
    int (a newer daemon may send one)."""
    try:
        return Code(number)
    except ValueError:
        return number


def code_name(code: CodeLike) -> str:
    """The name of a code ("INVALID_ARGUMENT"), or "CODE_<n>" if unknown."""
    return code.name if isinstance(code, Code) else "CODE_%d" % code


@dataclass(frozen=True)
class Status:
    """An error nddd reported: its code and human-readable message."""
    code: CodeLike
    message: str

    def __str__(self) -> str:
        return "%s: %s" % (code_name(self.code), self.message)


Url = Union[str, bytes]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _time(ms: int) -> Optional[datetime]:
    """A time nddd gives in milliseconds since the epoch, as an aware
    datetime in UTC; None for 0 (never, or not known)."""
    return _EPOCH + timedelta(milliseconds=ms) if ms else None


@dataclass(frozen=True, slots=True)
class UrlResult:
    """One URL's answer.

    ``url`` is the URL as given; ``count`` its reference count (how many
    times it was submitted, see the subclasses for each operation); ``error``
    is None, or the Status of this item's failure (then ``count`` is 0).

    With ``with_times``, in milliseconds since the epoch: ``first_seen_ms``
    and ``last_seen_ms``, when the URL was first and last submitted, and
    ``expires_ms``, when its time to live ends (0: never); all 0 for a URL
    never recorded, and without ``with_times``.  ``first_seen``,
    ``last_seen`` and ``expires`` are the same as datetimes in UTC (None
    for 0).  A check of a URL whose time to live has passed answers count
    0 with the times it had until nddd reclaims the record in the
    background, [urls] keep_expired (24 h) after it expired (then as
    never recorded).
    """
    url: Url
    count: int
    error: Optional[Status]
    first_seen_ms: int = 0
    last_seen_ms: int = 0
    expires_ms: int = 0

    @property
    def ok(self) -> bool:
        """True unless this item failed."""
        return self.error is None

    @property
    def first_seen(self) -> Optional[datetime]:
        return _time(self.first_seen_ms)

    @property
    def last_seen(self) -> Optional[datetime]:
        return _time(self.last_seen_ms)

    @property
    def expires(self) -> Optional[datetime]:
        return _time(self.expires_ms)


@dataclass(frozen=True, slots=True)
class SubmitResult(UrlResult):
    """A url_submit answer: ``count`` is the count after this submit."""
    @property
    def new(self) -> bool:
        """The URL was not stored before this submit (count is 1)."""
        return self.error is None and self.count == 1

    @property
    def duplicate(self) -> bool:
        """The URL was stored already (count above 1)."""
        return self.error is None and self.count > 1


@dataclass(frozen=True, slots=True)
class CheckResult(UrlResult):
    """A url_check answer: ``count`` is the stored count, 0 if unseen."""
    @property
    def seen(self) -> bool:
        """The URL is stored."""
        return self.error is None and self.count > 0


@dataclass(frozen=True, slots=True)
class DeleteResult(UrlResult):
    """A url_delete answer: ``count`` is the count the deleted record had,
    0 if the URL was not stored."""
    @property
    def deleted(self) -> bool:
        """The URL was stored and is now forgotten."""
        return self.error is None and self.count > 0


#: What a document was judged by (nddd.v1.Content): a text document, all
#: of it; a page's main content (its article); a page's whole visible text
#: (no article found, or the daemon's [text] html = whole).
CONTENTS = ("text", "main", "whole")
#: The answers a document request may ask for (nddd.v1.Match): None, the
#: daemon's [near] answer; "verified", candidates kept when similar
#: enough, most similar first; "hamming", every document within k,
#: nearest first, unverified.
MATCHES = {None: 0, "verified": 1, "hamming": 2}


def content_name(n: int) -> str:
    """The name of a Content number ("text" for one this client does not
    know)."""
    return CONTENTS[n] if 0 <= n < len(CONTENTS) else "text"


def match_number(match: Optional[str]) -> int:
    """The protocol's Match for a match argument; raises ValueError for
    another."""
    try:
        return MATCHES[match]
    except (KeyError, TypeError):
        raise ValueError("match: \"verified\", \"hamming\" or None (the "
                         "daemon's answer), not %r" % (match,)) from None


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A stored document near another, or near a query.

    By the verified answer (the daemon's default), ``resemblance`` and
    ``containment`` are the estimated similarity of the two documents'
    shingle sets (0 to 1: |A n B| / |A u B|, and |A n B| / the smaller
    one's size) and ``verified`` is True; by the Hamming answer, and for
    a document stored without a sketch (by nddd 0.4) that a verified
    answer keeps by its distance alone, they are 0, 0 and False.
    """
    doc_id: int
    url: str            # its canonical URL
    distance: int       # Hamming distance of the two fingerprints
    group: int          # the story it belongs to
    created_ms: int = 0  # first submitted, ms since the epoch
    resemblance: float = 0.0
    containment: float = 0.0
    verified: bool = False


def _neighbours(msgs) -> List[Neighbour]:
    return [Neighbour(m.doc_id, m.url.decode("utf-8", "replace"),
                      m.distance, m.group, m.created_ms, m.resemblance,
                      m.containment, m.verified) for m in msgs]


@dataclass(frozen=True, slots=True)
class DocResult:
    """A document as stored (submit_doc, get_doc), or as it would be
    (submit_doc with query_only: ``doc_id`` 0, ``group`` 0 when it would
    found a story of its own).

    ``near``: the stored documents that are its neighbours by the answer
    asked for (``match``; by default the daemon's, verified: most similar
    first, then oldest; Hamming: within the daemon's k, nearest first,
    then oldest), the document itself excluded; at most the daemon's
    max_results of them, ``near_total`` in all.  ``content``: what a
    submitted body was judged by, "text", "main" (a page's main content)
    or "whole" (a page's whole text); get_doc answers "text".
    ``sketch``: the document's sketch as the daemon encodes it, when asked
    for (``with_sketch``), else b"" (see Client.query_doc).  ``error`` is
    None, or the Status of this document's failure (for example
    EMPTY_DOCUMENT: no terms, nothing stored); the other fields are then
    empty.
    """
    url: Url                 # as given
    doc_id: int
    simhash: int             # the 64-bit fingerprint
    group: int               # the story it belongs to
    near: List[Neighbour]
    near_total: int
    created: bool            # a new document, not a re-submit
    error: Optional[Status] = None
    content: str = "text"
    sketch: bytes = b""
    # When the document under its URL was first stored (ms since the
    # epoch; a re-submit keeps it); for a query_only submit, the stored
    # document's, whose id is stored_id (0: the URL has none).
    created_ms: int = 0
    stored_id: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def simhash_hex(self) -> str:
        """The fingerprint as 16 lower-case hex digits."""
        return "%016x" % self.simhash

    @classmethod
    def from_message(cls, url: Url, msg) -> "DocResult":
        return cls(url, msg.doc_id, msg.simhash, msg.group,
                   _neighbours(msg.near), msg.near_total, msg.created,
                   None, content_name(msg.content), msg.sketch,
                   msg.created_ms, msg.stored_id)

    @classmethod
    def failed(cls, url: Url, status: Status) -> "DocResult":
        return cls(url, 0, 0, 0, [], 0, False, status, "")


@dataclass(frozen=True, slots=True)
class QueryResult:
    """The stored documents near a body, a fingerprint or a print
    (query_doc); ``content``, what a body was judged by (as
    DocResult.content; "text" for a fingerprint or a print), and its
    ``sketch`` when asked for (``with_sketch``), else b""."""
    simhash: int
    near: List[Neighbour]
    near_total: int
    content: str = "text"
    sketch: bytes = b""

    @property
    def simhash_hex(self) -> str:
        return "%016x" % self.simhash


def _from_message(cls, msg):
    """An instance of the dataclass cls from the protobuf message msg, field
    by field (same names); nested dataclasses are converted too, a list of
    them from a repeated field."""
    values = {}
    for f in fields(cls):
        v = getattr(msg, f.name)
        sub = _NESTED.get(f.name)
        if sub is None:
            values[f.name] = v
        elif isinstance(v, Message):
            values[f.name] = _from_message(sub, v)
        else:
            values[f.name] = [_from_message(sub, m) for m in v]
    return cls(**values)


@dataclass(frozen=True)
class Namespace:
    """A namespace (nddd.v1.NamespaceInfo): an independent set of URLs and
    of documents sharing the daemon (one crawl, one customer); ``name`` ""
    is the default one."""
    name: str
    urls: int                   # stored, expired ones not yet reclaimed
                                # included; for drop_namespace, those
                                # being forgotten
    default_ttl_seconds: int    # for submits without a ttl; 0: none
    docs: int = 0               # stored documents; for drop_namespace,
                                # those being forgotten

    @classmethod
    def from_message(cls, msg) -> "Namespace":
        return _from_message(cls, msg)


@dataclass(frozen=True)
class FilterStats:
    """The counting Bloom filter (nddd.v1.FilterStats)."""
    counters: int       # m: number of 4-bit counters
    nonzero: int        # counters above 0
    saturated: int      # counters at 15
    k: int              # counters per URL
    bytes: int          # memory held by the counters


@dataclass(frozen=True)
class NearStats:
    """The near-duplicate tables and the verified answer
    (nddd.v1.NearStats)."""
    k: int
    blocks: int
    tables: int
    bytes: int          # memory of the tables
    distinct: int       # distinct fingerprints
    answer: str = ""            # [near] answer: "verified" or "hamming"
    resemblance: float = 0.0    # [near] resemblance
    containment: float = 0.0    # [near] containment
    html: str = ""              # [text] html: "main" or "whole"
    sketch_keys: int = 0        # keys in the sketch index
    sketch_bytes: int = 0       # its memory
    candidates: int = 0         # candidates verified answers looked at
    verified: int = 0           # ... and kept
    keys_skipped: int = 0       # sketch keys passed over as too common
    unsketched: int = 0         # documents stored without a sketch


@dataclass(frozen=True)
class AccelStats:
    """The accelerator (nddd.v1.AccelStats)."""
    backend: str
    simulation: bool
    batches: int
    batches_failed: int
    docs: int
    bytes: int


@dataclass(frozen=True)
class UrlStoreStats:
    """The URL store's write path (nddd.v1.UrlStoreStats; admin): the
    journal of URLs changed since the last flush, the segments it is
    flushed into, their merges."""
    journal_entries: int        # URLs changed since the last flush
    journal_capacity: int       # ... at most, before a flush
    journal_bytes: int          # in the journal file now
    journal_bytes_written: int  # since start
    journal_syncs: int          # fdatasyncs of the journal
    groups: int                 # group commits
    flushes: int
    merges: int
    merges_forced: int          # merges that held writers back
    segments: int
    small_segments: int
    records: int                # in segments, live or not
    dead_records: int           # replaced or deleted, not yet merged
    store_bytes_written: int    # segments and bitmaps, since start
    pending: int                # submits and deletes queued
    index_bytes: int            # memory of the URL index
    journal_table_bytes: int    # memory of the journal's table
    host_runs: int              # runs of the host index (url_forget)
    host_keys: int              # their keys, dead ones included
    host_merging: bool          # a merge of them is under way


@dataclass(frozen=True)
class DocStoreStats:
    """The documents' write path (nddd.v1.DocStoreStats; admin): the store
    journal of the store writer's groups since the store last committed
    them, and its commits."""
    journal_bytes: int          # in the store journal now
    journal_bytes_written: int  # since start
    journal_syncs: int          # fdatasyncs of the journal
    groups: int                 # groups journaled
    checkpoints: int            # commits of what the journal held
    pending: int                # store keys changed since the last one
    failures: int               # groups or commits that lost what the
                                # store writer held (rebuilt)


@dataclass(frozen=True)
class Stats:
    """The daemon's statistics (nddd.v1.StatsResult).  A read token sees
    only version, uptime_seconds, urls, docs, the table layout and canon."""
    version: str
    uptime_seconds: int
    urls: int                    # stored URLs
    docs: int                    # stored documents
    near: NearStats
    accel: AccelStats
    cbf: FilterStats
    checks: int                  # URLs answered by url_check
    checks_filter_only: int      # ... without reading the store
    filter_false_positives: int  # ... where the filter said maybe, wrongly
    submits_new: int
    submits_duplicate: int
    deletes: int                 # records removed
    commits: int                 # store transactions committed
    store_bytes: int             # size of the store's data in use
    connections: int             # open client connections
    # The canonicalization URL digests are made with, e.g. "urlcanon/1
    # strip_session_ids=no strip_tracking=no sort_query=no".
    canon: str
    url_store: UrlStoreStats     # the URL store's write path
    namespaces: List[Namespace]  # every namespace, the default one first
    urls_dropping: int           # of dropped namespaces, not yet forgotten
                                 # (counted in urls)
    urls_expired: int            # reclaimed after their time to live
    docs_dropping: int = 0       # documents of dropped namespaces, not
                                 # yet forgotten (counted in docs)
    doc_store: Optional[DocStoreStats] = None  # the documents' write path

    @classmethod
    def from_message(cls, msg) -> "Stats":
        return _from_message(cls, msg)


_NESTED = {"cbf": FilterStats, "near": NearStats, "accel": AccelStats,
           "url_store": UrlStoreStats, "doc_store": DocStoreStats,
           "namespaces": Namespace}

"""Several nddd daemons as one URL set: routing by the clients.

    from nddd import ShardedClient

    with ShardedClient(["nddd-0.nddd:6464", "nddd-1.nddd:6464",
                        "nddd-2.nddd:6464"]) as shards:
        for r in shards.submit_urls(urls):
            ...

Each daemon (a shard) owns the URLs whose digest, the MD5 of the canonical
form that keys them in a daemon, the jump consistent hash of libnddd
(``nddd_shard_of``) sends to its place in the list.  URLs are
canonicalized and hashed here with the daemons' own code (libnddd.so),
with the settings the shards state: every shard must state the same
(``Stats.canon``), or the client refuses to route.  Each call splits its
URLs per shard, sends the parts in parallel, and answers in input order.
A shard that cannot be reached fails its own URLs, with
``Code.UNAVAILABLE`` and its address in the message; the others are
answered.  Every client of a sharded service must be given the same list
in the same order (docs/sharding.md).
"""

import threading
from typing import Callable, Iterable, List, Optional, Sequence

from . import _canon
from .client import (Address, Client, Url, _durability, _encode_url,
                     _namespace, _ttl)
from .errors import NdddConnectionError, NdddError
from .results import (CheckResult, Code, DeleteResult, Status, SubmitResult,
                      UrlResult)
from ._proto import pb


class ShardedClient:
    """URL operations over a list of daemons, routed here.

    ``addresses``: the shard list, in order.  Every other keyword is
    given to each shard's :class:`nddd.Client` (timeout, token,
    durability, namespace, TLS...).  Connects to every shard at once to
    read the settings they canonicalize URLs with: raises ValueError when
    the list is empty or names a shard twice, NdddError when two shards
    differ, NdddConnectionError when no shard answers.  A shard that does
    not answer now is asked again at each call (and refused, its URLs
    failing ``Code.FAILED_PRECONDITION``, if it then states other
    settings).
    """

    def __init__(self, addresses: Sequence[Address], **client_kwargs):
        if not addresses:
            raise ValueError("a shard list names at least one daemon")
        client_kwargs.pop("digests", None)
        self.clients = [Client(a, digests=True, **client_kwargs)
                        for a in addresses]
        names = [c.address for c in self.clients]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ValueError("shard %s is listed twice" % name)
        self.addresses = names
        self.canon_id: Optional[str] = None
        first = None
        failure: Optional[NdddError] = None
        for c in self.clients:
            try:
                canon_id = self._shard_canon(c)
            except NdddConnectionError as e:
                failure = failure or e
                continue
            if self.canon_id is None:
                self.canon_id, first = canon_id, c.address
            elif canon_id != self.canon_id:
                self.close()
                raise NdddError(
                    "the shards' settings differ: %s canonicalizes URLs "
                    "as %r, %s as %r" % (first, self.canon_id, c.address,
                                         canon_id))
        if self.canon_id is None:
            self.close()
            raise NdddConnectionError("no shard answers (%s)" % failure,
                                      address=names[0], sent=False)
        self._canon = _canon.Canon(self.canon_id)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "<nddd.ShardedClient %s>" % ",".join(self.addresses)

    def __enter__(self) -> "ShardedClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Closes every shard's connection."""
        for c in self.clients:
            c.close()

    def shard_of(self, url: Url) -> Optional[int]:
        """The index in the list of the shard that owns url, or None for a
        URL no daemon would take."""
        with self._lock:
            digests, causes = self._canon.digests([_encode_url(url)])
        if causes[0] is not None:
            return None
        return _canon.route(digests, len(self.clients))[0]

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

    @staticmethod
    def _shard_canon(c: Client) -> str:
        """The canonicalization shard c states (asked once per
        connection)."""
        with c._lock:
            return c._daemon_canon().id

    def _url_op(self, field: str, urls: Iterable[Url], result_cls: type,
                durability: Optional[str], namespace: Optional[str],
                ttl: Optional[int], with_times: bool) -> List[UrlResult]:
        if isinstance(urls, (str, bytes, bytearray)):
            raise TypeError("expected an iterable of URLs, got a single "
                            "URL; use a list of one")
        first = self.clients[0]
        level = (first._durability if durability is None
                 else _durability(durability))
        if field == "url_check":
            level = pb.DURABILITY_DEFAULT
        ns = first.namespace if namespace is None else _namespace(namespace)
        ttl = _ttl(ttl, "ttl")
        urls = list(urls)
        with self._lock:
            digests, causes = self._canon.digests(
                [_encode_url(u) for u in urls])
        results: List[Optional[UrlResult]] = [
            None if c is None else result_cls(u, 0, Status(
                Code.INVALID_ARGUMENT, c)) for u, c in zip(urls, causes)]
        valid = [i for i, c in enumerate(causes) if c is None]
        owners = _canon.route([digests[i] for i in valid], len(self.clients))
        parts: List[List[int]] = [[] for _ in self.clients]
        for i, owner in zip(valid, owners):
            parts[owner].append(i)

        def run(shard: int) -> None:
            c, pos = self.clients[shard], parts[shard]
            try:
                canon_id = self._shard_canon(c)
                if canon_id != self.canon_id:
                    fail(pos, Code.FAILED_PRECONDITION,
                         "%s canonicalizes URLs as %r, the other shards as "
                         "%r: not routing to it"
                         % (c.address, canon_id, self.canon_id))
                    return
                part = c._send_urls(field, [urls[i] for i in pos],
                                    [digests[i] for i in pos],
                                    self.canon_id, result_cls, level, ns,
                                    ttl, with_times)
            except NdddConnectionError as e:
                # What came back before the failure stands.
                got = e.results or [None] * len(pos)
                for i, r in zip(pos, got):
                    results[i] = r
                fail([i for i, r in zip(pos, got) if r is None],
                     Code.UNAVAILABLE, "%s: %s" % (c.address, e))
                return
            except NdddError as e:
                # A refusal of the shard's part as a whole.
                got = e.results or [None] * len(pos)
                for i, r in zip(pos, got):
                    results[i] = r
                code = getattr(e, "code", Code.INTERNAL)
                fail([i for i, r in zip(pos, got) if r is None], code,
                     "%s: %s" % (c.address, e))
                return
            for i, r in zip(pos, part):
                results[i] = r

        def fail(positions: List[int], code, message: str) -> None:
            for i in positions:
                results[i] = result_cls(urls[i], 0, Status(code, message))

        _in_parallel(run, [s for s, pos in enumerate(parts) if pos])
        return results


def _in_parallel(fn: Callable[[int], None], items: List[int]) -> None:
    """fn(item) for every item, the first here and the others on threads
    of their own."""
    threads = [threading.Thread(target=fn, args=(item,), daemon=True)
               for item in items[1:]]
    for t in threads:
        t.start()
    if items:
        fn(items[0])
    for t in threads:
        t.join()

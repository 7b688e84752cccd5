"""nddd: a client for the nddd near-duplicate detection daemon.

    import nddd

    with nddd.Client("127.0.0.1:6464") as client:
        for r in client.submit_urls(["http://example.com/a",
                                     "HTTP://EXAMPLE.COM:80/a#top"]):
            print(r.url, "new" if r.new else "duplicate", r.count)
        doc = client.submit_doc("http://example.com/a", "Oil prices rose")
        print(doc.doc_id, doc.simhash_hex, doc.group)
        for n in doc.near:      # most similar first, then oldest
            print(n.url, n.resemblance, n.containment, n.distance)

Client(..., durability="relaxed") answers submits and deletes before they
reach the disk; Client(..., digests=True) canonicalizes URLs here (through
libnddd.so) and sends their digests; Client(..., namespace="crawl-7") keeps
its URLs in a set of their own, and submit_urls(..., ttl=86400) records
them for a day.  A document's neighbours are the daemon's verified answer
by default (candidates kept when their shingles show them similar
enough); submit_doc(..., match="hamming") and the other document calls
ask for the Hamming answer instead (every document within k, unverified).
ShardedClient([ADDRESS, ...]) routes URLs over several daemons, each
owning a share of them (nddd.shards).

See nddd.client for connections, batching and failures, nddd.errors for
the exceptions, nddd.results for the results, and nddd.scrapy for the
Scrapy dupe filter and its batch middleware.
"""

from .client import (DEFAULT_ADDRESS, DEFAULT_BATCH_SIZE, DEFAULT_MAX_FRAME,
                     DEFAULT_TIMEOUT, DEFAULT_WINDOW, TTL_MAX, Client,
                     Forgotten, parse_address)
from .shards import ShardedClient
from .errors import (NdddConnectionError, NdddError, NdddLibraryError,
                     NdddProtocolError, NdddRequestError, NdddTimeoutError)
from .results import (AccelStats, CheckResult, Code, DeleteResult, DocResult,
                      FilterStats, Namespace, NearStats, Neighbour,
                      QueryResult, Stats, Status, SubmitResult, UrlResult,
                      UrlStoreStats)

__version__ = "0.5.0"

__all__ = [
    "Client", "ShardedClient", "Forgotten", "parse_address", "DEFAULT_ADDRESS", "DEFAULT_BATCH_SIZE",
    "DEFAULT_MAX_FRAME", "DEFAULT_TIMEOUT", "DEFAULT_WINDOW", "TTL_MAX",
    "NdddError", "NdddRequestError", "NdddConnectionError",
    "NdddTimeoutError", "NdddProtocolError", "NdddLibraryError",
    "Code", "Status", "UrlResult", "SubmitResult", "CheckResult",
    "DeleteResult", "DocResult", "QueryResult", "Neighbour", "Stats",
    "FilterStats", "NearStats", "AccelStats", "UrlStoreStats", "Namespace",
]

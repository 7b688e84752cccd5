"""Exceptions raised by the nddd client.

    NdddError                    everything below
    +-- NdddRequestError         nddd refused a request as a whole
    +-- NdddLibraryError         (also an ImportError) digests or local
    |                            fingerprints were asked for and
    |                            libnddd.so cannot be loaded
    +-- NdddConnectionError      (also a ConnectionError) no connection, or
        |                        it failed during a call
        +-- NdddTimeoutError     (also a TimeoutError) no reply in time
        +-- NdddProtocolError    the daemon sent what the protocol forbids

A failure of one item of a batch (an invalid URL) is not an exception: it
is that item's ``error`` in the results.

Batch calls put what they learnt before the failure in ``results``: a list
in input order holding the result of every item whose reply arrived, and
None for the others.  After an NdddConnectionError whose ``sent`` is True,
the items without a result may or may not have been carried out (their
request reached the connection, its reply did not come back).
"""

from typing import List, Optional

from .results import CodeLike, code_name


class NdddError(Exception):
    """Base of the client's exceptions.

    ``results``: for a batch call, the partial results described in this
    module's documentation; None for other calls.
    """

    def __init__(self, message: str, *, results: Optional[List] = None):
        super().__init__(message)
        self.results = results


class NdddRequestError(NdddError):
    """nddd refused a request as a whole: a batch over the server's
    max_batch or a frame over its max_frame (RESOURCE_EXHAUSTED), a full
    store (RESOURCE_EXHAUSTED), a shutdown in progress (UNAVAILABLE), ...

    ``code`` is the status code (a :class:`nddd.Code`), ``message`` nddd's
    text.  Requests of the same call that were carried out before have
    their items in ``results``.
    """

    def __init__(self, code: CodeLike, message: str, *,
                 results: Optional[List] = None):
        super().__init__("%s: %s" % (code_name(code), message),
                         results=results)
        self.code = code
        self.message = message


class NdddConnectionError(NdddError, ConnectionError):
    """The client could not connect to nddd, or the connection failed while
    a call was waiting for replies.

    ``address`` is the daemon's address.  ``sent`` is False when nothing of
    this call was sent (the connection could not be made): nothing was
    carried out.  When it is True, requests without a reply may or may not
    have been carried out: a submit may have been recorded (repeating it
    is harmless except that the URL's reference count goes up once more), a
    delete may have happened.  The connection is closed; the next call
    connects again.
    """

    def __init__(self, message: str, *, address: str = "",
                 sent: bool = False, results: Optional[List] = None):
        super().__init__(message, results=results)
        self.address = address
        self.sent = sent


class NdddTimeoutError(NdddConnectionError, TimeoutError):
    """Connecting, or a request of the call, took longer than the client's
    timeout.  The connection is closed (a late reply cannot be told from
    the next call's); the next call connects again."""


class NdddProtocolError(NdddConnectionError):
    """The daemon sent a reply this client cannot accept (an unknown id, a
    result of the wrong kind or length, an oversized frame).  The connection
    is closed."""


class NdddLibraryError(NdddError, ImportError):
    """``Client(digests=True)`` needs libnddd.so, the daemon's
    canonicalizer, and local fingerprints (nddd.engine, nddd.dedup) its
    simhash engine, and it could not be loaded: the message says where it
    was looked for (``$NDDD_LIBRARY`` first; see nddd._canon)."""

"""The protocol's message classes, generated from proto/nddd.proto.

``nddd_pb2`` is written by protoc when nddd is built (``make``); it is not
kept in the source tree.  This module imports it and says what to do when
it is missing.
"""

try:
    from . import nddd_pb2 as pb
except ImportError as e:  # pragma: no cover - depends on the build
    if getattr(e, "name", None) not in (None, "nddd.nddd_pb2"):
        raise
    raise ImportError(
        "nddd.nddd_pb2 is missing: it is generated from proto/nddd.proto by "
        "protoc; run `make` in the nddd source tree (or install the package "
        "with pip, which runs protoc)") from e

__all__ = ["pb"]

"""Storage: the ``Store`` protocol and the default ``SqliteStore``."""

from agcore_lab.store.aio import AsyncStore
from agcore_lab.store.base import (
    CkptMeta,
    LinkRecord,
    MemoryEntry,
    SessionRecord,
    SlotRecord,
    Store,
)
from agcore_lab.store.sqlite import SqliteStore
from agcore_lab.store.threaded import ThreadedAsyncStore, as_async

__all__ = [
    "AsyncStore",
    "CkptMeta",
    "LinkRecord",
    "MemoryEntry",
    "SessionRecord",
    "SlotRecord",
    "SqliteStore",
    "Store",
    "ThreadedAsyncStore",
    "as_async",
]

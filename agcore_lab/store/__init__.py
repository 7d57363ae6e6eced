"""Storage: the ``Store`` protocol and the default ``SqliteStore``."""

from agcore_lab.store.base import (
    CkptMeta,
    LinkRecord,
    MemoryEntry,
    SessionRecord,
    SlotRecord,
    Store,
)
from agcore_lab.store.sqlite import SqliteStore

__all__ = [
    "CkptMeta",
    "LinkRecord",
    "MemoryEntry",
    "SessionRecord",
    "SlotRecord",
    "SqliteStore",
    "Store",
]

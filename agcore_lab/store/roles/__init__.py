"""The roles of the :class:`~agcore_lab.store.base.Store` protocol, one small protocol each.

``Store`` is their union (plus ``close``). Code that needs one capability may ask for its role
(``def f(store: CheckpointStore)``); a backend implements them all. Each role has an async twin
in :mod:`agcore_lab.store.aio` with the same methods as ``a``-prefixed coroutines.
"""

from agcore_lab.store.roles.calls import CallStore
from agcore_lab.store.roles.chains import ChainStore
from agcore_lab.store.roles.changes import ChangeFeed
from agcore_lab.store.roles.checkpoints import CheckpointStore
from agcore_lab.store.roles.frames import FrameReader
from agcore_lab.store.roles.memory import MemoryStore
from agcore_lab.store.roles.pending import PendingStore
from agcore_lab.store.roles.sessions import SessionStore

__all__ = [
    "CallStore",
    "ChainStore",
    "ChangeFeed",
    "CheckpointStore",
    "FrameReader",
    "MemoryStore",
    "PendingStore",
    "SessionStore",
]

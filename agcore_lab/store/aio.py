"""``AsyncStore``: the async twin of the :class:`~agcore_lab.store.base.Store` protocol.

The engine is asyncio-first, so it awaits the store through this protocol: every ``Store``
method ``name`` has a coroutine ``aname`` with the same parameters and result (langgraph's
``put`` / ``aput`` pairing), split by the same roles. ``origin`` stays a plain property (it
does no I/O) and ``close`` becomes ``aclose``.

A backend need not implement it: :func:`~agcore_lab.store.threaded.as_async` wraps any sync
``Store`` in a :class:`~agcore_lab.store.threaded.ThreadedAsyncStore`, which calls the sync
method on the event loop (SQLite: a local call is cheaper than a thread hop) or in a worker
thread (PostgreSQL: a network round trip must not block the loop). A native async backend
implements ``AsyncStore`` itself, and also ``sync_store`` (the sync ``Store`` the engine's
sync-only paths — lease renewal thread, views — keep using).

Example:
    >>> import asyncio
    >>> from agcore_lab.store import SqliteStore, as_async
    >>> from agcore_lab.store.base import SessionRecord
    >>> astore = as_async(SqliteStore(":memory:"))
    >>> asyncio.run(astore.acreate_session(SessionRecord(session_id="s1", agent_name="a")))
    >>> asyncio.run(astore.asession_version("s1"))
    0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    import pandas as pd
    from pydantic import JsonValue

    from agcore_lab.llm.call_note import CallNote
    from agcore_lab.llm.call_record import ModelCall
    from agcore_lab.llm.history import MessageHistory
    from agcore_lab.llm.messages import Message
    from agcore_lab.store.base import (
        ChangeRecord,
        CkptMeta,
        LinkRecord,
        MemoryEntry,
        MemoryWrite,
        SessionRecord,
        SlotRecord,
        Store,
    )
    from agcore_lab.store.pending import PendingToolCall
    from agcore_lab.store.roles.sessions import NewSession

_T = TypeVar("_T")

__all__ = [
    "AsyncCallStore",
    "AsyncChainStore",
    "AsyncChangeFeed",
    "AsyncCheckpointStore",
    "AsyncFrameReader",
    "AsyncMemoryStore",
    "AsyncPendingStore",
    "AsyncSessionStore",
    "AsyncStore",
]


@runtime_checkable
class AsyncSessionStore(Protocol):
    """The async twin of :class:`~agcore_lab.store.roles.SessionStore`."""

    async def acreate_session(
        self,
        record: SessionRecord,
        *,
        slots: Sequence[SlotRecord] = (),
        checkpoint: CkptMeta | None = None,
    ) -> None:
        """Async :meth:`~agcore_lab.store.base.Store.create_session`."""
        ...

    async def acreate_sessions(
        self, sessions: Sequence[NewSession], *, lease_holder: str | None = None, ttl: float = 0.0
    ) -> None:
        """Async :meth:`~agcore_lab.store.base.Store.create_sessions`."""
        ...

    async def aget_session(self, session_id: str) -> SessionRecord | None:
        """Async :meth:`~agcore_lab.store.base.Store.get_session`."""
        ...

    async def alist_sessions(self) -> list[SessionRecord]:
        """Async :meth:`~agcore_lab.store.base.Store.list_sessions`."""
        ...

    async def achild_ids(self, session_id: str) -> list[str]:
        """Async :meth:`~agcore_lab.store.base.Store.child_ids`."""
        ...

    async def adelete_session(
        self, session_id: str, *, expected_version: int | None = None
    ) -> bool:
        """Async :meth:`~agcore_lab.store.base.Store.delete_session`."""
        ...

    async def asession_version(self, session_id: str) -> int | None:
        """Async :meth:`~agcore_lab.store.base.Store.session_version`."""
        ...

    async def aacquire_lease(self, session_id: str, holder: str, *, ttl: float) -> int:
        """Async :meth:`~agcore_lab.store.base.Store.acquire_lease`."""
        ...

    async def arenew_lease(self, session_id: str, holder: str, *, ttl: float) -> bool:
        """Async :meth:`~agcore_lab.store.base.Store.renew_lease`."""
        ...

    async def arelease_lease(self, session_id: str, holder: str) -> None:
        """Async :meth:`~agcore_lab.store.base.Store.release_lease`."""
        ...


@runtime_checkable
class AsyncChainStore(Protocol):
    """The async twin of :class:`~agcore_lab.store.roles.ChainStore`."""

    async def acommit(
        self,
        session: SessionRecord,
        *,
        messages: Sequence[Message] = (),
        links: Sequence[LinkRecord] = (),
        slots: Sequence[SlotRecord] = (),
        pending: PendingToolCall | None = None,
        lease_holder: str | None = None,
        change: str = "turn",
        calls: Sequence[ModelCall | CallNote] = (),
        release_lease: bool = False,
        checkpoint: CkptMeta | None = None,
        memory: Sequence[MemoryWrite] = (),
    ) -> int:
        """Async :meth:`~agcore_lab.store.base.Store.commit`."""
        ...

    async def aload_slots(self, session_id: str) -> list[SlotRecord]:
        """Async :meth:`~agcore_lab.store.base.Store.load_slots`."""
        ...

    async def aload_chain(self, head_node_id: str) -> list[tuple[LinkRecord, Message]]:
        """Async :meth:`~agcore_lab.store.base.Store.load_chain`."""
        ...

    async def aload_chain_tail(
        self, head_node_id: str, limit: int
    ) -> list[tuple[LinkRecord, Message]]:
        """Async :meth:`~agcore_lab.store.base.Store.load_chain_tail`."""
        ...

    async def aload_chain_history(self, head_node_id: str) -> tuple[MessageHistory, dict[int, str]]:
        """Async :meth:`~agcore_lab.store.base.Store.load_chain_history`."""
        ...


@runtime_checkable
class AsyncCheckpointStore(Protocol):
    """The async twin of :class:`~agcore_lab.store.roles.CheckpointStore`."""

    async def aput_checkpoint(self, ckpt: CkptMeta, *, expected_version: int | None = None) -> None:
        """Async :meth:`~agcore_lab.store.base.Store.put_checkpoint`."""
        ...

    async def alist_checkpoints(
        self,
        session_id: str | None = None,
        *,
        limit: int | None = None,
        before: str | int | None = None,
    ) -> list[CkptMeta]:
        """Async :meth:`~agcore_lab.store.base.Store.list_checkpoints`."""
        ...

    async def aget_checkpoint(self, ckpt_id: str) -> CkptMeta | None:
        """Async :meth:`~agcore_lab.store.base.Store.get_checkpoint`."""
        ...

    async def alatest_checkpoint_id(self, session_id: str) -> str | None:
        """Async :meth:`~agcore_lab.store.base.Store.latest_checkpoint_id`."""
        ...

    async def adelete_checkpoints(
        self, session_id: str, ckpt_ids: Sequence[str] | None = None
    ) -> int:
        """Async :meth:`~agcore_lab.store.base.Store.delete_checkpoints`."""
        ...

    async def arestore_checkpoint(
        self,
        ckpt: CkptMeta,
        session: SessionRecord,
        marker: CkptMeta,
        *,
        create: bool = False,
        lease_holder: str | None = None,
    ) -> int:
        """Async :meth:`~agcore_lab.store.base.Store.restore_checkpoint`."""
        ...


@runtime_checkable
class AsyncPendingStore(Protocol):
    """The async twin of :class:`~agcore_lab.store.roles.PendingStore`."""

    async def alist_pending(
        self, session_id: str | None = None, *, include_resolved: bool = False
    ) -> list[PendingToolCall]:
        """Async :meth:`~agcore_lab.store.base.Store.list_pending`."""
        ...

    async def aget_pending(self, interrupt_id: str) -> PendingToolCall | None:
        """Async :meth:`~agcore_lab.store.base.Store.get_pending`."""
        ...

    async def adecide_pending(
        self,
        *,
        session_id: str,
        run_id: str,
        interrupt_id: str,
        to_status: str,
        decision: dict[str, JsonValue] | None = None,
        result: JsonValue = None,
        from_status: str = "PENDING_APPROVAL",
        executor: str | None = None,
        lease_seconds: float | None = None,
    ) -> PendingToolCall:
        """Async :meth:`~agcore_lab.store.base.Store.decide_pending`."""
        ...

    async def arenew_execution(self, interrupt_id: str, executor: str, *, ttl: float) -> bool:
        """Async :meth:`~agcore_lab.store.base.Store.renew_execution`."""
        ...


@runtime_checkable
class AsyncMemoryStore(Protocol):
    """The async twin of :class:`~agcore_lab.store.roles.MemoryStore`."""

    async def amemory_set(
        self, session_id: str, key: str, value: JsonValue, metadata: dict[str, JsonValue]
    ) -> MemoryEntry:
        """Async :meth:`~agcore_lab.store.base.Store.memory_set`."""
        ...

    async def amemory_delete(self, session_id: str, key: str) -> bool:
        """Async :meth:`~agcore_lab.store.base.Store.memory_delete`."""
        ...

    async def amemory_entries(
        self, session_id: str, *, at_version: int | None = None
    ) -> list[MemoryEntry]:
        """Async :meth:`~agcore_lab.store.base.Store.memory_entries`."""
        ...

    async def amemory_version(self, session_id: str) -> int:
        """Async :meth:`~agcore_lab.store.base.Store.memory_version`."""
        ...


@runtime_checkable
class AsyncCallStore(Protocol):
    """The async twin of :class:`~agcore_lab.store.roles.CallStore`."""

    async def ainsert_calls(self, calls: Sequence[ModelCall | CallNote]) -> None:
        """Async :meth:`~agcore_lab.store.base.Store.insert_calls`."""
        ...

    async def alist_calls(
        self,
        session_id: str | None = None,
        *,
        call_id: str | None = None,
        turn_index: int | None = None,
        last: int | None = None,
    ) -> list[ModelCall]:
        """Async :meth:`~agcore_lab.store.base.Store.list_calls`."""
        ...


@runtime_checkable
class AsyncChangeFeed(Protocol):
    """The async twin of :class:`~agcore_lab.store.roles.ChangeFeed`."""

    @property
    def origin(self) -> str:
        """Same as :attr:`Store.origin` (no I/O: a plain property)."""
        ...

    async def awatch_token(self) -> int:
        """Async :meth:`~agcore_lab.store.base.Store.watch_token`."""
        ...

    async def achanges_since(self, seq: int) -> list[ChangeRecord]:
        """Async :meth:`~agcore_lab.store.base.Store.changes_since`."""
        ...

    async def alatest_change(self) -> int:
        """Async :meth:`~agcore_lab.store.base.Store.latest_change`."""
        ...


@runtime_checkable
class AsyncFrameReader(Protocol):
    """The async twin of :class:`~agcore_lab.store.roles.FrameReader`."""

    async def aread_dataframe(self, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
        """Async :meth:`~agcore_lab.store.base.Store.read_dataframe`."""
        ...


@runtime_checkable
class AsyncStore(
    AsyncSessionStore,
    AsyncChainStore,
    AsyncCheckpointStore,
    AsyncPendingStore,
    AsyncMemoryStore,
    AsyncCallStore,
    AsyncChangeFeed,
    AsyncFrameReader,
    Protocol,
):
    """The union of the async roles: what the engine awaits (see the module docstring)."""

    @property
    def sync_store(self) -> Store:
        """The sync :class:`~agcore_lab.store.base.Store` over the same data (for sync-only
        code paths: a lease-renewal thread, view reads)."""
        ...

    async def aclose(self) -> None:
        """Async :meth:`~agcore_lab.store.base.Store.close`."""
        ...

    async def arun(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        """Run ``fn(*args, **kwargs)`` — sync work made of several reads of this store, such
        as rebuilding a session from its rows — where the adapter runs a store call (on a
        worker thread when the backend hops, so a reload does not block the event loop)."""
        ...

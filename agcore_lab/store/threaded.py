"""``ThreadedAsyncStore``: any sync ``Store`` as an :class:`~agcore_lab.store.aio.AsyncStore`.

Each ``a``-method forwards to the sync method of the same name, either directly on the event
loop (``hop=False``) or in a worker thread (``hop=True``). :func:`as_async` picks per backend
from the class attribute ``async_hop``: ``SqliteStore`` says ``False`` (its calls are short
local transactions, cheaper than a thread hop, measured in ``bench/store_seam.py``),
``PostgresStore`` says ``True`` (a network round trip must not block the loop). A backend
without the attribute is hopped (the safe choice for unknown I/O).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from agcore_lab.errors import InvalidInputError
from agcore_lab.store.aio import AsyncStore

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

__all__ = ["ThreadedAsyncStore", "as_async"]

P = ParamSpec("P")
T = TypeVar("T")


def as_async(store: Store | AsyncStore) -> AsyncStore:
    """The :class:`~agcore_lab.store.aio.AsyncStore` the engine awaits for ``store``.

    An ``AsyncStore`` is returned as it is; a sync ``Store`` is wrapped in a
    :class:`ThreadedAsyncStore` whose ``hop`` is the backend's ``async_hop`` class attribute
    (``True`` when it has none).

    Example:
        >>> from agcore_lab.store import SqliteStore, as_async
        >>> as_async(SqliteStore(":memory:")).hop
        False
    """
    if isinstance(store, AsyncStore):
        return store
    return ThreadedAsyncStore(store, hop=bool(getattr(type(store), "async_hop", True)))


class ThreadedAsyncStore:
    """A sync :class:`~agcore_lab.store.base.Store` behind the async protocol.

    Args:
        store: The sync store; it stays usable directly (``sync_store``).
        hop: ``True``: run each call in a worker thread (``executor``, or the loop's default
            one), so the event loop keeps serving other tasks while it waits; ``False``: call
            the sync method directly on the loop (cheaper for short local calls).
        executor: The executor the hops use (the loop's default one when ``None``).

    Raises:
        InvalidInputError: ``store`` is not a ``Store``.

    Thread-safety: as safe as the wrapped store (both backends may be called from several
    threads); it keeps no state of its own.
    """

    __slots__ = ("_executor", "_store", "hop")

    def __init__(self, store: Store, *, hop: bool = True, executor: Executor | None = None) -> None:
        from agcore_lab.store.base import Store

        if not isinstance(store, Store):
            roles = [c for c in Store.__mro__ if getattr(c, "_is_protocol", False)]
            names = {n for c in roles for n in vars(c) if not n.startswith("_")}
            missing = sorted(n for n in names if getattr(store, n, None) is None)
            raise InvalidInputError(
                f"ThreadedAsyncStore needs a Store (every method of agcore_lab.store.Store); "
                f"{type(store).__name__} lacks {', '.join(missing) or 'some of them'}"
            )
        self._store, self.hop, self._executor = store, hop, executor

    def __repr__(self) -> str:
        return f"ThreadedAsyncStore({self._store!r}, hop={self.hop})"

    @property
    def sync_store(self) -> Store:
        """The wrapped sync store."""
        return self._store

    async def _run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        if not self.hop:
            return fn(*args, **kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def aclose(self) -> None:
        await self._run(self._store.close)

    async def arun(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(fn, *args, **kwargs)

    # -- SessionStore --

    async def acreate_session(
        self,
        record: SessionRecord,
        *,
        slots: Sequence[SlotRecord] = (),
        checkpoint: CkptMeta | None = None,
    ) -> None:
        return await self._run(
            self._store.create_session, record, slots=slots, checkpoint=checkpoint
        )

    async def acreate_sessions(
        self, sessions: Sequence[NewSession], *, lease_holder: str | None = None, ttl: float = 0.0
    ) -> None:
        return await self._run(
            self._store.create_sessions, sessions, lease_holder=lease_holder, ttl=ttl
        )

    async def aget_session(self, session_id: str) -> SessionRecord | None:
        return await self._run(self._store.get_session, session_id)

    async def alist_sessions(self) -> list[SessionRecord]:
        return await self._run(self._store.list_sessions)

    async def achild_ids(self, session_id: str) -> list[str]:
        return await self._run(self._store.child_ids, session_id)

    async def adelete_session(
        self, session_id: str, *, expected_version: int | None = None
    ) -> bool:
        return await self._run(
            self._store.delete_session, session_id, expected_version=expected_version
        )

    async def asession_version(self, session_id: str) -> int | None:
        return await self._run(self._store.session_version, session_id)

    async def aacquire_lease(self, session_id: str, holder: str, *, ttl: float) -> int:
        return await self._run(self._store.acquire_lease, session_id, holder, ttl=ttl)

    async def arenew_lease(self, session_id: str, holder: str, *, ttl: float) -> bool:
        return await self._run(self._store.renew_lease, session_id, holder, ttl=ttl)

    async def arelease_lease(self, session_id: str, holder: str) -> None:
        return await self._run(self._store.release_lease, session_id, holder)

    # -- ChainStore --

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
        return await self._run(
            self._store.commit,
            session,
            messages=messages,
            links=links,
            slots=slots,
            pending=pending,
            lease_holder=lease_holder,
            change=change,
            calls=calls,
            release_lease=release_lease,
            checkpoint=checkpoint,
            memory=memory,
        )

    async def aload_slots(self, session_id: str) -> list[SlotRecord]:
        return await self._run(self._store.load_slots, session_id)

    async def aload_chain(self, head_node_id: str) -> list[tuple[LinkRecord, Message]]:
        return await self._run(self._store.load_chain, head_node_id)

    async def aload_chain_tail(
        self, head_node_id: str, limit: int
    ) -> list[tuple[LinkRecord, Message]]:
        return await self._run(self._store.load_chain_tail, head_node_id, limit)

    async def aload_chain_history(self, head_node_id: str) -> tuple[MessageHistory, dict[int, str]]:
        return await self._run(self._store.load_chain_history, head_node_id)

    # -- CheckpointStore --

    async def aput_checkpoint(self, ckpt: CkptMeta, *, expected_version: int | None = None) -> None:
        return await self._run(self._store.put_checkpoint, ckpt, expected_version=expected_version)

    async def alist_checkpoints(
        self,
        session_id: str | None = None,
        *,
        limit: int | None = None,
        before: str | int | None = None,
    ) -> list[CkptMeta]:
        return await self._run(self._store.list_checkpoints, session_id, limit=limit, before=before)

    async def aget_checkpoint(self, ckpt_id: str) -> CkptMeta | None:
        return await self._run(self._store.get_checkpoint, ckpt_id)

    async def alatest_checkpoint_id(self, session_id: str) -> str | None:
        return await self._run(self._store.latest_checkpoint_id, session_id)

    async def adelete_checkpoints(
        self, session_id: str, ckpt_ids: Sequence[str] | None = None
    ) -> int:
        return await self._run(self._store.delete_checkpoints, session_id, ckpt_ids)

    async def arestore_checkpoint(
        self,
        ckpt: CkptMeta,
        session: SessionRecord,
        marker: CkptMeta,
        *,
        create: bool = False,
        lease_holder: str | None = None,
    ) -> int:
        return await self._run(
            self._store.restore_checkpoint,
            ckpt,
            session,
            marker,
            create=create,
            lease_holder=lease_holder,
        )

    # -- PendingStore --

    async def alist_pending(
        self, session_id: str | None = None, *, include_resolved: bool = False
    ) -> list[PendingToolCall]:
        return await self._run(
            self._store.list_pending, session_id, include_resolved=include_resolved
        )

    async def aget_pending(self, interrupt_id: str) -> PendingToolCall | None:
        return await self._run(self._store.get_pending, interrupt_id)

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
        return await self._run(
            self._store.decide_pending,
            session_id=session_id,
            run_id=run_id,
            interrupt_id=interrupt_id,
            to_status=to_status,
            decision=decision,
            result=result,
            from_status=from_status,
            executor=executor,
            lease_seconds=lease_seconds,
        )

    async def arenew_execution(self, interrupt_id: str, executor: str, *, ttl: float) -> bool:
        return await self._run(self._store.renew_execution, interrupt_id, executor, ttl=ttl)

    # -- MemoryStore --

    async def amemory_set(
        self, session_id: str, key: str, value: JsonValue, metadata: dict[str, JsonValue]
    ) -> MemoryEntry:
        return await self._run(self._store.memory_set, session_id, key, value, metadata)

    async def amemory_delete(self, session_id: str, key: str) -> bool:
        return await self._run(self._store.memory_delete, session_id, key)

    async def amemory_entries(
        self, session_id: str, *, at_version: int | None = None
    ) -> list[MemoryEntry]:
        return await self._run(self._store.memory_entries, session_id, at_version=at_version)

    async def amemory_version(self, session_id: str) -> int:
        return await self._run(self._store.memory_version, session_id)

    # -- CallStore --

    async def ainsert_calls(self, calls: Sequence[ModelCall | CallNote]) -> None:
        return await self._run(self._store.insert_calls, calls)

    async def alist_calls(
        self,
        session_id: str | None = None,
        *,
        call_id: str | None = None,
        turn_index: int | None = None,
        last: int | None = None,
    ) -> list[ModelCall]:
        return await self._run(
            self._store.list_calls, session_id, call_id=call_id, turn_index=turn_index, last=last
        )

    # -- ChangeFeed --

    @property
    def origin(self) -> str:
        """The wrapped store's :attr:`~agcore_lab.store.base.Store.origin`."""
        return self._store.origin

    async def awatch_token(self) -> int:
        return await self._run(self._store.watch_token)

    async def achanges_since(self, seq: int) -> list[ChangeRecord]:
        return await self._run(self._store.changes_since, seq)

    async def alatest_change(self) -> int:
        return await self._run(self._store.latest_change)

    # -- FrameReader --

    async def aread_dataframe(self, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
        return await self._run(self._store.read_dataframe, sql, params)

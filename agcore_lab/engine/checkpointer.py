"""``Checkpointer``: time travel for sessions — of a :class:`SessionManager`, or over a bare store.

``checkpoint`` records a session's state (slot heads into the stored message chains, scalars,
memory version — never a copy of the history); ``rollback`` returns the live session and the
store to exactly that state; ``fork`` starts a child session from it and leaves the original
untouched. Rollbacks and forks are themselves recorded as checkpoints (source ``rollback`` /
``fork``), so the timeline shows them and nothing is lost: you can roll forward again.

It works on its own over a store (``Checkpointer(store)``, the design's decision D3):
checkpoint, list, ``rollback_load``, rollback (of the stored state), fork, prune, export,
import and ``delete_all`` need nothing else. A manager composes one (``manager.checkpointer``)
that also keeps its live sessions and listeners in step.

``rollback_load`` is the first of the design's four steps; together they give exactly the
state of the one-call ``rollback``::

    snapshot = await checkpointer.rollback_load(session_id, ckpt_id)   # read only
    session = AgentSession.from_snapshot(snapshot, agent, bundle)      # pure, no I/O
    await session.restore_memory()                                     # idempotent
    await manager.replace(session_id, session)                         # the version-checked write
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from agcore_lab.aio import run_sync
from agcore_lab.checks import check_count
from agcore_lab.engine.checkpoint_frame import checkpoints_dataframe
from agcore_lab.engine.records import CheckpointPreview, PruneReport
from agcore_lab.engine.rollback_steps import RollbackSteps
from agcore_lab.engine.snapshot import SessionSnapshot, export_snapshot, import_snapshot
from agcore_lab.errors import (
    CheckpointNotFoundError,
    InvalidInputError,
    SessionNotFoundError,
)
from agcore_lab.ids import new_id, utcnow
from agcore_lab.store._trusted import trusted
from agcore_lab.store.aio import AsyncStore
from agcore_lab.store.base import CheckpointSource, CkptMeta, SessionRecord, Store
from agcore_lab.store.pending import PendingToolCall
from agcore_lab.store.threaded import as_async

if TYPE_CHECKING:
    import pandas as pd

    from agcore_lab.agent.session import AgentSession
    from agcore_lab.engine.host import ManagerHost
    from agcore_lab.engine.records import EventKind

__all__ = ["CheckpointNotFoundError", "Checkpointer"]


class Checkpointer(RollbackSteps):
    """Checkpoints of sessions: over a bare store, or for the sessions of one manager.

    Args:
        target: A :class:`~agcore_lab.store.base.Store` (standalone: no manager needed), or
            the manager it belongs to (``manager.checkpointer`` is made this way).

    All async methods have ``*_sync`` twins.

    Example:
        >>> from agcore_lab import Agent, AgentSession, ScriptedModel, SqliteStore
        >>> store = SqliteStore(":memory:")
        >>> session = AgentSession(Agent(name="a", model=ScriptedModel()), store=store)
        >>> checkpointer = Checkpointer(store)
        >>> ckpt = checkpointer.checkpoint_sync(session, "empty")
        >>> _ = session.submit_turn_sync("hi")
        >>> snap = checkpointer.rollback_load_sync(session.session_id, ckpt)
        >>> snap.turn_index, session.turn_index
        (0, 1)
        >>> [c.label for c in checkpointer.list_checkpoints_sync(session.session_id)]
        ['empty']
    """

    def __init__(self, target: Store | ManagerHost) -> None:
        self._manager: ManagerHost | None
        self._bare: Store | None
        self._bare_async: AsyncStore | None = None
        if isinstance(target, Store):
            self._manager, self._bare = None, target
            self._bare_async = as_async(target)
        else:
            self._manager, self._bare = target, None

    @property
    def _store(self) -> Store:
        if self._manager is not None:
            return self._manager.store
        assert self._bare is not None
        return self._bare

    @property
    def _astore(self) -> AsyncStore:
        # What the coroutines await: the manager's seam, or the bare store's own.
        if self._manager is not None:
            return self._manager.astore
        assert self._bare_async is not None
        return self._bare_async

    @property
    def store(self) -> Store:
        """The store the checkpoints live in."""
        return self._store

    def _emit(self, kind: EventKind, session_id: str, **fields: str | None) -> None:
        if self._manager is not None:
            self._manager.emit(kind, session_id, **fields)

    def _require_stored(self, session_id: str) -> SessionRecord:
        if self._manager is not None:
            return self._manager.require_stored(session_id)
        record = self._store.get_session(session_id)
        if record is None:
            raise SessionNotFoundError("no such session in the store", session_id=session_id)
        return record

    async def _arequire_stored(self, session_id: str) -> SessionRecord:
        if self._manager is not None:
            return await self._manager.arequire_stored(session_id)
        record = await self._astore.aget_session(session_id)
        if record is None:
            raise SessionNotFoundError("no such session in the store", session_id=session_id)
        return record

    # -- writing ----------------------------------------------------------------------------

    def _meta(
        self,
        session: AgentSession,
        *,
        label: str | None,
        source: CheckpointSource,
        parent: str | None,
        memory_version: int | None = None,
        pending: PendingToolCall | None | bool = True,
    ) -> CkptMeta:
        # ``pending=True``: read the call the session waits on here (sync callers); async
        # callers pass what they awaited.
        usage = session.usage
        if memory_version is None:
            memory_version = self._store.memory_version(session.session_id)
        if pending is True:
            pending = session.pending_tool_call()
        waiting = pending if isinstance(pending, PendingToolCall) else None
        # Built from the session's own, already validated state (records, counters): no
        # validation pass (one per checkpoint, so one per dispatch child and per turn).
        fields = {
            "ckpt_id": new_id("ckpt"),
            "session_id": session.session_id,
            "parent_ckpt_id": parent,
            "turn_index": int(session.turn_index),
            "created_at": utcnow(),
            "label": label,
            "source": source,
            "message_count": len(session.current_slot.messages),
            "prompt_tokens": int(usage.prompt_tokens),
            "completion_tokens": int(usage.completion_tokens),
            "cost_usd": float(session.cost_so_far),
            "agent_name": session.agent.name,
            "current_slot_id": session.current_slot_id,
            "last_summary_turn": session.last_summary_turn,
            "memory_version": int(memory_version),
            "slots": {sid: s.to_record(session.session_id) for sid, s in session.slots.items()},
            "spend": dict(session.cost_tracker.by_model),
            "pending": waiting
            if waiting is not None and waiting.status == "PENDING_APPROVAL"
            else None,
        }
        return trusted(CkptMeta, fields)

    async def checkpoint(
        self,
        session: AgentSession,
        label: str | None = None,
        *,
        source: CheckpointSource = "manual",
    ) -> str:
        """Record ``session``'s current state; return the checkpoint id.

        Waits for a running turn of the session to finish first.

        Raises:
            StorageError: The write failed (the previous checkpoints are intact).
        """
        async with session.turn_lock:
            return await self.acheckpoint_locked(session, label, source=source)

    def first_meta(self, session: AgentSession, label: str = "start") -> CkptMeta:
        """The first checkpoint of a session being created (no parent), for
        ``AgentSession(first_checkpoint=...)`` to store with the session in one write;
        announce it with :meth:`announce` once the session is stored. A session being
        created has written no memory and waits on no call: nothing is read."""
        return self._meta(
            session, label=label, source="auto", parent=None, memory_version=0, pending=None
        )

    def turn_meta(self, session: AgentSession, pending: PendingToolCall | None) -> CkptMeta:
        """The automatic checkpoint after a turn, built from ``session`` as the turn's commit
        leaves it, for that commit to store (``Store.commit(checkpoint=...)``, which links it
        to the latest checkpoint as its parent and sets its memory version); ``pending`` is
        the turn's new pending call (not stored yet). Announce it with :meth:`announce` once
        stored. The same checkpoint as :meth:`checkpoint_locked` would write then."""
        if session.store is not self._store:
            raise InvalidInputError(
                "the session lives in another store than this checkpointer's",
                session_id=session.session_id,
            )
        # Parent and memory version are read by the commit, in its transaction (no read here).
        return self._meta(
            session, label=None, source="auto", parent=None, memory_version=0, pending=pending
        )

    def announce(self, meta: CkptMeta) -> None:
        """Tell the listeners about a checkpoint stored by another write."""
        self._emit("checkpoint", meta.session_id, ckpt_id=meta.ckpt_id)

    def checkpoint_locked(
        self, session: AgentSession, label: str | None = None, *, source: CheckpointSource = "auto"
    ) -> str:
        """:meth:`checkpoint` for a caller that already holds the session's turn lock."""
        if session.store is not self._store:
            raise InvalidInputError(
                "the session lives in another store than this checkpointer's",
                session_id=session.session_id,
            )
        meta = self._meta(
            session,
            label=label,
            source=source,
            parent=self._store.latest_checkpoint_id(session.session_id),
        )
        self._store.put_checkpoint(meta, expected_version=session.version)
        self._emit("checkpoint", session.session_id, ckpt_id=meta.ckpt_id)
        return meta.ckpt_id

    async def acheckpoint_locked(
        self, session: AgentSession, label: str | None = None, *, source: CheckpointSource = "auto"
    ) -> str:
        """:meth:`checkpoint_locked`, awaited through the async store (what the engine's
        coroutines use)."""
        if session.store is not self._store:
            raise InvalidInputError(
                "the session lives in another store than this checkpointer's",
                session_id=session.session_id,
            )
        store, sid = self._astore, session.session_id
        meta = self._meta(
            session,
            label=label,
            source=source,
            parent=await store.alatest_checkpoint_id(sid),
            memory_version=await store.amemory_version(sid),
            pending=await session._apending_tool_call(),
        )
        await store.aput_checkpoint(meta, expected_version=session.version)
        self._emit("checkpoint", sid, ckpt_id=meta.ckpt_id)
        return meta.ckpt_id

    # -- reading ----------------------------------------------------------------------------

    async def list_checkpoints(
        self, session_id: str, *, limit: int | None = None, before: str | int | None = None
    ) -> list[CkptMeta]:
        """The session's checkpoints, newest first — all of them, or one page.

        Args:
            session_id: The session.
            limit: At most this many (the newest first).
            before: Page back from here: a checkpoint id (``str``) lists only the checkpoints
                older than it — pass the last id of one page to get the next — and a turn
                index (``int``) only those of earlier turns.

        Raises:
            SessionNotFoundError: The session is not in the store.
            InvalidInputError: ``limit`` is not an int >= 1, or ``before`` is neither a
                checkpoint id nor a turn index.

        Example:
            >>> from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
            >>> manager = SessionManager(SqliteStore(":memory:"))
            >>> sid = manager.create_sync(Agent(name="a", model=ScriptedModel(["ok"] * 5)))
            >>> for n in range(5):
            ...     _ = manager.submit_turn_sync(sid, f"turn {n}")
            >>> page = manager.checkpointer.list_checkpoints_sync(sid, limit=2)
            >>> [c.turn_index for c in page]
            [5, 4]
            >>> older = manager.checkpointer.list_checkpoints_sync(
            ...     sid, limit=2, before=page[-1].ckpt_id
            ... )
            >>> [c.turn_index for c in older]
            [3, 2]
        """
        await self._arequire_stored(session_id)
        return await self._astore.alist_checkpoints(session_id, limit=limit, before=before)

    async def get_checkpoint(self, ckpt_id: str, session_id: str | None = None) -> CkptMeta:
        """One checkpoint.

        Raises:
            CheckpointNotFoundError: Unknown id.
            InvalidInputError: It belongs to another session than ``session_id``.
        """
        meta = await self._astore.aget_checkpoint(ckpt_id)
        if meta is None:
            raise CheckpointNotFoundError(
                "no such checkpoint; list them with list_checkpoints(session_id)",
                checkpoint_id=ckpt_id,
                session_id=session_id,
            )
        if session_id is not None and meta.session_id != session_id:
            raise InvalidInputError(
                f"checkpoint {ckpt_id!r} belongs to session {meta.session_id!r}, not to "
                f"{session_id!r}; use fork() to start a session from another session's checkpoint",
                checkpoint_id=ckpt_id,
                session_id=session_id,
            )
        return meta

    async def preview(self, ckpt_id: str) -> CheckpointPreview:
        """What the checkpoint holds: slot sizes, the last messages of its current slot and
        its memory — for a view to show before a rollback or fork. It reads the newest five
        messages of the current slot and one of each other slot, at any history length."""
        meta = await self.get_checkpoint(ckpt_id)
        counts, last = {}, []
        for slot_id, slot in meta.slots.items():
            current = slot_id == meta.current_slot_id
            tail = (
                await self._astore.aload_chain_tail(slot.head_node_id, 5 if current else 1)
                if slot.head_node_id
                else []
            )
            counts[slot_id] = tail[-1][0].depth + 1 if tail else 0  # a node's depth: its index
            if current:
                last = [message for _, message in tail]
        memory = await self._astore.amemory_entries(meta.session_id, at_version=meta.memory_version)
        return CheckpointPreview(
            meta=meta,
            slots=counts,
            current_slot_id=meta.current_slot_id,
            last_messages=last,
            memory={e.key: e.value for e in memory},
        )

    def to_dataframe(self, session_id: str | None = None) -> pd.DataFrame:
        """Checkpoints (of one session or all) as a DataFrame, newest first.

        Columns: ``ckpt_id, session_id, parent_ckpt_id, turn_index, created_at`` (UTC),
        ``label, source, message_count, prompt_tokens, completion_tokens, total_tokens,
        cost_usd, agent_name, current_slot_id``. Read straight from the ``checkpoints`` table
        by SQL (the store's ``read_dataframe``).
        """
        return checkpoints_dataframe(self._store, session_id)

    # -- time travel ------------------------------------------------------------------------

    async def rollback(self, session_id: str, ckpt_id: str) -> str:
        """Return the session — live object and store — to the checkpoint's exact state.

        Slots, messages, turn index, cost, memory, current slot and summary turn all go back.
        The rollback is recorded as a checkpoint (source ``rollback``) whose id is returned.
        Over a bare store (``Checkpointer(store)``) it returns the stored session to that
        state (live objects elsewhere notice through their version and refresh).

        Raises:
            SessionNotFoundError: Unknown session.
            CheckpointNotFoundError: Unknown checkpoint.
            InvalidInputError: The checkpoint belongs to another session.
        """
        if self._manager is None:
            record = await self._arequire_stored(session_id)
            target = await self.get_checkpoint(ckpt_id, session_id)
            stored = self._record_at(
                target, session_id=session_id, parent_id=record.parent_id, version=record.version
            )
            marker = self._marker(target)
            await self._astore.arestore_checkpoint(target, stored, marker)
            return marker.ckpt_id
        session = await self._manager.get_or_recover(session_id)
        target = await self.get_checkpoint(ckpt_id, session_id)
        return await self._restore_live(session, target)

    def _marker(self, target: CkptMeta) -> CkptMeta:
        return target.model_copy(
            update={
                "ckpt_id": new_id("ckpt"),
                "parent_ckpt_id": target.ckpt_id,
                "source": "rollback",
                "label": f"rollback to {target.ckpt_id}",
                "created_at": utcnow(),
            }
        )

    async def _restore_live(self, session: AgentSession, target: CkptMeta) -> str:
        session_id = session.session_id
        async with session.turn_lock:
            record = self._record_at(
                target, session_id=session_id, parent_id=session.parent_id, version=session.version
            )
            marker = self._marker(target)
            await self._astore.arestore_checkpoint(target, record, marker)
            await self._astore.arun(
                session.restore, record.model_copy(update={"version": record.version + 1})
            )
        self._emit("rollback", session_id, ckpt_id=marker.ckpt_id)
        return marker.ckpt_id

    @staticmethod
    def _record_at(
        meta: CkptMeta, *, session_id: str, parent_id: str | None, version: int = 0
    ) -> SessionRecord:
        return SessionRecord(
            version=version,
            session_id=session_id,
            agent_name=meta.agent_name,
            parent_id=parent_id,
            turn_index=meta.turn_index,
            current_slot_id=meta.current_slot_id,
            last_summary_turn=meta.last_summary_turn,
            spend=meta.spend,
        )

    async def fork(self, session_id: str, ckpt_id: str) -> str:
        """Start a child session from a checkpoint; the original branch is untouched.

        The child shares the stored history up to the checkpoint (nothing is copied), has the
        memory as it was then, and starts its own timeline with a ``fork`` checkpoint whose
        parent is ``ckpt_id``. Returns the child's session id.

        Raises:
            SessionNotFoundError, CheckpointNotFoundError, InvalidInputError: As for rollback.
        """
        await self._arequire_stored(session_id)
        source = await self.get_checkpoint(ckpt_id, session_id)
        child_id = new_id("ses")
        record = self._record_at(source, session_id=child_id, parent_id=session_id)
        record.created_at = utcnow()
        marker = source.model_copy(
            update={
                "ckpt_id": new_id("ckpt"),
                "session_id": child_id,
                "parent_ckpt_id": source.ckpt_id,
                "source": "fork",
                "label": f"fork of {session_id} at {source.ckpt_id}",
                "created_at": utcnow(),
            }
        )
        await self._astore.arestore_checkpoint(source, record, marker, create=True)  # the child
        if self._manager is not None:
            await self._manager.adopt(child_id, parent_id=session_id)
        self._emit("fork", session_id, ckpt_id=marker.ckpt_id, new_session_id=child_id)
        return child_id

    async def delete_all(self, session_id: str) -> int:
        """Delete every checkpoint of the session; return how many."""
        return await self._astore.adelete_checkpoints(session_id)

    async def prune(
        self,
        session_id: str | None = None,
        *,
        keep_last: int | None = None,
        older_than: timedelta | None = None,
    ) -> PruneReport:
        """Remove old checkpoints, keeping the newest ``keep_last`` per session and/or those
        newer than ``older_than``. A checkpoint a forked session starts from, or one that holds
        a pending tool call, is never removed.

        Returns:
            What was removed, what was kept because it is protected, and the bytes reclaimed
            (the size of the removed rows).
        """
        if keep_last is None and older_than is None:
            raise InvalidInputError("say what to prune: keep_last=N and/or older_than=timedelta")
        check_count(keep_last, "keep_last", minimum=0, optional=True)
        if older_than is not None and not isinstance(older_than, timedelta):
            raise InvalidInputError("older_than must be a datetime.timedelta")
        everything = await self._astore.alist_checkpoints(None)
        protected = {
            m.parent_ckpt_id for m in everything if m.source == "fork" and m.parent_ckpt_id
        } | {m.ckpt_id for m in everything if m.pending is not None}
        cutoff: datetime | None = utcnow() - older_than if older_than is not None else None
        removed: dict[str, list[str]] = {}
        kept_protected: list[str] = []
        rank: dict[str, int] = {}
        nbytes = 0
        for meta in everything:  # newest first
            if session_id is not None and meta.session_id != session_id:
                continue
            position = rank.get(meta.session_id, 0)
            rank[meta.session_id] = position + 1
            old_enough = keep_last is None or position >= keep_last
            too_old = cutoff is None or meta.created_at < cutoff
            if not (old_enough and too_old):
                continue
            if meta.ckpt_id in protected:
                kept_protected.append(meta.ckpt_id)
                continue
            removed.setdefault(meta.session_id, []).append(meta.ckpt_id)
            nbytes += len(meta.model_dump_json())
        for sid, ids in removed.items():
            await self._astore.adelete_checkpoints(sid, ids)
        return PruneReport(
            removed=[i for ids in removed.values() for i in ids],
            kept_protected=kept_protected,
            bytes_reclaimed=nbytes,
        )

    # -- export / import --------------------------------------------------------------------

    async def export_snapshot(self, ckpt_id: str) -> SessionSnapshot:
        """The checkpoint's state as a self-contained, versioned :class:`SessionSnapshot`."""
        return await export_snapshot(self._astore, await self.get_checkpoint(ckpt_id))

    async def import_snapshot(
        self, snapshot: SessionSnapshot | dict[str, object] | str | bytes
    ) -> str:
        """Create a new session from a snapshot; return its id.

        Raises:
            UnprocessableError: Wrong version, invalid fields or dangling references; nothing
                is written then.
        """
        snap = SessionSnapshot.parse(snapshot)  # validates fully before any write
        session_id = await import_snapshot(self._astore, snap)
        self._emit("created", session_id)
        return session_id

    # -- sync twins -------------------------------------------------------------------------

    def checkpoint_sync(self, session: AgentSession, label: str | None = None) -> str:
        """Blocking twin of :meth:`checkpoint`."""
        return run_sync(self.checkpoint(session, label))

    def list_checkpoints_sync(
        self, session_id: str, *, limit: int | None = None, before: str | int | None = None
    ) -> list[CkptMeta]:
        """Blocking twin of :meth:`list_checkpoints`."""
        return run_sync(self.list_checkpoints(session_id, limit=limit, before=before))

    def get_checkpoint_sync(self, ckpt_id: str, session_id: str | None = None) -> CkptMeta:
        """Blocking twin of :meth:`get_checkpoint`."""
        return run_sync(self.get_checkpoint(ckpt_id, session_id))

    def preview_sync(self, ckpt_id: str) -> CheckpointPreview:
        """Blocking twin of :meth:`preview`."""
        return run_sync(self.preview(ckpt_id))

    def rollback_sync(self, session_id: str, ckpt_id: str) -> str:
        """Blocking twin of :meth:`rollback`."""
        return run_sync(self.rollback(session_id, ckpt_id))

    def fork_sync(self, session_id: str, ckpt_id: str) -> str:
        """Blocking twin of :meth:`fork`."""
        return run_sync(self.fork(session_id, ckpt_id))

    def delete_all_sync(self, session_id: str) -> int:
        """Blocking twin of :meth:`delete_all`."""
        return run_sync(self.delete_all(session_id))

    def prune_sync(
        self,
        session_id: str | None = None,
        *,
        keep_last: int | None = None,
        older_than: timedelta | None = None,
    ) -> PruneReport:
        """Blocking twin of :meth:`prune`."""
        return run_sync(self.prune(session_id, keep_last=keep_last, older_than=older_than))

    def export_snapshot_sync(self, ckpt_id: str) -> SessionSnapshot:
        """Blocking twin of :meth:`export_snapshot`."""
        return run_sync(self.export_snapshot(ckpt_id))

    def import_snapshot_sync(
        self, snapshot: SessionSnapshot | dict[str, object] | str | bytes
    ) -> str:
        """Blocking twin of :meth:`import_snapshot`."""
        return run_sync(self.import_snapshot(snapshot))

"""A session built from a :class:`~agcore_lab.agent.snapshot.SessionSnapshot`, and back.

The design's four-step rollback: ``snapshot = await checkpointer.rollback_load(sid, ckpt)``
(a read), ``session = AgentSession.from_snapshot(snapshot, agent, bundle)`` (pure: no I/O),
``await session.restore_memory()`` (idempotent), ``await manager.replace(sid, session)`` (the
one write of slots and scalars, version-checked). The functions here do the pure and the
memory parts; ``AgentSession`` exposes them as methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar, cast

from agcore_lab.agent.memory import SessionMemory
from agcore_lab.agent.slots import ContextSlot, MergeStrategy, SlotMode
from agcore_lab.agent.snapshot import SessionSnapshot, SnapshotMemoryEntry, SnapshotSlot
from agcore_lab.aio import CrossLoopLock, run_sync
from agcore_lab.errors import UnprocessableError
from agcore_lab.ids import utcnow
from agcore_lab.llm.history import MessageHistory
from agcore_lab.llm.messages import Message
from agcore_lab.llm.usage import CostTracker

if TYPE_CHECKING:
    from agcore_lab.agent.agent import Agent
    from agcore_lab.agent.bundle import RuntimeBundle
    from agcore_lab.agent.session import AgentSession

__all__ = ["SnapshotOperations", "build_from_snapshot", "memory_writes", "snapshot_of"]

S = TypeVar("S", bound="AgentSession")


def build_from_snapshot(
    cls: type[S], snapshot: SessionSnapshot, agent: Agent, bundle: RuntimeBundle
) -> S:
    """A live session object holding ``snapshot``'s state, detached from the store until
    ``manager.replace`` writes it. Pure: it reads and writes nothing."""
    snapshot = SessionSnapshot.parse(snapshot)  # a model: its references are checked here
    by_id: dict[str, Message] = {m.id: m for m in snapshot.messages}
    self = cls.__new__(cls)
    self.agent, self.bundle, self.hooks = agent, bundle, []
    self._lock = CrossLoopLock()
    self._holder = None
    self.session_id = snapshot.session_id
    self.parent_id = snapshot.parent_id
    self.created_at = utcnow()
    self.turn_index = snapshot.turn_index
    self.last_summary_turn = snapshot.last_summary_turn
    self.cost_tracker = CostTracker(prices=bundle.prices, by_model=dict(snapshot.spend))
    self.slots = {s.slot_id: _slot(s, by_id) for s in snapshot.slots}
    self.current_slot_id = snapshot.current_slot_id
    self.metadata = {}
    self.version = snapshot.session_version or 0
    self.pending_interrupt_id = None
    self.session_memory = SessionMemory.deferred(bundle.store, snapshot.session_id)
    self.detached = snapshot
    return self


def _slot(slot: SnapshotSlot, by_id: dict[str, Message]) -> ContextSlot:
    return ContextSlot(
        slot_id=slot.slot_id,
        messages=MessageHistory([by_id[i] for i in slot.message_ids]),
        mode=SlotMode(slot.mode),
        summary_override=slot.summary_override,
        pinned_ids=list(slot.pinned_ids),
        recent_window=slot.recent_window,
        parent_slot_id=slot.parent_slot_id,
        fork_point=slot.fork_point,
        merge_base=slot.merge_base,
        merge_strategy=MergeStrategy(slot.merge_strategy) if slot.merge_strategy else None,
    )


def memory_writes(session: AgentSession, entries: list[SnapshotMemoryEntry]) -> int:
    """Make the session's stored memory hold exactly ``entries`` (value and metadata per key);
    return how many writes that took — 0 when it already does."""
    store, sid = session.store, session.session_id
    wanted = {e.key: e for e in entries}
    current = {e.key: e for e in store.memory_entries(sid)}
    writes = 0
    for key in sorted(set(wanted) | set(current)):
        want, have = wanted.get(key), current.get(key)
        if want is None:
            store.memory_delete(sid, key)
        elif have is None or (have.value, have.metadata) != (want.value, want.metadata):
            store.memory_set(sid, key, want.value, dict(want.metadata))
        else:
            continue
        writes += 1
    if writes:
        session.session_memory.refresh()
    return writes


def snapshot_of(session: AgentSession) -> SessionSnapshot:
    """The session's live state (its memory read from the store) as a snapshot."""
    messages: dict[str, Message] = {}
    slots: list[SnapshotSlot] = []
    for slot in session.slots.values():
        for message in slot.messages:
            messages.setdefault(message.id, message)
        slots.append(
            SnapshotSlot(
                slot_id=slot.slot_id,
                parent_slot_id=slot.parent_slot_id,
                fork_point=slot.fork_point,
                merge_base=slot.merge_base,
                mode=slot.mode.value,
                summary_override=slot.summary_override,
                pinned_ids=list(slot.pinned_ids),
                recent_window=slot.recent_window,
                merge_strategy=slot.merge_strategy.value if slot.merge_strategy else None,
                message_ids=[m.id for m in slot.messages],
            )
        )
    memory = [
        SnapshotMemoryEntry(**e.model_dump(exclude={"version"}))
        for e in session.store.memory_entries(session.session_id)
    ]
    detached = session.detached
    try:
        return SessionSnapshot(
            session_id=session.session_id,
            agent_name=session.agent.name,
            parent_id=session.parent_id,
            turn_index=session.turn_index,
            current_slot_id=session.current_slot_id,
            last_summary_turn=session.last_summary_turn,
            spend=dict(session.cost_tracker.by_model),
            slots=slots,
            messages=list(messages.values()),
            memory=memory,
            ckpt_id=detached.ckpt_id if detached is not None else None,
            session_version=session.version,
            extra=dict(detached.extra) if detached is not None else {},
        )
    except ValueError as exc:  # an agent name a snapshot cannot hold
        raise UnprocessableError(
            f"this session cannot be written as a snapshot: {exc}", session_id=session.session_id
        ) from exc


class SnapshotOperations:
    """Build a session from a snapshot and back (mixed into ``AgentSession``)."""

    detached: SessionSnapshot | None
    _lock: CrossLoopLock

    @classmethod
    def from_snapshot(
        cls, snapshot: SessionSnapshot, agent: Agent, bundle: RuntimeBundle
    ) -> AgentSession:
        """A session object holding ``snapshot``'s state — pure and synchronous: it reads and
        writes nothing.

        The object is *detached* (``session.detached`` is the snapshot) until
        ``await manager.replace(session_id, session)`` writes its state; until then it runs no
        turn and changes nothing stored. See :meth:`Checkpointer.rollback_load` for the whole
        four-step flow.

        Example:
            >>> from agcore_lab import Agent, AgentSession, ScriptedModel, SessionManager
            >>> manager = SessionManager()
            >>> agent = Agent(name="a", model=ScriptedModel())
            >>> sid = manager.create_sync(agent)
            >>> ckpt = manager.checkpointer.list_checkpoints_sync(sid)[0].ckpt_id
            >>> snap = manager.checkpointer.rollback_load_sync(sid, ckpt)
            >>> session = AgentSession.from_snapshot(snap, agent, manager.bundle)
            >>> session.restore_memory_sync(), session.restore_memory_sync()
            (0, 0)
            >>> manager.replace_sync(sid, session)
            >>> session.detached is None
            True
        """
        return build_from_snapshot(cast("type[AgentSession]", cls), snapshot, agent, bundle)

    async def restore_memory(self) -> int:
        """Make the stored session memory equal the memory of the snapshot this session was
        built from (``from_snapshot``); return the number of writes. Idempotent: a second
        call writes nothing. On a session not built from a snapshot it writes nothing.
        """
        if self.detached is None:
            return 0
        async with self._lock:
            return memory_writes(cast("AgentSession", self), self.detached.memory)

    async def to_snapshot(self) -> SessionSnapshot:
        """The session's current state as a :class:`SessionSnapshot` (memory read from the
        store; ``session_version`` is this object's version)."""
        async with self._lock:
            return snapshot_of(cast("AgentSession", self))

    def restore_memory_sync(self) -> int:
        """Blocking twin of :meth:`restore_memory`."""
        return run_sync(self.restore_memory())

    def to_snapshot_sync(self) -> SessionSnapshot:
        """Blocking twin of :meth:`to_snapshot`."""
        return run_sync(self.to_snapshot())

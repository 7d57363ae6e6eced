"""Keeping a live :class:`~agcore_lab.agent.session.AgentSession` equal to the store: building
it from a stored record, noticing that another writer moved the session on, and reloading.

The live object is a cache of the stored session (see docs/sharing.md): every turn compares
its version with the stored one and reloads first when they differ; ``refresh()`` does it on
request and ``refresh_nowait()`` for a manager's watcher thread.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from agcore_lab.agent.chain_reuse import load_slots
from agcore_lab.agent.memory import SessionMemory
from agcore_lab.agent.session_views import MAIN_SLOT
from agcore_lab.agent.slots import ContextSlot
from agcore_lab.aio import CrossLoopLock, run_sync
from agcore_lab.errors import SessionNotFoundError
from agcore_lab.llm.messages import AssistantMessage, ToolMessage
from agcore_lab.llm.usage import CostTracker
from agcore_lab.store.base import SessionRecord

if TYPE_CHECKING:
    from datetime import datetime

    from pydantic import JsonValue

    from agcore_lab.agent.bundle import RuntimeBundle
    from agcore_lab.agent.snapshot import SessionSnapshot
    from agcore_lab.store.aio import AsyncStore
    from agcore_lab.store.base import Store

__all__ = ["SessionLoading"]

logger = logging.getLogger("agcore_lab")


class SessionLoading:
    """Loading and reloading of ``AgentSession`` (it inherits this)."""

    bundle: RuntimeBundle
    session_id: str
    parent_id: str | None
    created_at: datetime
    turn_index: int
    last_summary_turn: int | None
    cost_tracker: CostTracker
    slots: dict[str, ContextSlot]
    current_slot_id: str
    metadata: dict[str, JsonValue]
    version: int
    detached: SessionSnapshot | None
    session_memory: SessionMemory
    pending_interrupt_id: str | None
    _lock: CrossLoopLock

    if TYPE_CHECKING:

        @property
        def store(self) -> Store: ...

        @property
        def astore(self) -> AsyncStore: ...

        @property
        def current_slot(self) -> ContextSlot: ...

    def restore(self, record: SessionRecord, *, reuse: Iterable[ContextSlot] = ()) -> None:
        """Set this session's state from a stored record and its slots (used by load,
        refresh and rollback).

        The messages this object holds already — and those of ``reuse``, live slots of
        another session (a fork's parent) — are shared wherever the stored chains pass
        through them; only the rest is read (see :mod:`agcore_lab.agent.chain_reuse`).
        """
        store = self.bundle.store
        held = list(getattr(self, "slots", {}).values())
        slots = load_slots(store, record.session_id, [*held, *reuse])
        self.session_id = record.session_id
        self.parent_id = record.parent_id
        self.created_at = record.created_at
        self.turn_index = record.turn_index
        self.last_summary_turn = record.last_summary_turn
        self.cost_tracker = CostTracker(prices=self.bundle.prices, by_model=record.spend)
        self.slots = slots or {MAIN_SLOT: ContextSlot(MAIN_SLOT)}
        self.current_slot_id = record.current_slot_id
        self.metadata = dict(record.metadata)
        self.version = record.version
        self.session_memory = SessionMemory(store, self.session_id)
        self.pending_interrupt_id = self._unanswered_interrupt()
        self.detached = None

    async def refresh(self) -> bool:
        """Reload this live session from the store if another writer moved it on.

        Waits for a running turn of this object to finish first. Returns whether anything
        was reloaded.

        Raises:
            SessionNotFoundError: The session was destroyed (by another writer).
        """
        async with self._lock:
            return await self._areload_if_stale()

    def refresh_nowait(self) -> bool:
        """Reload now if the store moved on and no turn of this object is running; never
        waits (for a manager's watcher thread). Returns whether anything was reloaded."""
        if not self._lock.try_acquire():
            return False
        try:
            return self._reload_if_stale()
        finally:
            self._lock.release()

    def is_stale(self) -> bool:
        """Whether the store holds a newer version of this session than this object (one
        indexed read). A destroyed session is stale too."""
        return self.store.session_version(self.session_id) != self.version

    def _reload_if_stale(self, stored: int | None = None) -> bool:
        if stored is None:
            stored = self.store.session_version(self.session_id)
        if stored == self.version:
            return False
        record = self.store.get_session(self.session_id)
        if record is None:
            raise SessionNotFoundError(
                "the session was destroyed (by another writer); it cannot be refreshed",
                session_id=self.session_id,
            )
        logger.debug("session %s: reloading version %d", self.session_id, record.version)
        self.restore(record)
        return True

    async def _areload_if_stale(self, stored: int | None = None) -> bool:
        # _reload_if_stale, awaited through the async store (the sync ``restore`` that reads
        # the slots and chains runs where the adapter runs store calls).
        if stored is None:
            stored = await self.astore.asession_version(self.session_id)
        if stored == self.version:
            return False
        record = await self.astore.aget_session(self.session_id)
        if record is None:
            raise SessionNotFoundError(
                "the session was destroyed (by another writer); it cannot be refreshed",
                session_id=self.session_id,
            )
        logger.debug("session %s: reloading version %d", self.session_id, record.version)
        await self.astore.arun(self.restore, record)  # its reads off the loop on PostgreSQL
        return True

    def _unanswered_interrupt(self) -> str | None:
        # The latest call that stopped a turn and has no tool answer in the history yet. It
        # must be asked in the history: after a rollback to before the call, an expired
        # record of it is not answered (an answer to a call never made is invalid history).
        calls = [
            c
            for c in self.store.list_pending(self.session_id, include_resolved=True)
            if c.status != "REJECTED"
        ]
        if not calls:  # the common case: no need to look through the history
            return None
        # Tool results and calls are never in a history's plain columns: look at its objects.
        answered = {
            m.tool_call_id
            for m in self.current_slot.messages.objects()
            if isinstance(m, ToolMessage)
        }
        asked = {
            call.id
            for slot in self.slots.values()
            for m in slot.messages.objects()
            if isinstance(m, AssistantMessage)
            for call in m.tool_calls
        }
        waiting = [c for c in calls if c.tool_call_id in asked and c.tool_call_id not in answered]
        return waiting[-1].interrupt_id if waiting else None

    def refresh_sync(self) -> bool:
        """Blocking twin of :meth:`refresh`."""
        return run_sync(self.refresh())

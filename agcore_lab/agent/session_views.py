"""Read-only views of an :class:`~agcore_lab.agent.session.AgentSession`: the current slot, its
messages, cost and usage, lookups, and the text and HTML representations.

Kept apart from the writes; nothing here changes the session or the store.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from agcore_lab.errors import SlotNotFoundError
from agcore_lab.llm.usage import format_cost

if TYPE_CHECKING:
    from agcore_lab.agent.agent import Agent
    from agcore_lab.agent.bundle import RuntimeBundle
    from agcore_lab.agent.memory import SessionMemory
    from agcore_lab.agent.slots import ContextSlot
    from agcore_lab.llm.messages import Message
    from agcore_lab.llm.usage import CostTracker, Usage
    from agcore_lab.store.aio import AsyncStore
    from agcore_lab.store.base import Store

__all__ = ["MAIN_SLOT", "SUMMARY_KEY", "SessionViews"]

MAIN_SLOT = "main"
SUMMARY_KEY = "conversation_summary"


class SessionViews:
    """What a session shows (``AgentSession`` inherits it)."""

    session_id: str
    agent: Agent
    bundle: RuntimeBundle
    slots: dict[str, ContextSlot]
    current_slot_id: str
    cost_tracker: CostTracker
    session_memory: SessionMemory
    turn_index: int

    @property
    def store(self) -> Store:
        """The store this session is kept in."""
        return self.bundle.store

    @property
    def astore(self) -> AsyncStore:
        """The async seam over :attr:`store` that the session's coroutines await."""
        return self.bundle.astore

    @property
    def current_slot(self) -> ContextSlot:
        """The slot turns go to."""
        return self.slots[self.current_slot_id]

    @property
    def messages(self) -> list[Message]:
        """The current slot's messages (a copy)."""
        return list(self.current_slot.messages)

    @property
    def cost_so_far(self) -> float:
        """USD spent in this session so far."""
        return self.cost_tracker.total_cost

    @property
    def usage(self) -> Usage:
        """Tokens used in this session so far."""
        return self.cost_tracker.usage

    def get_conversation_summary(self) -> str | None:
        """The latest automatic summary, or ``None`` if none was written."""
        value = self.session_memory.get(SUMMARY_KEY)
        return value if isinstance(value, str) else None

    def slot(self, slot_id: str) -> ContextSlot:
        """The slot named ``slot_id``.

        Raises:
            SlotNotFoundError: No such slot (the message lists the slots that exist).
        """
        try:
            return self.slots[slot_id]
        except KeyError:
            known = ", ".join(sorted(self.slots))
            raise SlotNotFoundError(
                f"no slot {slot_id!r} in this session; slots: {known}",
                session_id=self.session_id,
                slot_id=slot_id,
            ) from None

    def __repr__(self) -> str:
        return (
            f"AgentSession({self.session_id!r}, agent={self.agent.name!r}, "
            f"turns={self.turn_index}, slot={self.current_slot_id!r}, "
            f"messages={len(self.current_slot.messages)}, cost=${self.cost_so_far:.6f})"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{'&#9654; ' if sid == self.current_slot_id else ''}{html.escape(sid)}</td>"
            f"<td>{len(s.messages)}</td><td>{s.mode.value}</td>"
            f"<td>{html.escape(s.parent_slot_id or '')}</td></tr>"
            for sid, s in self.slots.items()
        )
        return (
            f"<div><b>AgentSession</b> <code>{html.escape(self.session_id)}</code> &middot; "
            f"agent <b>{html.escape(self.agent.name)}</b> &middot; {self.turn_index} "
            f"turn{'' if self.turn_index == 1 else 's'} "
            f"&middot; {format_cost(self.cost_so_far)}<table><tr><th>slot</th><th>messages</th>"
            f"<th>mode</th><th>forked from</th></tr>{rows}</table></div>"
        )

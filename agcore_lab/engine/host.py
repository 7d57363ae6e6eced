"""What the manager's components (checkpointer, approvals, dispatcher) may ask of it.

Each component gets its host at construction and uses only this protocol — never the
manager's private state — so the components can be read, tested and replaced on their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pydantic import JsonValue

    from agcore_lab.agent.agent import Agent
    from agcore_lab.agent.bundle import RuntimeBundle
    from agcore_lab.agent.session import AgentSession
    from agcore_lab.engine.records import EventKind
    from agcore_lab.store.aio import AsyncStore
    from agcore_lab.store.base import SessionRecord, Store

__all__ = ["ManagerHost"]


class ManagerHost(Protocol):
    """The part of :class:`~agcore_lab.engine.manager.SessionManager` its components use."""

    @property
    def store(self) -> Store:
        """Where the sessions live."""
        ...

    @property
    def astore(self) -> AsyncStore:
        """The async seam over :attr:`store` (what the components await)."""
        ...

    @property
    def bundle(self) -> RuntimeBundle:
        """Services shared by the sessions."""
        ...

    def emit(self, kind: EventKind, session_id: str, **fields: Any) -> None:
        """Tell the listeners about a change."""
        ...

    def require_stored(self, session_id: str) -> SessionRecord:
        """The stored record, or ``SessionNotFoundError``."""
        ...

    async def arequire_stored(self, session_id: str) -> SessionRecord:
        """:meth:`require_stored`, read through :attr:`astore`."""
        ...

    def live(self, session_id: str) -> AgentSession | None:
        """The live session, if this manager holds it."""
        ...

    async def get_or_recover(self, session_id: str) -> AgentSession:
        """The live session, recovering it from the store when needed."""
        ...

    async def adopt(self, session_id: str, *, parent_id: str | None = None) -> AgentSession:
        """Load a stored session (as stored, recording nothing) and make it live."""
        ...

    async def create_child(
        self,
        parent_id: str,
        agent: Agent,
        *,
        defer_checkpoint: bool = False,
        metadata: dict[str, JsonValue] | None = None,
    ) -> str:
        """Create a child session of ``parent_id`` (``defer_checkpoint``: no automatic
        checkpoint until ``finalize_child``; ``metadata``: stored with it)."""
        ...

    async def create_children(
        self,
        parent_id: str,
        agents: Sequence[Agent],
        *,
        metadata: Sequence[dict[str, JsonValue] | None] | None = None,
        reserve: bool = False,
    ) -> list[str]:
        """Create many children of ``parent_id`` in one write (``reserve``: their first
        turns' leases taken in it too)."""
        ...

    async def finalize_child(self, session: AgentSession) -> str | None:
        """Write the one checkpoint of a child created with ``defer_checkpoint``."""
        ...

"""Small read helpers the views share over :class:`~agcore_lab.SessionManager`'s public API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agcore_lab.errors import InvalidInputError, SessionNotFoundError

if TYPE_CHECKING:
    from agcore_lab.agent.agent import Agent
    from agcore_lab.agent.session import AgentSession
    from agcore_lab.engine.manager import SessionManager

__all__ = ["agent_named", "live_session", "registered_agents", "stored_memory"]


def registered_agents(manager: SessionManager) -> dict[str, Agent]:
    """The manager's registered agents by name."""
    return dict(manager.agents)


def agent_named(manager: SessionManager, name: str) -> Agent:
    """The registered agent called ``name``.

    Raises:
        InvalidInputError: No agent of that name is registered.
    """
    agents = registered_agents(manager)
    if name not in agents:
        known = ", ".join(sorted(agents)) or "none"
        raise InvalidInputError(f"no registered agent {name!r}; registered: {known}")
    return agents[name]


async def live_session(manager: SessionManager, session_id: str) -> AgentSession | None:
    """The live session, or ``None`` when the manager holds none of that id."""
    try:
        return await manager.get(session_id)
    except SessionNotFoundError:
        return None


def stored_memory(manager: SessionManager, session_id: str) -> dict[str, Any]:
    """A stored session's memory read from the store (the session is not loaded)."""
    return {e.key: e.value for e in manager.store.memory_entries(session_id)}

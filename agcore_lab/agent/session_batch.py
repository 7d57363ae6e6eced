"""Many new sessions in one store write: the children of one dispatch.

:func:`create_sessions` builds each :class:`~agcore_lab.agent.session.AgentSession` as its
constructor would, then stores them all — rows, first slots, first checkpoints — in one
transaction (``Store.create_sessions``), instead of one write each. With ``reserve`` the same
write takes every new session's turn lease for this process, so each one's first turn starts
without a write of its own (while at least half the lease's lifetime is left; later it takes
the lease as usual). A write to such a session outside a turn gives the reservation up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from pydantic import JsonValue

from agcore_lab.agent.agent import Agent
from agcore_lab.agent.bundle import RuntimeBundle
from agcore_lab.agent.lease import new_holder
from agcore_lab.agent.session import AgentSession
from agcore_lab.agent.session_views import MAIN_SLOT
from agcore_lab.ids import utcnow
from agcore_lab.store.base import CkptMeta
from agcore_lab.store.roles.sessions import NewSession

__all__ = ["create_sessions"]


async def create_sessions(
    agents: Sequence[tuple[Agent, dict[str, JsonValue] | None]],
    *,
    bundle: RuntimeBundle,
    parent_id: str | None = None,
    first_checkpoint: Callable[[AgentSession], CkptMeta] | None = None,
    reserve: bool = False,
) -> list[AgentSession]:
    """New sessions, one per ``(agent, metadata)``, stored in one write.

    Args:
        agents: Each session's agent and first metadata values.
        bundle: The services they share (its store is written).
        parent_id: Their parent session.
        first_checkpoint: Makes each session's first checkpoint, stored in the same write.
        reserve: Take each session's turn lease for this process in the same write.

    Raises:
        ConflictError: An id is taken; nothing is written.

    Example:
        >>> import asyncio
        >>> from agcore_lab import Agent, ScriptedModel, SqliteStore
        >>> bundle = RuntimeBundle(store=SqliteStore(":memory:"))
        >>> pair = [(Agent(name="w", model=ScriptedModel()), None)] * 2
        >>> made = asyncio.run(create_sessions(pair, bundle=bundle))
        >>> len(bundle.store.list_sessions())
        2
    """
    sessions: list[AgentSession] = []
    rows: list[NewSession] = []
    made_at = utcnow()
    for agent, metadata in agents:
        session = AgentSession.__new__(AgentSession)
        session._init_new(agent, bundle, None, parent_id, metadata)
        # Made in one write, so made at one time: their first slots then have one state,
        # stored once (``slot_states`` is content-addressed), not one row and name per child.
        session.slots[MAIN_SLOT].created_at = made_at
        sessions.append(session)
        rows.append(
            NewSession(
                session._record(now=made_at),  # (their rows' update times: formatted once)
                [session.slots[MAIN_SLOT].to_record(session.session_id, updated_at=made_at)],
                first_checkpoint(session) if first_checkpoint is not None else None,
            )
        )
    holder = new_holder() if reserve else None
    ttl = bundle.lease_seconds
    until = time.monotonic() + ttl
    await bundle.astore.acreate_sessions(rows, lease_holder=holder, ttl=ttl)
    if holder is not None:
        for session in sessions:
            session._reserved = (holder, until)
    return sessions

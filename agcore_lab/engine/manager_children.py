"""Children of a :class:`~agcore_lab.engine.manager.SessionManager`'s sessions: create one or
many in one write, and finalize a deferred child (a mixin; they are the manager's methods)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pydantic import JsonValue

from agcore_lab.agent.agent import Agent
from agcore_lab.agent.session import AgentSession
from agcore_lab.agent.session_batch import create_sessions
from agcore_lab.aio import run_sync
from agcore_lab.errors import InvalidInputError, SessionNotFoundError
from agcore_lab.store.base import CkptMeta

if TYPE_CHECKING:
    from agcore_lab.agent.bundle import RuntimeBundle
    from agcore_lab.engine.checkpointer import Checkpointer
    from agcore_lab.engine.records import EventKind
    from agcore_lab.store.aio import AsyncStore

__all__ = ["ChildOperations", "check_session_id"]


def check_session_id(session_id: object) -> None:
    """Refuse a session id that is not a string (an ``InvalidInputError`` naming its type)."""
    if not isinstance(session_id, str):
        raise InvalidInputError(
            f"a session id is a string (such as 'ses_1hv8...'), got {type(session_id).__name__}"
        )


class ChildOperations:
    """Creating children of a session (mixed into ``SessionManager``)."""

    if TYPE_CHECKING:
        auto_checkpoint: bool
        bundle: RuntimeBundle
        checkpointer: Checkpointer
        _live: dict[str, AgentSession]
        _map_lock: threading.Lock
        _deferred: set[str]

        @property
        def astore(self) -> AsyncStore: ...

        def _attach(self, session: AgentSession) -> AgentSession: ...

        def emit(self, kind: EventKind, session_id: str, **fields: object) -> None: ...

    def _first_checkpoint(self, made: list[CkptMeta]) -> Callable[[AgentSession], CkptMeta]:
        # The "start" checkpoint, stored with the session in its creating write.
        def make(session: AgentSession) -> CkptMeta:
            made.append(self.checkpointer.first_meta(session))
            return made[-1]

        return make

    async def create_child(
        self,
        parent_id: str,
        agent: Agent,
        *,
        defer_checkpoint: bool = False,
        metadata: dict[str, JsonValue] | None = None,
    ) -> str:
        """Create a child of ``parent_id`` sharing the parent's bundle.

        Args:
            parent_id: The parent session.
            agent: The child's agent.
            defer_checkpoint: Write no automatic checkpoint (neither at creation nor after
                its turns) until :meth:`finalize_child` writes the child's one checkpoint
                (``dispatch_stream`` children).
            metadata: The child's first metadata values, stored with it.

        Raises:
            SessionNotFoundError: No such parent.
        """
        check_session_id(parent_id)
        if await self.astore.asession_version(parent_id) is None:  # one indexed read
            raise SessionNotFoundError("no such session in the store", session_id=parent_id)
        parent = self._live.get(parent_id)
        bundle = parent.bundle if parent is not None else self.bundle
        made: list[CkptMeta] = []
        wanted = self.auto_checkpoint and not defer_checkpoint
        first = self._first_checkpoint(made) if wanted else None
        session = AgentSession(
            agent, bundle=bundle, parent_id=parent_id, metadata=metadata, first_checkpoint=first
        )
        if defer_checkpoint:
            with self._map_lock:
                self._deferred.add(session.session_id)
        self._attach(session)
        self.emit("created", session.session_id)
        for meta in made:
            self.checkpointer.announce(meta)
        return session.session_id

    async def create_children(
        self,
        parent_id: str,
        agents: Sequence[Agent],
        *,
        metadata: Sequence[dict[str, JsonValue] | None] | None = None,
        reserve: bool = False,
    ) -> list[str]:
        """Create many children of ``parent_id`` in one store write, each as
        :meth:`create_child` would (with its ``start`` checkpoint); return their ids in order.

        Args:
            parent_id: The parent session.
            agents: One child per agent.
            metadata: Each child's first metadata values (as many as ``agents``).
            reserve: Take each child's turn lease for this process in the same write, so its
                first turn (started within half of ``bundle.lease_seconds``) needs no write
                of its own; any other write to the child gives the reservation up. Other
                writers are refused (``SessionBusyError``) meanwhile, as during a turn.

        Raises:
            SessionNotFoundError: No such parent.
            InvalidInputError: ``metadata`` does not match ``agents``.

        Example:
            >>> from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
            >>> manager = SessionManager(SqliteStore(":memory:"))
            >>> lead = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
            >>> worker = Agent(name="w", model=ScriptedModel())
            >>> kids = manager.create_children_sync(lead, [worker, worker, worker])
            >>> manager.children_sync(lead) == kids
            True
        """
        check_session_id(parent_id)
        extras = list(metadata) if metadata is not None else [None] * len(agents)
        if len(extras) != len(agents):
            raise InvalidInputError(
                f"{len(extras)} metadata values for {len(agents)} agents; give one per agent",
                session_id=parent_id,
            )
        if await self.astore.asession_version(parent_id) is None:  # one indexed read
            raise SessionNotFoundError("no such session in the store", session_id=parent_id)
        parent = self._live.get(parent_id)
        made: list[CkptMeta] = []
        sessions = await create_sessions(
            list(zip(agents, extras, strict=True)),
            bundle=parent.bundle if parent is not None else self.bundle,
            parent_id=parent_id,
            first_checkpoint=self._first_checkpoint(made) if self.auto_checkpoint else None,
            reserve=reserve,
        )
        for session in sessions:
            self._attach(session)
            self.emit("created", session.session_id)
        for meta in made:
            self.checkpointer.announce(meta)
        return [session.session_id for session in sessions]

    async def finalize_child(self, session: AgentSession) -> str | None:
        """Write the one automatic checkpoint of a child created with ``defer_checkpoint``
        (label ``finalize``) and checkpoint its later turns as usual again. Returns the
        checkpoint id (``None`` when ``auto_checkpoint`` is off or it was finalized already)."""
        with self._map_lock:
            if session.session_id not in self._deferred:
                return None
            self._deferred.discard(session.session_id)
        if not self.auto_checkpoint:
            return None
        return await self.checkpointer.checkpoint(session, "finalize", source="auto")

    # -- sync twins -------------------------------------------------------------------------

    def create_child_sync(self, parent_id: str, agent: Agent) -> str:
        """Blocking twin of :meth:`create_child`."""
        return run_sync(self.create_child(parent_id, agent))

    def create_children_sync(
        self,
        parent_id: str,
        agents: Sequence[Agent],
        *,
        metadata: Sequence[dict[str, JsonValue] | None] | None = None,
    ) -> list[str]:
        """Blocking twin of :meth:`create_children` (without ``reserve``: a reservation is
        for a turn that starts at once)."""
        return run_sync(self.create_children(parent_id, agents, metadata=metadata))

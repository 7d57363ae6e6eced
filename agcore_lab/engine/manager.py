"""``SessionManager``: a tree of parent/child sessions that outlive the Python objects.

Sessions live in the store; the manager holds the *live* ones (``AgentSession`` objects) in a
map, rebuilds others on demand (``recover``, e.g. after a kernel restart), and writes an
automatic checkpoint after every finished turn. The map is guarded by a plain lock around map
operations only — never across I/O — and each session has its own turn lock, so many sessions
run turns concurrently.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from agcore_lab.agent.agent import Agent
from agcore_lab.agent.bundle import RuntimeBundle
from agcore_lab.agent.events import TurnEvent, TurnResult
from agcore_lab.agent.session import AgentSession
from agcore_lab.agent.turn_commit import TurnCheckpoint
from agcore_lab.aio import iterate_sync, run_sync
from agcore_lab.engine.approvals import Approvals
from agcore_lab.engine.call_ops import CallOperations
from agcore_lab.engine.checkpointer import Checkpointer
from agcore_lab.engine.dispatch import Dispatcher
from agcore_lab.engine.events import EventHub
from agcore_lab.engine.manager_api import ManagerFacades
from agcore_lab.engine.manager_children import ChildOperations, check_session_id
from agcore_lab.engine.manager_config import SessionManagerConfig
from agcore_lab.engine.manager_tree import TreeOperations
from agcore_lab.engine.records import EventKind, ManagerEvent
from agcore_lab.engine.watch import ChangeWatcher
from agcore_lab.errors import (
    AgentNotFoundError,
    ConfigurationError,
    InvalidInputError,
    SessionBusyError,
    SessionNotFoundError,
    StaleSessionError,
)
from agcore_lab.store.aio import AsyncStore
from agcore_lab.store.base import ChangeRecord, CkptMeta, SessionRecord, Store
from agcore_lab.store.pending import PendingToolCall

if TYPE_CHECKING:
    pass

__all__ = ["AgentNotFoundError", "SessionManager"]

logger = logging.getLogger("agcore_lab")


class SessionManager(ManagerFacades, CallOperations, TreeOperations, ChildOperations):
    """Creates, finds, recovers and destroys sessions, and keeps them in a tree.

    Args:
        store: Where sessions live (shortcut for ``bundle=RuntimeBundle(store=store)``).
        bundle: Services shared by the sessions; an in-memory store by default.
        agents: Agents to register, so sessions can be recovered by agent name.
        auto_checkpoint: Write a checkpoint after every finished turn (and at creation);
            ``True`` unless ``config`` says otherwise.
        config: The same settings as one :class:`SessionManagerConfig` (``auto_checkpoint``,
            ``default_bundle``, which stands for ``bundle=``); a keyword given beside it must
            agree with it.
        watch_interval: Seconds between two looks for changes made by other processes (or
            other store objects) on the same store, while anyone listens (``add_listener``);
            ``None`` turns watching off.

    Components: ``checkpointer`` (time travel), ``approvals`` (pending tool calls) and
    ``dispatcher`` (sub-agents); the manager's methods of the same names call them.

    Example:
        >>> from agcore_lab import Agent, ScriptedModel, SqliteStore
        >>> manager = SessionManager(SqliteStore(":memory:"))
        >>> sid = manager.create_sync(Agent(name="writer", model=ScriptedModel()))
        >>> manager.submit_turn_sync(sid, "hello").reply
        '[scripted] hello'
        >>> [c.source for c in manager.checkpointer.list_checkpoints_sync(sid)]
        ['auto', 'auto']

    Notes:
        All async methods have ``*_sync`` twins (see :mod:`agcore_lab.aio`).
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        bundle: RuntimeBundle | None = None,
        agents: Iterable[Agent] = (),
        auto_checkpoint: bool | None = None,
        watch_interval: float | None = 0.25,
        config: SessionManagerConfig | None = None,
    ) -> None:
        if config is not None:
            if auto_checkpoint is not None and auto_checkpoint != config.auto_checkpoint:
                raise ConfigurationError(
                    "auto_checkpoint= and config.auto_checkpoint disagree; give one of them"
                )
            if bundle is not None and config.default_bundle not in (None, bundle):
                raise ConfigurationError("give either bundle= or config.default_bundle, not both")
            auto_checkpoint = config.auto_checkpoint
            bundle = bundle or config.default_bundle
        if bundle is not None and store is not None and bundle.store is not store:
            raise ConfigurationError("give either store= or bundle=, not two different stores")
        self.bundle = bundle or (RuntimeBundle(store=store) if store else RuntimeBundle())
        self.auto_checkpoint = True if auto_checkpoint is None else auto_checkpoint
        self.config = SessionManagerConfig(
            auto_checkpoint=self.auto_checkpoint, default_bundle=self.bundle
        )
        self.agents: dict[str, Agent] = {}
        self.checkpointer = Checkpointer(self)
        self.approvals = Approvals(self)
        self.dispatcher = Dispatcher(self)
        self._live: dict[str, AgentSession] = {}
        self._deferred: set[str] = set()  # children whose one checkpoint comes at finalize
        self._map_lock = threading.Lock()
        self.events = EventHub(
            self.bundle.store,
            on_change=self._on_remote_change,
            on_gap=self._on_gap,
            interval=watch_interval,
        )
        for agent in agents:
            self.register_agent(agent)

    @property
    def store(self) -> Store:
        """The store of the manager's bundle."""
        return self.bundle.store

    @property
    def astore(self) -> AsyncStore:
        """The async seam over :attr:`store` (``bundle.astore``): what the manager's
        coroutines and its components await."""
        return self.bundle.astore

    def __repr__(self) -> str:
        return (
            f"SessionManager({self.store!r}, live={len(self._live)}, agents={sorted(self.agents)})"
        )

    # -- registry, events, map --------------------------------------------------------------

    def register_agent(self, agent: Agent) -> None:
        """Make ``agent`` findable by name (for ``recover`` and the views)."""
        self.agents[agent.name] = agent

    def add_listener(self, callback: Callable[[ManagerEvent], None]) -> Callable[[], None]:
        """Call ``callback(event)`` on every change — this manager's own, and (from a watcher
        thread, ``event.remote``) those other processes make on the same store; returns a
        function that unsubscribes."""
        return self.events.add_listener(callback)

    def watch(self, interval: float | None = None) -> ChangeWatcher | None:
        """Start noticing changes other processes make to the store (a no-op when watching
        is off or already on); they reach the listeners as events with ``remote=True``, and
        live sessions they touch are refreshed when idle. Returns the watcher."""
        return self.events.watch(interval)

    def _on_remote_change(self, change: ChangeRecord) -> None:
        live = self.live(change.session_id)
        if change.kind == "destroyed":
            self._pop(change.session_id)
        elif live is not None:
            try:
                live.refresh_nowait()
            except SessionNotFoundError:
                self._pop(change.session_id)
        kind: EventKind = change.kind  # type: ignore[assignment]  # the feed's kinds are events
        self.emit(
            kind,
            change.session_id,
            ckpt_id=change.ckpt_id,
            new_session_id=change.new_session_id,
            remote=True,
        )

    def _on_gap(self) -> None:
        # Changes were missed: re-read every live session, then tell every listener (a view
        # of a session not live here, a tree) to re-read what it shows.
        for session_id in self.live_ids():
            kind: EventKind = "turn"
            if self.store.session_version(session_id) is None:
                self._pop(session_id)
                kind = "destroyed"
            else:
                live = self.live(session_id)
                if live is not None:
                    live.refresh_nowait()
            self.emit(kind, session_id, remote=True)
        self.emit("missed", "", remote=True)

    def emit(self, kind: EventKind, session_id: str, **fields: Any) -> None:
        """Tell the listeners (a listener that raises is logged and skipped)."""
        self.events.emit(kind, session_id, **fields)

    def _put(self, session: AgentSession) -> None:
        with self._map_lock:
            self._live[session.session_id] = session

    def _pop(self, session_id: str) -> AgentSession | None:
        with self._map_lock:
            return self._live.pop(session_id, None)

    def live(self, session_id: str) -> AgentSession | None:
        """The live session ``session_id`` of this manager, or ``None``."""
        check_session_id(session_id)
        with self._map_lock:
            return self._live.get(session_id)

    def live_ids(self) -> list[str]:
        """Ids of the sessions held live by this manager."""
        with self._map_lock:
            return list(self._live)

    def require_stored(self, session_id: str) -> SessionRecord:
        """The stored record, or ``SessionNotFoundError``."""
        check_session_id(session_id)
        record = self.store.get_session(session_id)
        if record is None:
            raise SessionNotFoundError("no such session in the store", session_id=session_id)
        return record

    async def arequire_stored(self, session_id: str) -> SessionRecord:
        """:meth:`require_stored`, awaited through :attr:`astore`."""
        check_session_id(session_id)
        record = await self.astore.aget_session(session_id)
        if record is None:
            raise SessionNotFoundError("no such session in the store", session_id=session_id)
        return record

    def _attach(self, session: AgentSession) -> AgentSession:
        self.register_agent(session.agent)
        if self.auto_checkpoint and self._after_turn not in session.hooks:  # once per session
            session.add_turn_end_hook(self._after_turn)
            session.turn_checkpoint = TurnCheckpoint(make=self._turn_meta, hook=self._after_turn)
        self._put(session)
        return session

    def _turn_meta(self, session: AgentSession, pending: PendingToolCall | None) -> CkptMeta | None:
        # The after-turn checkpoint, stored with the turn's commit when nothing writes after it.
        if session.session_id in self._deferred:
            return None
        return self.checkpointer.turn_meta(session, pending)

    async def _after_turn(self, session: AgentSession, result: TurnResult) -> None:
        # Runs inside the session's turn lock, after the turn was committed. A failure is
        # logged by the session's hook runner and does not fail the turn.
        self.emit("turn", session.session_id)
        folded, session.folded_checkpoint = session.folded_checkpoint, None
        if folded is not None:  # stored with the turn's commit
            self.checkpointer.announce(folded)
        elif session.session_id not in self._deferred:
            await self.checkpointer.acheckpoint_locked(session, source="auto")

    # -- lifecycle --------------------------------------------------------------------------

    async def create(self, agent: Agent, bundle: RuntimeBundle | None = None) -> str:
        """Create a root session for ``agent``; return its (time-ordered) id."""
        made: list[CkptMeta] = []
        first = self._first_checkpoint(made) if self.auto_checkpoint else None
        session = self._attach(
            AgentSession(agent, bundle=bundle or self.bundle, first_checkpoint=first)
        )
        self.emit("created", session.session_id)
        for meta in made:
            self.checkpointer.announce(meta)
        return session.session_id

    async def get(self, session_id: str) -> AgentSession:
        """The live session ``session_id``.

        Raises:
            SessionNotFoundError: Not live here (if it is stored, ``recover`` rebuilds it).
        """
        check_session_id(session_id)
        with self._map_lock:
            session = self._live.get(session_id)
        if session is None:
            hint = (
                "; recover() rebuilds it from the store"
                if await self.astore.aget_session(session_id)
                else ""
            )
            raise SessionNotFoundError(f"no live session with this id{hint}", session_id=session_id)
        return session

    async def get_or_recover(self, session_id: str) -> AgentSession:
        """The live session, recovering it from the store when it is not live."""
        check_session_id(session_id)
        with self._map_lock:
            session = self._live.get(session_id)
        return session if session is not None else await self.recover(session_id)

    async def recover(
        self,
        session_id: str,
        agent: Agent | None = None,
        bundle: RuntimeBundle | None = None,
    ) -> AgentSession:
        """Rebuild a stored session (after a kernel restart) as last committed.

        Normally that is its latest checkpoint. Turns committed after the latest checkpoint
        are kept, and a checkpoint labelled ``recovered`` records them (when
        ``auto_checkpoint`` is on) — recovering never throws committed work away.

        Args:
            session_id: The session.
            agent: The agent to run it; by default the registered agent of the stored name.
            bundle: The services it uses (hooks, prices, lease time); by default the
                manager's. Its store must be the manager's.

        Raises:
            SessionNotFoundError: Not in the store.
            AgentNotFoundError: No agent given and none registered under the stored name.
            InvalidInputError: ``bundle`` has another store than the manager.
        """
        if bundle is not None and bundle.store is not self.store:
            raise InvalidInputError(
                "the bundle's store is not this manager's store", session_id=session_id
            )
        record = await self.arequire_stored(session_id)
        if agent is None:
            agent = self.agents.get(record.agent_name)
            if agent is None:
                raise AgentNotFoundError(
                    f"no agent named {record.agent_name!r} is registered; pass agent= or "
                    "call manager.register_agent(...) first",
                    session_id=session_id,
                    agent_name=record.agent_name,
                )
        loaded = await self.astore.arun(
            AgentSession.load, session_id, agent, bundle=bundle or self.bundle
        )
        session = self._attach(loaded)
        latest = await self.astore.alist_checkpoints(session_id, limit=1)
        if (
            self.auto_checkpoint
            and latest
            and self._differs(session, latest[0].turn_index, latest[0].slots)
        ):
            # Committed turns newer than the latest checkpoint (a crash between a turn and its
            # checkpoint, a manager without auto_checkpoint, or another kernel mid-turn) are
            # kept, never rolled back: the timeline gets a checkpoint for them instead.
            try:
                await self.checkpointer.checkpoint(session, "recovered", source="auto")
            except (SessionBusyError, StaleSessionError):
                # Another writer is mid-turn (its own checkpoint is coming) or just moved the
                # session on: there is nothing of a crash to record.
                logger.debug(
                    "session %s is being written elsewhere; no recovered checkpoint", session_id
                )
        await self._continue_executed(session)
        self.emit("recovered", session_id)
        return session

    async def _continue_executed(self, session: AgentSession) -> None:
        # An approved call that ran while its process died before the turn was continued:
        # continue it now, exactly once (the turn lease makes concurrent recovers take turns,
        # and the second finds the call answered).
        call = session.pending_tool_call()
        if call is None or call.status != "EXECUTED":
            return
        try:
            await session.continue_executed(wait=self.bundle.lease_seconds)
        except SessionBusyError:
            logger.warning(
                "session %s is busy; its executed call is left for its holder", session.session_id
            )

    @staticmethod
    def _differs(session: AgentSession, turn_index: int, slots: dict[str, Any]) -> bool:
        heads = {sid: s.head_node_id for sid, s in session.slots.items()}
        return session.turn_index != turn_index or heads != {
            sid: s.head_node_id for sid, s in slots.items()
        }

    async def adopt(self, session_id: str, *, parent_id: str | None = None) -> AgentSession:
        """Load a session that another part of the engine created (a fork) and make it live;
        it shares the messages of its live parent where their chains meet."""
        record = await self.arequire_stored(session_id)
        agent = self.agents.get(record.agent_name)
        if agent is None:
            raise AgentNotFoundError(
                f"no agent named {record.agent_name!r} is registered", agent_name=record.agent_name
            )
        parent = self.live(parent_id) if parent_id is not None else None
        loaded = await self.astore.arun(
            AgentSession.load, session_id, agent, bundle=self.bundle, reuse=parent
        )
        return self._attach(loaded)

    async def replace(self, session_id: str, session: AgentSession) -> None:
        """Make ``session`` the live object for ``session_id`` (their ids must match).

        A session built with ``AgentSession.from_snapshot`` from a ``rollback_load`` snapshot
        is written first — the rollback's one version-checked transaction (see
        :meth:`Checkpointer.apply_snapshot`) — so the four steps end in exactly the state of
        ``checkpointer.rollback``.

        Raises:
            InvalidInputError: The ids differ, or the snapshot is not a checkpoint of the
                session.
            StaleSessionError: The session changed since ``rollback_load``; nothing written.
        """
        if session.session_id != session_id:
            raise InvalidInputError(
                f"the session's id {session.session_id!r} is not {session_id!r}",
                session_id=session_id,
            )
        await self.arequire_stored(session_id)
        if session.detached is not None:
            await self.checkpointer.apply_snapshot(session)
        self._attach(session)

    async def destroy(self, session_id: str) -> None:
        """Remove a session, its metadata and checkpoints. Its children stay, as orphans.

        Raises:
            SessionNotFoundError: Unknown session.
        """
        await self.arequire_stored(session_id)
        live = self._live.get(session_id)
        await self.astore.adelete_session(
            session_id, expected_version=live.version if live is not None else None
        )
        self._pop(session_id)
        self.emit("destroyed", session_id)

    async def destroy_subtree(self, session_id: str) -> list[str]:
        """Destroy a session and all its descendants; return their ids (deepest first)."""
        tree = await self.tree(session_id)
        ids = [node.session_id for _, node in tree.walk()]
        for sid in reversed(ids):
            await self.destroy(sid)
        return list(reversed(ids))

    async def switch_agent(self, session_id: str, new_agent: Agent) -> None:
        """Give a session another agent. History, slots, turn index, memory and cost stay; the
        stored agent name changes; no checkpoint is taken."""
        session = await self.get_or_recover(session_id)
        await session.set_agent(new_agent)
        self.register_agent(new_agent)
        self.emit("agent_switched", session_id)

    # -- turns ------------------------------------------------------------------------------

    async def submit_turn(self, session_id: str, text: str, *, wait: float = 0.0) -> TurnResult:
        """Run a turn in the session (recovering it if needed); checkpoint it when done.

        ``wait``: seconds to wait while another writer runs a turn in the session (by default
        such a turn is refused at once with ``SessionBusyError``). See
        :meth:`AgentSession.submit_turn`.
        """
        session = await self.get_or_recover(session_id)
        return await session.submit_turn(text, wait=wait)

    async def submit_turn_stream(
        self, session_id: str, text: str, *, wait: float = 0.0
    ) -> AsyncIterator[TurnEvent]:
        """Stream a turn; it is committed and checkpointed only when the stream finishes."""
        session = await self.get_or_recover(session_id)
        stream = session.submit_turn_stream(text, wait=wait)
        try:
            async for event in stream:
                yield event
        finally:
            # Abandoned (break, aclose(), cancellation): close the session's stream now, so
            # its turn lock is released at once rather than whenever the loop finalizes it.
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()

    async def checkpoint(self, session_id: str, label: str | None = None) -> str:
        """Checkpoint a session now; raises if the write fails."""
        session = await self.get_or_recover(session_id)
        return await self.checkpointer.checkpoint(session, label)

    # -- sync twins -------------------------------------------------------------------------

    def create_sync(self, agent: Agent, bundle: RuntimeBundle | None = None) -> str:
        """Blocking twin of :meth:`create`."""
        return run_sync(self.create(agent, bundle))

    def get_sync(self, session_id: str) -> AgentSession:
        """Blocking twin of :meth:`get`."""
        return run_sync(self.get(session_id))

    def recover_sync(
        self, session_id: str, agent: Agent | None = None, bundle: RuntimeBundle | None = None
    ) -> AgentSession:
        """Blocking twin of :meth:`recover`."""
        return run_sync(self.recover(session_id, agent, bundle))

    def replace_sync(self, session_id: str, session: AgentSession) -> None:
        """Blocking twin of :meth:`replace`."""
        run_sync(self.replace(session_id, session))

    def destroy_sync(self, session_id: str) -> None:
        """Blocking twin of :meth:`destroy`."""
        run_sync(self.destroy(session_id))

    def destroy_subtree_sync(self, session_id: str) -> list[str]:
        """Blocking twin of :meth:`destroy_subtree`."""
        return run_sync(self.destroy_subtree(session_id))

    def switch_agent_sync(self, session_id: str, new_agent: Agent) -> None:
        """Blocking twin of :meth:`switch_agent`."""
        run_sync(self.switch_agent(session_id, new_agent))

    def submit_turn_sync(self, session_id: str, text: str, *, wait: float = 0.0) -> TurnResult:
        """Blocking twin of :meth:`submit_turn`."""
        return run_sync(self.submit_turn(session_id, text, wait=wait))

    def submit_turn_stream_sync(
        self, session_id: str, text: str, *, wait: float = 0.0
    ) -> Iterator[TurnEvent]:
        """Blocking twin of :meth:`submit_turn_stream`."""
        return iterate_sync(self.submit_turn_stream(session_id, text, wait=wait))

    def checkpoint_sync(self, session_id: str, label: str | None = None) -> str:
        """Blocking twin of :meth:`checkpoint`."""
        return run_sync(self.checkpoint(session_id, label))

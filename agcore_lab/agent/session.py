"""``AgentSession``: one conversation with an agent — turns, slots, memory, summaries.

Every state change is written to the store first and applied to the live object only after the
write succeeded, so a failed write, a model error, a cancelled turn or an abandoned stream
leaves the session exactly as it was.

Event loops: async methods are the primary API (``await session.submit_turn(...)``, top-level
await works in Jupyter). Each has a ``*_sync`` twin that runs it on agcore_lab's one background
loop (see :mod:`agcore_lab.aio`), usable in scripts and in notebook cells alike. Turns of one
session are serialized by a per-session lock; different sessions run concurrently.

Sharing: the live object is a cache of the stored session, never its owner — other objects,
threads, kernels or machines may hold the same session. Every write names the version it is
based on and the store refuses it (:class:`~agcore_lab.errors.StaleSessionError`) if another
writer moved the session on. A turn first takes the session's turn lease in the store (a
second simultaneous writer gets :class:`~agcore_lab.errors.SessionBusyError` before any model
call), then reloads the session if the store moved on, so writers taking turns one after the
other each see the other's messages.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime
from typing import Any

from pydantic import JsonValue

from agcore_lab.agent import approval as steps
from agcore_lab.agent.agent import Agent, require_agent
from agcore_lab.agent.bundle import RuntimeBundle, TurnHook
from agcore_lab.agent.events import TurnDone, TurnEvent, TurnResult
from agcore_lab.agent.lease import TurnLease
from agcore_lab.agent.memory import SessionMemory
from agcore_lab.agent.recording import recorder_for
from agcore_lab.agent.session_approvals import ApprovalOperations
from agcore_lab.agent.session_lease import SessionLease
from agcore_lab.agent.session_loading import SessionLoading
from agcore_lab.agent.session_snapshot import SnapshotOperations
from agcore_lab.agent.session_views import MAIN_SLOT, SUMMARY_KEY, SessionViews
from agcore_lab.agent.slot_ops import SlotOperations
from agcore_lab.agent.slots import ContextSlot, SlotMode
from agcore_lab.agent.snapshot import SessionSnapshot
from agcore_lab.agent.summary import SummaryConfig, request_summary
from agcore_lab.agent.turn import TurnDraft, run_turn, run_turn_plain
from agcore_lab.agent.turn_commit import TurnCheckpoint, TurnMemory, checkpoint_after
from agcore_lab.aio import CrossLoopLock, iterate_sync, run_sync
from agcore_lab.errors import (
    ConfigurationError,
    ConflictError,
    InvalidInputError,
    MaxToolRoundsError,
    SessionNotFoundError,
)
from agcore_lab.ids import new_id, utcnow
from agcore_lab.llm.tokens import estimate_messages_tokens
from agcore_lab.llm.usage import CostTracker
from agcore_lab.store._sqlite_errors import surrogate_error
from agcore_lab.store._trusted import trusted
from agcore_lab.store.base import CkptMeta, SessionRecord, Store

__all__ = ["MAIN_SLOT", "SUMMARY_KEY", "AgentSession"]

logger = logging.getLogger("agcore_lab")


class AgentSession(
    ApprovalOperations, SessionLoading, SessionViews, SlotOperations, SnapshotOperations
):
    """A conversation with an agent, kept in a store.

    Args:
        agent: The agent answering in this session.
        store: Where to keep it (shortcut for ``bundle=RuntimeBundle(store=store)``).
        bundle: Shared services (store, hooks, prices); an in-memory store by default.
        session_id: Use this id instead of a new time-ordered one.
        parent_id: The parent session, for sessions created as children.
        metadata: The session's first metadata values (stored with it).
        first_checkpoint: Makes the session's first checkpoint from the new session, stored
            in the same transaction as the session (the manager's ``start`` checkpoint).

    Example:
        >>> from agcore_lab import Agent, ScriptedModel
        >>> session = AgentSession(Agent(name="echo", model=ScriptedModel(["hello!"])))
        >>> session.submit_turn_sync("hi").reply
        'hello!'
    """

    # Set by a manager (its automatic after-turn checkpoint, which may go with the turn's
    # commit) and by a dispatch (memory writes for the commit of the turn it runs).
    turn_checkpoint: TurnCheckpoint | None = None
    turn_memory: TurnMemory | None = None
    folded_checkpoint: CkptMeta | None = None  # the one the last turn's commit stored
    # A turn lease taken in the write that created the session (session_batch): (holder,
    # deadline on the monotonic clock). The first turn uses it; any other write gives it up.
    _reserved: tuple[str, float] | None = None
    # The retry counter of this session's turns' usual calls (made by the first turn's
    # recorder, see agent/recording.py): one per session, so the context variable backends
    # count retries in is set once per task, not for every turn.
    call_retries: list[int] | None = None

    def __init__(
        self,
        agent: Agent,
        *,
        store: Store | None = None,
        bundle: RuntimeBundle | None = None,
        session_id: str | None = None,
        parent_id: str | None = None,
        metadata: dict[str, JsonValue] | None = None,
        first_checkpoint: Callable[[AgentSession], CkptMeta] | None = None,
    ) -> None:
        self._init_new(agent, self._resolve_bundle(store, bundle), session_id, parent_id, metadata)
        # One write: the session, its first slot and (for a manager) its first checkpoint.
        self.store.create_session(
            self._record(),
            slots=[self.slots[MAIN_SLOT].to_record(self.session_id)],
            checkpoint=first_checkpoint(self) if first_checkpoint is not None else None,
        )

    def _init_new(
        self,
        agent: Agent,
        bundle: RuntimeBundle,
        session_id: str | None,
        parent_id: str | None,
        metadata: dict[str, JsonValue] | None,
    ) -> None:
        # The state of a new session, before anything is stored (see session_batch too).
        self.agent = require_agent(agent)
        self.bundle = bundle
        self.session_id = session_id or new_id("ses")
        self.parent_id = parent_id
        self.created_at = utcnow()
        self.turn_index = 0
        self.last_summary_turn: int | None = None
        self.cost_tracker = CostTracker(prices=bundle.prices)
        self.slots: dict[str, ContextSlot] = {MAIN_SLOT: ContextSlot(MAIN_SLOT)}
        self.current_slot_id = MAIN_SLOT
        self.hooks: list[TurnHook] = []
        self._lock = CrossLoopLock()
        self._holder: str | None = None
        self._lease: TurnLease | None = None
        self.version = 0
        self.pending_interrupt_id: str | None = None
        self.metadata: dict[str, JsonValue] = dict(metadata or {})
        self.detached: SessionSnapshot | None = None
        self.session_memory = SessionMemory.deferred(self.store, self.session_id)  # new: empty

    @staticmethod
    def _resolve_bundle(store: Store | None, bundle: RuntimeBundle | None) -> RuntimeBundle:
        if bundle is not None and store is not None and bundle.store is not store:
            raise ConfigurationError("give either store= or bundle=, not two different stores")
        if bundle is not None:
            return bundle
        return RuntimeBundle(store=store) if store is not None else RuntimeBundle()

    @classmethod
    def load(
        cls,
        session_id: str,
        agent: Agent,
        *,
        store: Store | None = None,
        bundle: RuntimeBundle | None = None,
        reuse: AgentSession | None = None,
    ) -> AgentSession:
        """Rebuild a stored session (after a kernel restart, or in another process).

        Args:
            session_id: The session.
            agent: The agent to run it.
            store: Where it lives (or give ``bundle``).
            bundle: The services it uses.
            reuse: A live session whose messages the loaded one may share where their
                chains meet — a fork's parent — so only the rest is read (ignored when it
                lives in another store).

        Raises:
            SessionNotFoundError: No session with that id in the store.
        """
        bundle = cls._resolve_bundle(store, bundle)
        record = bundle.store.get_session(session_id)
        if record is None:
            raise SessionNotFoundError("no such session in the store", session_id=session_id)
        self = cls.__new__(cls)
        self.agent, self.bundle, self.hooks = agent, bundle, []
        self._lock = CrossLoopLock()
        self._holder = None
        self._lease = None
        shared = reuse is not None and reuse.store is bundle.store
        self.restore(record, reuse=reuse.slots.values() if shared and reuse else ())
        return self

    # -- persistence ------------------------------------------------------------------------

    @property
    def turn_lock(self) -> CrossLoopLock:
        """The lock a turn holds; hold it to read or change the session between turns."""
        return self._lock

    def record(self) -> SessionRecord:
        """The session's scalar state as it would be stored now."""
        return self._record()

    def _record(self, *, now: datetime | None = None, **changes: Any) -> SessionRecord:
        record = SessionRecord(
            session_id=self.session_id,
            agent_name=self.agent.name,
            parent_id=self.parent_id,
            created_at=self.created_at,
            updated_at=now or utcnow(),
            turn_index=self.turn_index,
            current_slot_id=self.current_slot_id,
            last_summary_turn=self.last_summary_turn,
            spend=self.cost_tracker.by_model,
            metadata=self.metadata,
            version=self.version,
        )
        return record.model_copy(update=changes) if changes else record

    def _commit(
        self, record: SessionRecord, *, change: str = "turn", last: bool = False, **parts: Any
    ) -> None:
        """Write ``record`` (based on this object's version) with ``parts`` in one store
        transaction, then take the new version. Raises ``StaleSessionError`` /
        ``SessionBusyError`` — and writes nothing — if another writer got there first.

        ``last``: the last write under the turn lease, which it gives up in the same
        transaction (saving the turn a write of its own)."""
        self._require_attached()
        lease = self._lease if last else None
        holder, release = self._write_holder(lease)
        self.version = self.store.commit(
            record, lease_holder=holder, change=change, release_lease=release, **parts
        )
        self._reserved = None if holder != self._holder else self._reserved
        if lease is not None:
            lease.released = True

    async def _acommit(
        self, record: SessionRecord, *, change: str = "turn", last: bool = False, **parts: Any
    ) -> None:
        """:meth:`_commit`, awaited through the async store (the engine's coroutines)."""
        self._require_attached()
        lease = self._lease if last else None
        holder, release = self._write_holder(lease)
        self.version = await self.astore.acommit(
            record, lease_holder=holder, change=change, release_lease=release, **parts
        )
        self._reserved = None if holder != self._holder else self._reserved
        if lease is not None:
            lease.released = True

    def _write_holder(self, lease: TurnLease | None) -> tuple[str | None, bool]:
        # The lease a write holds, and whether it gives the lease up: a write outside a turn
        # on a session whose first turn is reserved (session_batch) gives the reservation up.
        if self._holder is None and self._reserved is not None:
            return self._reserved[0], True
        return self._holder, lease is not None

    def _require_attached(self) -> None:
        if self.detached is not None:
            raise ConflictError(
                "this session was built from a snapshot and is not stored yet; call "
                "manager.replace(session_id, session) first",
                session_id=self.session_id,
            )

    async def set_agent(self, agent: Agent) -> None:
        """Give the session another agent (stored by name); history and state stay.

        Raises:
            StaleSessionError, SessionBusyError: Another writer got there first.
        """
        async with self._lock:
            await self._acommit(self._record(agent_name=agent.name), change="agent_switched")
            self.agent = agent

    def write_metadata(self, key: str, value: JsonValue) -> None:
        """Store one metadata value of the session (shown in the tree and sessions table)."""
        metadata = {**self.metadata, key: value}
        self._commit(self._record(metadata=metadata), change="slot")
        self.metadata = metadata

    # -- turns ------------------------------------------------------------------------------

    async def submit_turn(self, text: str, *, wait: float = 0.0) -> TurnResult:
        """Send ``text`` as a user turn and run the tool loop to the model's final answer.

        Args:
            text: The user's message.
            wait: Seconds to wait while another writer (kernel, process) runs a turn in this
                session; by default a busy session is refused at once.

        Returns:
            The turn's result: reply, tool calls and results, usage, cost, turn index.

        Raises:
            InvalidInputError: ``text`` is empty.
            SessionBusyError: Another writer holds the session's turn lease (409); nothing
                of this turn ran.
            StaleSessionError: Another writer changed the session during this turn (409);
                nothing of it was stored.
            ConflictError: A tool call of the session is unresolved (pending, in doubt, or
                waiting to be continued); the message names it.
            MaxToolRoundsError: The model kept calling tools past ``agent.max_tool_rounds``;
                the turn's messages so far are kept, ``err.partial`` has the result.
            ModelError: The model failed; the session is unchanged.
        """
        # One coroutine chain down to the model call (no event is yielded to anyone: a
        # non-streamed turn's events were only ever dropped); the same steps as _turn.
        self._check_text(text)
        async with self._lock, self._leased(wait):
            live = self.current_slot
            with self._uncommitted(live):
                draft = await self._draft_turn(live)
                await run_turn_plain(self.agent, draft, text)
                result = await self._commit_new_turn(draft)
            await self._after_turn(result)
        self._raise_for_status(result)
        return result

    def submit_turn_stream(self, text: str, *, wait: float = 0.0) -> AsyncIterator[TurnEvent]:
        """Like :meth:`submit_turn`, yielding events as they come; ``TurnDone`` comes last.

        The turn is committed only when the stream finishes: a stream abandoned mid-way
        (``break``, ``aclose()``, cancellation) leaves the session exactly as it was.
        """
        return self._turn(text, stream=True, wait=wait)

    def _leased(self, wait: float) -> SessionLease:
        # Hold the store's turn lease (so a second writer is refused before it acts), and
        # build on the latest stored state. The caller holds this object's lock.
        return SessionLease(self, wait)

    def _nothing_after_commit(self) -> bool:
        # No automatic summary, and no turn-end hook but the manager's checkpoint (which then
        # goes with the commit): the commit is the turn's last write and gives the lease up.
        if self.agent.summary_config is not None or self.bundle.hooks:
            return False
        maker = self.turn_checkpoint
        return all(maker is not None and hook == maker.hook for hook in self.hooks)

    def _check_text(self, text: str) -> None:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("a turn needs non-empty text", session_id=self.session_id)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # refused before anything runs or is recorded
            raise surrogate_error(exc) from exc

    async def _turn(self, text: str, *, stream: bool, wait: float) -> AsyncIterator[TurnEvent]:
        self._check_text(text)
        async with self._lock, self._leased(wait):
            live = self.current_slot
            with self._uncommitted(live):
                draft = await self._draft_turn(live)
                async for event in run_turn(self.agent, draft, text, stream=stream):
                    yield event
                result = await self._commit_new_turn(draft)
            await self._after_turn(result)
        self._raise_for_status(result)
        yield TurnDone(result=result)

    async def _draft_turn(self, live: ContextSlot) -> TurnDraft:
        # A new turn's draft over the live slot, with its call recorder; refused while a
        # tool call of the session is unresolved.
        draft = TurnDraft(slot=live.draft(), cost=self.cost_tracker.fork())
        draft.recorder = recorder_for(self, draft.slot, turn_index=self.turn_index + 1)
        steps.before_turn(draft, await self._apending_tool_call(), self.session_id)
        return draft

    async def _commit_new_turn(self, draft: TurnDraft) -> TurnResult:
        return await self._commit_turn(
            draft, run_id=new_id("run"), last=self._nothing_after_commit()
        )

    @contextlib.contextmanager
    def _uncommitted(self, live: ContextSlot) -> Iterator[None]:
        # A turn's draft appends to the live slot's history list (no copy of the history);
        # a turn that does not commit gives the live slot back exactly its own messages.
        kept = len(live.messages)
        try:
            yield
        except BaseException:
            if self.slots.get(live.slot_id) is live:
                live.drop_after(kept)
            raise

    def _raise_for_status(self, result: TurnResult) -> None:
        if result.status == "max_tool_rounds":
            raise MaxToolRoundsError(
                f"the model was still calling tools after {self.agent.max_tool_rounds} rounds; "
                "raise Agent.max_tool_rounds or check the tools' results",
                session_id=self.session_id,
                partial=result,
            )

    async def _commit_turn(
        self, draft: TurnDraft, *, run_id: str, continuing: bool = False, last: bool = False
    ) -> TurnResult:
        # A resumed turn continues the interrupted one: same run, same turn number.
        turn_index = self.turn_index if continuing else self.turn_index + 1
        slot = draft.slot
        pending = steps.new_pending(draft, self.session_id, run_id)
        checkpoint = memory = None
        if last:  # nothing writes after this commit: what would, goes with it
            if self.turn_checkpoint is not None:
                checkpoint = checkpoint_after(self, draft, turn_index, pending)
            if self.turn_memory is not None:
                memory = self.turn_memory(draft)
        self.folded_checkpoint = None
        now = utcnow()  # one time for the session's and the slot's rows (formatted once)
        await self._acommit(
            self._record(now=now, turn_index=turn_index, spend=draft.cost.by_model),
            change="approval" if continuing else "turn",
            last=last,
            messages=draft.new_messages,
            links=draft.links,
            slots=[slot.to_record(self.session_id, updated_at=now)],
            pending=pending,
            calls=draft.calls,
            checkpoint=checkpoint,
            memory=memory or (),
        )
        self.folded_checkpoint = checkpoint
        # Written: now the live state may change.
        self.slots[slot.slot_id] = slot
        self.turn_index = turn_index
        self.cost_tracker = draft.cost
        self.pending_interrupt_id = pending.interrupt_id if pending is not None else None
        # Built from the turn's own checked state (lists copied, as a validation would):
        # no validation pass, which checks each message against the message union.
        return trusted(
            TurnResult,
            {
                "session_id": self.session_id,
                "slot_id": slot.slot_id,
                "turn_index": turn_index,
                "reply": draft.reply,
                "tool_calls": list(draft.tool_calls),
                "tool_results": list(draft.tool_results),
                "messages": list(draft.new_messages),
                "usage": draft.usage,
                "cost": float(draft.cost_delta),
                "status": draft.status,
                "run_id": run_id,
                "pending_tool_call": pending,
            },
        )

    async def _after_turn(self, result: TurnResult) -> None:
        config = self.agent.summary_config
        if config is not None:
            tokens = estimate_messages_tokens(self.current_slot.messages)
            if config.is_due(tokens, self.turn_index, self.last_summary_turn):
                try:
                    await self._summarize(config, self.current_slot_id)
                except Exception:
                    logger.warning(
                        "automatic summary failed in session %s", self.session_id, exc_info=True
                    )
        for hook in [*self.bundle.hooks, *self.hooks]:
            try:
                outcome = hook(self, result)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception("turn-end hook %r failed in session %s", hook, self.session_id)

    def add_turn_end_hook(self, hook: TurnHook) -> None:
        """Run ``hook(session, result)`` (sync or async) after every turn of this session."""
        self.hooks.append(hook)

    # -- summaries --------------------------------------------------------------------------

    async def summarize(self, slot_id: str | None = None) -> str:
        """Summarize a slot now, whatever the watermark says; return the summary.

        The summary is written to the memory entry ``conversation_summary``. A Focused slot
        also takes it as its summary override; a Full slot stays Full (it keeps sending the
        whole history): a summary never changes a slot's mode.
        """
        config = self.agent.summary_config or SummaryConfig()
        async with self._lock, self._leased(0.0):
            return await self._summarize(config, slot_id or self.current_slot_id)

    async def _summarize(self, config: SummaryConfig, slot_id: str) -> str:
        slot = self.slot(slot_id)
        model = config.summary_model or self.agent.model
        previous = slot.summary_override
        if previous is None:  # a Full slot: build on its last summary, kept in memory
            entry = self.session_memory.get_entry(SUMMARY_KEY)
            if entry is not None and entry.metadata.get("slot_id") == slot_id:
                previous = entry.value if isinstance(entry.value, str) else None
        recorder = recorder_for(self, slot, turn_index=self.turn_index, kind="summary")
        response = await request_summary(model, config, slot.messages, previous, recorder=recorder)
        text = (response.message.content or "").strip()
        if not text:
            raise InvalidInputError(
                "the model returned an empty summary", session_id=self.session_id
            )
        draft, cost = slot.copy(), self.cost_tracker.fork()
        focused = draft.mode is SlotMode.Focused
        if focused:  # the design's W5: only a Focused slot takes the summary as its override
            draft.summary_override = text
        cost.record(response.model, response.usage)
        await self._acommit(
            self._record(last_summary_turn=self.turn_index, spend=cost.by_model),
            change="slot",
            slots=[draft.to_record(self.session_id)] if focused else [],
            calls=recorder.calls if recorder is not None else (),
        )
        self.slots[slot_id], self.cost_tracker = draft, cost
        self.last_summary_turn = self.turn_index
        logger.getChild("ops").info(
            "summary written",
            extra={"agcore_op": "summary", "session_id": self.session_id, "slot_id": slot_id},
        )
        self.session_memory.set(
            SUMMARY_KEY,
            text,
            {"turn_index": self.turn_index, "slot_id": slot_id, "messages": len(slot.messages)},
        )
        return text

    # -- sync twins -------------------------------------------------------------------------

    def submit_turn_sync(self, text: str, *, wait: float = 0.0) -> TurnResult:
        """Blocking twin of :meth:`submit_turn`."""
        return run_sync(self.submit_turn(text, wait=wait))

    def submit_turn_stream_sync(self, text: str, *, wait: float = 0.0) -> Iterator[TurnEvent]:
        """Blocking twin of :meth:`submit_turn_stream` (a plain iterator of events)."""
        return iterate_sync(self.submit_turn_stream(text, wait=wait))

    def summarize_sync(self, slot_id: str | None = None) -> str:
        """Blocking twin of :meth:`summarize`."""
        return run_sync(self.summarize(slot_id))

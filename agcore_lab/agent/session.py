"""``AgentSession``: one conversation with an agent — turns, slots, memory, summaries.

Every state change is written to the store first and applied to the live object only after the
write succeeded, so a failed write, a model error, a cancelled turn or an abandoned stream
leaves the session exactly as it was.

Event loops: async methods are the primary API (``await session.submit_turn(...)``, top-level
await works in Jupyter). Each has a ``*_sync`` twin that runs it on agcore_lab's one background
loop (see :mod:`agcore_lab.aio`), usable in scripts and in notebook cells alike. Turns of one
session are serialized by a per-session lock; different sessions run concurrently.
"""

from __future__ import annotations

import html
import inspect
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

from pydantic import JsonValue

from agcore_lab.agent.agent import Agent, RuntimeBundle, TurnHook, require_agent
from agcore_lab.agent.approval import ApprovalOperations
from agcore_lab.agent.events import TurnDone, TurnEvent, TurnResult
from agcore_lab.agent.memory import SessionMemory
from agcore_lab.agent.slot_ops import SlotOperations
from agcore_lab.agent.slots import ContextSlot, SlotMode
from agcore_lab.agent.summary import SummaryConfig, request_summary
from agcore_lab.agent.turn import TurnDraft, run_turn
from agcore_lab.aio import CrossLoopLock, iterate_sync, run_sync
from agcore_lab.errors import (
    ConfigurationError,
    InvalidInputError,
    MaxToolRoundsError,
    SessionNotFoundError,
    SlotNotFoundError,
)
from agcore_lab.ids import new_id, utcnow
from agcore_lab.llm.messages import AssistantMessage, Message, ToolMessage
from agcore_lab.llm.tokens import estimate_messages_tokens
from agcore_lab.llm.usage import CostTracker, Usage
from agcore_lab.store.base import SessionRecord, Store

__all__ = ["MAIN_SLOT", "SUMMARY_KEY", "AgentSession"]

logger = logging.getLogger("agcore_lab")

MAIN_SLOT = "main"
SUMMARY_KEY = "conversation_summary"


class AgentSession(SlotOperations, ApprovalOperations):
    """A conversation with an agent, kept in a store.

    Args:
        agent: The agent answering in this session.
        store: Where to keep it (shortcut for ``bundle=RuntimeBundle(store=store)``).
        bundle: Shared services (store, hooks, prices); an in-memory store by default.
        session_id: Use this id instead of a new time-ordered one.
        parent_id: The parent session, for sessions created as children.

    Example:
        >>> from agcore_lab import Agent, ScriptedModel
        >>> session = AgentSession(Agent(name="echo", model=ScriptedModel(["hello!"])))
        >>> session.submit_turn_sync("hi").reply
        'hello!'
    """

    def __init__(
        self,
        agent: Agent,
        *,
        store: Store | None = None,
        bundle: RuntimeBundle | None = None,
        session_id: str | None = None,
        parent_id: str | None = None,
    ) -> None:
        bundle = self._resolve_bundle(store, bundle)
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
        self.pending_interrupt_id: str | None = None
        self.metadata: dict[str, JsonValue] = {}
        self.store.create_session(
            self._record(), slots=[self.slots[MAIN_SLOT].to_record(self.session_id)]
        )
        self.session_memory = SessionMemory(self.store, self.session_id)

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
    ) -> AgentSession:
        """Rebuild a stored session (after a kernel restart, or in another process).

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
        self.restore(record)
        return self

    def restore(self, record: SessionRecord) -> None:
        """Set this session's state from a stored record and its slots (used by load and,
        later, rollback)."""
        store = self.bundle.store
        slots = {}
        for slot_record in store.load_slots(record.session_id):
            chain = store.load_chain(slot_record.head_node_id) if slot_record.head_node_id else []
            slots[slot_record.slot_id] = ContextSlot.from_record(slot_record, [m for _, m in chain])
        self.session_id = record.session_id
        self.parent_id = record.parent_id
        self.created_at = record.created_at
        self.turn_index = record.turn_index
        self.last_summary_turn = record.last_summary_turn
        self.cost_tracker = CostTracker(prices=self.bundle.prices, by_model=record.spend)
        self.slots = slots or {MAIN_SLOT: ContextSlot(MAIN_SLOT)}
        self.current_slot_id = record.current_slot_id
        self.metadata = dict(record.metadata)
        self.session_memory = SessionMemory(store, self.session_id)
        self.pending_interrupt_id = self._unanswered_interrupt()

    def _unanswered_interrupt(self) -> str | None:
        # The latest call that stopped a turn and has no tool answer in the history yet. It
        # must be asked in the history: after a rollback to before the call, an expired
        # record of it is not answered (an answer to a call never made is invalid history).
        answered = {
            m.tool_call_id for m in self.current_slot.messages if isinstance(m, ToolMessage)
        }
        asked = {
            call.id
            for slot in self.slots.values()
            for m in slot.messages
            if isinstance(m, AssistantMessage)
            for call in m.tool_calls
        }
        waiting = [
            c
            for c in self.store.list_pending(self.session_id, include_resolved=True)
            if c.status in ("PENDING_APPROVAL", "EXPIRED")
            and c.tool_call_id in asked
            and c.tool_call_id not in answered
        ]
        return waiting[-1].interrupt_id if waiting else None

    # -- read-only views --------------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The store this session is kept in."""
        return self.bundle.store

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
            f"agent <b>{html.escape(self.agent.name)}</b> &middot; {self.turn_index} turns "
            f"&middot; ${self.cost_so_far:.6f}<table><tr><th>slot</th><th>messages</th>"
            f"<th>mode</th><th>forked from</th></tr>{rows}</table></div>"
        )

    # -- persistence ------------------------------------------------------------------------

    @property
    def turn_lock(self) -> CrossLoopLock:
        """The lock a turn holds; hold it to read or change the session between turns."""
        return self._lock

    def record(self) -> SessionRecord:
        """The session's scalar state as it would be stored now."""
        return self._record()

    def _record(self, **changes: Any) -> SessionRecord:
        record = SessionRecord(
            session_id=self.session_id,
            agent_name=self.agent.name,
            parent_id=self.parent_id,
            created_at=self.created_at,
            updated_at=utcnow(),
            turn_index=self.turn_index,
            current_slot_id=self.current_slot_id,
            last_summary_turn=self.last_summary_turn,
            spend=self.cost_tracker.by_model,
            metadata=self.metadata,
        )
        return record.model_copy(update=changes)

    # -- turns ------------------------------------------------------------------------------

    async def submit_turn(self, text: str) -> TurnResult:
        """Send ``text`` as a user turn and run the tool loop to the model's final answer.

        Returns:
            The turn's result: reply, tool calls and results, usage, cost, turn index.

        Raises:
            InvalidInputError: ``text`` is empty.
            MaxToolRoundsError: The model kept calling tools past ``agent.max_tool_rounds``;
                the turn's messages so far are kept, ``err.partial`` has the result.
            ModelError: The model failed; the session is unchanged.
        """
        result: TurnResult | None = None
        async for event in self._turn(text, stream=False):
            if isinstance(event, TurnDone):
                result = event.result
        assert result is not None
        return result

    def submit_turn_stream(self, text: str) -> AsyncIterator[TurnEvent]:
        """Like :meth:`submit_turn`, yielding events as they come; ``TurnDone`` comes last.

        The turn is committed only when the stream finishes: a stream abandoned mid-way
        (``break``, ``aclose()``, cancellation) leaves the session exactly as it was.
        """
        return self._turn(text, stream=True)

    async def _turn(self, text: str, *, stream: bool) -> AsyncIterator[TurnEvent]:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("a turn needs non-empty text", session_id=self.session_id)
        async with self._lock:
            draft = TurnDraft(
                slot=self.current_slot.copy(),
                cost=self.cost_tracker.fork(),
            )
            self._settle_before_turn(draft)
            async for event in run_turn(self.agent, draft, text, stream=stream):
                yield event
            result = self._commit_turn(draft, run_id=new_id("run"))
            await self._after_turn(result)
        self._raise_for_status(result)
        yield TurnDone(result=result)

    def _raise_for_status(self, result: TurnResult) -> None:
        if result.status == "max_tool_rounds":
            raise MaxToolRoundsError(
                f"the model was still calling tools after {self.agent.max_tool_rounds} rounds; "
                "raise Agent.max_tool_rounds or check the tools' results",
                session_id=self.session_id,
                partial=result,
            )

    def _commit_turn(
        self, draft: TurnDraft, *, run_id: str, continuing: bool = False
    ) -> TurnResult:
        # A resumed turn continues the interrupted one: same run, same turn number.
        turn_index = self.turn_index if continuing else self.turn_index + 1
        slot = draft.slot
        pending = self._new_pending(draft, run_id)
        self.store.commit(
            self._record(turn_index=turn_index, spend=draft.cost.by_model),
            messages=draft.new_messages,
            links=draft.links,
            slots=[slot.to_record(self.session_id)],
            pending=pending,
        )
        # Written: now the live state may change.
        self.slots[slot.slot_id] = slot
        self.turn_index = turn_index
        self.cost_tracker = draft.cost
        self.pending_interrupt_id = pending.interrupt_id if pending is not None else None
        return TurnResult(
            session_id=self.session_id,
            slot_id=slot.slot_id,
            turn_index=turn_index,
            reply=draft.reply,
            tool_calls=draft.tool_calls,
            tool_results=draft.tool_results,
            messages=draft.new_messages,
            usage=draft.usage,
            cost=draft.cost_delta,
            status=draft.status,
            run_id=run_id,
            pending_tool_call=pending,
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

        The summary becomes the slot's summary override (the slot switches to Focused mode)
        and the memory entry ``conversation_summary``.
        """
        config = self.agent.summary_config or SummaryConfig()
        async with self._lock:
            return await self._summarize(config, slot_id or self.current_slot_id)

    async def _summarize(self, config: SummaryConfig, slot_id: str) -> str:
        slot = self.slot(slot_id)
        model = config.summary_model or self.agent.model
        response = await request_summary(model, config, slot.messages, slot.summary_override)
        text = (response.message.content or "").strip()
        if not text:
            raise InvalidInputError(
                "the model returned an empty summary", session_id=self.session_id
            )
        draft, cost = slot.copy(), self.cost_tracker.fork()
        draft.summary_override, draft.mode = text, SlotMode.Focused
        cost.record(response.model, response.usage)
        self.store.commit(
            self._record(last_summary_turn=self.turn_index, spend=cost.by_model),
            slots=[draft.to_record(self.session_id)],
        )
        self.slots[slot_id], self.cost_tracker = draft, cost
        self.last_summary_turn = self.turn_index
        self.session_memory.set(
            SUMMARY_KEY,
            text,
            {"turn_index": self.turn_index, "slot_id": slot_id, "messages": len(slot.messages)},
        )
        return text

    # -- sync twins -------------------------------------------------------------------------

    def submit_turn_sync(self, text: str) -> TurnResult:
        """Blocking twin of :meth:`submit_turn`."""
        return run_sync(self.submit_turn(text))

    def submit_turn_stream_sync(self, text: str) -> Iterator[TurnEvent]:
        """Blocking twin of :meth:`submit_turn_stream` (a plain iterator of events)."""
        return iterate_sync(self.submit_turn_stream(text))

    def summarize_sync(self, slot_id: str | None = None) -> str:
        """Blocking twin of :meth:`summarize`."""
        return run_sync(self.summarize(slot_id))

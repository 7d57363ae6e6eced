"""Human approval of tool calls: decisions, and resuming an interrupted turn.

A tool marked ``requires_approval`` (or whose policy says so for a call) suspends the turn: the
turn's messages so far are committed together with a :class:`PendingToolCall`, and the turn
result has ``status == "interrupted"`` and ``pending_tool_call``. ``resume`` records a person's
decision with a compare-and-set on the stored status (exactly one of concurrent resumes wins —
threads, tasks or processes), runs an approved tool exactly once, and continues the turn.

Rules for time travel: rolling back to a checkpoint taken before the call removes it from the
pending list; rolling back to one taken while it was pending brings it back as a *new* pending
interrupt. A rollback never runs a tool. If the original call had already been executed, the
restored one says so (``previously_executed``) and approving it again needs
``Approve(rerun=True)`` — it is never re-run silently.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, JsonValue

from agcore_lab.agent.events import TurnResult
from agcore_lab.agent.recording import recorder_for
from agcore_lab.agent.turn import TurnDraft, resume_turn
from agcore_lab.aio import CrossLoopLock, run_sync
from agcore_lab.errors import ConflictError, InvalidInputError
from agcore_lab.ids import new_id, utcnow
from agcore_lab.llm.messages import AssistantMessage, ToolCall, ToolMessage
from agcore_lab.llm.tools import run_tool_call
from agcore_lab.store._approvals import RunNotFoundError
from agcore_lab.store.pending import PendingToolCall

if TYPE_CHECKING:
    from agcore_lab.agent.agent import Agent, RuntimeBundle
    from agcore_lab.agent.slots import ContextSlot
    from agcore_lab.llm.usage import CostTracker
    from agcore_lab.store.base import Store

__all__ = ["Approve", "ApprovalOperations", "Decision", "Reject", "RunNotFoundError", "as_decision"]


class Approve(BaseModel):
    """Approve a pending call, optionally with edited arguments.

    Attributes:
        arguments: Replace the model's arguments (validated like any tool call).
        rerun: Needed to approve a call restored by a rollback whose original already ran.
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["approve"] = "approve"
    arguments: dict[str, JsonValue] | None = None
    rerun: bool = False


class Reject(BaseModel):
    """Reject a pending call; the model sees the reason."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["reject"] = "reject"
    reason: str = ""


Decision: TypeAlias = Approve | Reject | Literal["approve", "reject"]


def as_decision(decision: Decision | str) -> Approve | Reject:
    """Turn the shorthands ``"approve"`` / ``"reject"`` into decision objects."""
    if isinstance(decision, Approve | Reject):
        return decision
    if decision == "approve":
        return Approve()
    if decision == "reject":
        return Reject()
    raise InvalidInputError(
        f"unknown decision {decision!r}; use 'approve', 'reject', Approve(...) or Reject(...)"
    )


def _answer_the_rest(draft: TurnDraft, remaining: list[ToolCall]) -> None:
    """Answer every call a failure left unanswered in ``draft`` (the interrupted answer's
    remaining calls, or a later answer's), so the history stays valid for any chat API."""
    asked = [m for m in draft.new_messages if isinstance(m, AssistantMessage)]
    calls = [*remaining, *(c for m in asked for c in m.tool_calls)]
    answered = {m.tool_call_id for m in draft.new_messages if isinstance(m, ToolMessage)}
    for call in calls:
        if call.id not in answered:
            draft.answer_unexecuted(call, "the turn failed before it ran")


class ApprovalOperations:
    """Pending-call handling of ``AgentSession`` (mixed in)."""

    session_id: str
    agent: Agent
    slots: dict[str, ContextSlot]
    current_slot_id: str
    cost_tracker: CostTracker
    pending_interrupt_id: str | None
    _lock: CrossLoopLock

    if TYPE_CHECKING:
        bundle: RuntimeBundle
        turn_index: int

        @property
        def store(self) -> Store: ...

        def slot(self, slot_id: str) -> ContextSlot: ...

        def _commit_turn(
            self, draft: TurnDraft, *, run_id: str, continuing: bool = False
        ) -> TurnResult: ...

        async def _after_turn(self, result: TurnResult) -> None: ...

        def _raise_for_status(self, result: TurnResult) -> None: ...

    def pending_tool_call(self) -> PendingToolCall | None:
        """The call this session is waiting on, or ``None`` (an overdue one shows EXPIRED)."""
        if self.pending_interrupt_id is None:
            return None
        calls = self.store.list_pending(self.session_id, include_resolved=True)
        return next((c for c in calls if c.interrupt_id == self.pending_interrupt_id), None)

    def _new_pending(self, draft: TurnDraft, run_id: str) -> PendingToolCall | None:
        if draft.interrupt is None:
            return None
        call, remaining, timeout = draft.interrupt
        now = utcnow()
        return PendingToolCall(
            interrupt_id=new_id("int"),
            session_id=self.session_id,
            run_id=run_id,
            tool_call_id=call.id,
            tool_name=call.name,
            tool_args=dict(call.arguments),
            created_at=now,
            updated_at=now,
            expires_at=now + timedelta(seconds=timeout) if timeout is not None else None,
            remaining_calls=remaining,
        )

    def _settle_before_turn(self, draft: TurnDraft) -> None:
        """A new turn may not start while a call waits for a decision. A call that expired is
        answered (with the calls after it) so the history stays valid, then the turn goes on."""
        call = self.pending_tool_call()
        if call is None:
            self.pending_interrupt_id = None
            return
        if call.status == "PENDING_APPROVAL":
            raise ConflictError(
                f"the session is waiting for a decision on {call.tool_name!r}; resume it "
                "(approve or reject) before the next turn",
                session_id=self.session_id,
                run_id=call.run_id,
                interrupt_id=call.interrupt_id,
            )
        if call.status == "EXPIRED":
            draft.answer_unexecuted(call.call, "it expired without a decision")
            for later in call.remaining_calls:
                draft.answer_unexecuted(later, "an earlier call of the same answer expired")
        self.pending_interrupt_id = None

    async def resume(self, run_id: str, interrupt_id: str, decision: Decision | str) -> TurnResult:
        """Decide a pending call and continue its turn to the model's next answer.

        Args:
            run_id: The interrupted turn (``result.pending_tool_call.run_id``).
            interrupt_id: The interrupt (``result.pending_tool_call.interrupt_id``).
            decision: ``"approve"``, ``"reject"``, ``Approve(arguments=...)`` or
                ``Reject(reason=...)``.

        Raises:
            RunNotFoundError: Unknown run or interrupt in this session (404).
            ConflictError: Run/interrupt mismatch, or already resolved — another resume won
                (409).
            GoneError: The call expired (410); it is moved to EXPIRED.
            InvalidInputError: Edited arguments that do not fit the tool; nothing changes.
        """
        choice = as_decision(decision)
        async with self._lock:
            call = self.store.get_pending(interrupt_id)
            if call is None or call.session_id != self.session_id:
                raise RunNotFoundError(
                    "no such interrupted tool call in this session",
                    session_id=self.session_id,
                    run_id=run_id,
                    interrupt_id=interrupt_id,
                )
            if isinstance(choice, Approve):
                answer = await self._approve(call, run_id, choice)
            else:
                answer = self._reject(call, run_id, choice)
            self.pending_interrupt_id = None
            draft = TurnDraft(
                slot=self.slots.get(self.current_slot_id, self.slot(self.current_slot_id)).copy(),
                cost=self.cost_tracker.fork(),
            )
            draft.recorder = recorder_for(self, draft.slot, turn_index=self.turn_index)
            try:
                async for _event in resume_turn(
                    self.agent, draft, answer, list(call.remaining_calls)
                ):
                    pass
            except BaseException:
                # The decision is recorded (an approved tool has run): keep the answers so far,
                # or the model's call would stay unanswered for good. Then fail as the model did.
                _answer_the_rest(draft, call.remaining_calls)
                self._commit_turn(draft, run_id=call.run_id, continuing=True)
                raise
            result = self._commit_turn(draft, run_id=call.run_id, continuing=True)
            await self._after_turn(result)
        self._raise_for_status(result)
        return result

    async def _approve(self, call: PendingToolCall, run_id: str, choice: Approve) -> ToolMessage:
        arguments = dict(choice.arguments) if choice.arguments is not None else call.tool_args
        tool = self.agent.tool_map.get(call.tool_name)
        if tool is not None and choice.arguments is not None:
            tool.validate(arguments)  # edited arguments: a clear error, nothing changes
        if call.previously_executed and not choice.rerun:
            raise ConflictError(
                f"this call already ran before a rollback (as {call.previous_interrupt_id}); "
                "approve it with Approve(rerun=True) to run it again, or reject it",
                session_id=self.session_id,
                interrupt_id=call.interrupt_id,
            )
        decided: dict[str, Any] = {"kind": "approve", "arguments": arguments}
        self.store.decide_pending(
            session_id=self.session_id,
            run_id=run_id,
            interrupt_id=call.interrupt_id,
            to_status="APPROVED_EXECUTING",
            decision=decided,
        )
        # The winner, and only the winner, runs the tool: once.
        executed = ToolCall(id=call.tool_call_id, name=call.tool_name, arguments=arguments)
        outcome = await run_tool_call(executed, self.agent.tool_map)
        self.store.decide_pending(
            session_id=self.session_id,
            run_id=run_id,
            interrupt_id=call.interrupt_id,
            from_status="APPROVED_EXECUTING",
            to_status="EXECUTED",
            result=outcome.message.content,
        )
        return outcome.message

    def _reject(self, call: PendingToolCall, run_id: str, choice: Reject) -> ToolMessage:
        self.store.decide_pending(
            session_id=self.session_id,
            run_id=run_id,
            interrupt_id=call.interrupt_id,
            to_status="REJECTED",
            decision={"kind": "reject", "reason": choice.reason},
        )
        reason = choice.reason or "no reason given"
        return ToolMessage(
            content=f"Rejected by a person: {reason}. The tool was not run.",
            tool_call_id=call.tool_call_id,
            name=call.tool_name,
            is_error=True,
        )

    def resume_sync(self, run_id: str, interrupt_id: str, decision: Decision | str) -> TurnResult:
        """Blocking twin of :meth:`resume`."""
        return run_sync(self.resume(run_id, interrupt_id, decision))

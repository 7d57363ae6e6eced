"""Human approval of tool calls: decisions, and the approval steps of a turn.

A tool marked ``requires_approval`` (or whose policy says so for a call) suspends the turn: the
turn's messages so far are committed together with a :class:`PendingToolCall`, and the turn
result has ``status == "interrupted"`` and ``pending_tool_call``. ``resume`` records a person's
decision with a compare-and-set on the stored status (exactly one of concurrent resumes wins —
threads, tasks or processes), runs an approved tool exactly once, and continues the turn.

The process running an approved tool holds an *executor lease* on the call and renews it while
the tool runs. If it dies, the call stays ``APPROVED_EXECUTING`` with a lease that ran out: it
is *in doubt* (the tool may or may not have run), a new turn is refused, and a person settles it
(``settle``: with the result they know, or an "outcome unknown" error), after which the turn
continues. A call that was ``EXECUTED`` but whose turn was never continued (the process died in
between) is continued from its stored result, exactly once, by ``recover``.

Rules for time travel: rolling back to a checkpoint taken before the call removes it from the
pending list; rolling back to one taken while it was pending brings it back as a *new* pending
interrupt. A rollback never runs a tool. If the original call had already been executed, the
restored one says so (``previously_executed``) and approving it again needs
``Approve(rerun=True)`` — it is never re-run silently.

The functions here are the approval steps of one turn; :class:`~agcore_lab.agent.session.
AgentSession` calls them in order (``before_turn`` → ``new_pending`` at commit; ``resume``:
``decide`` → ``continue``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, JsonValue

from agcore_lab.agent.lease import keep_alive
from agcore_lab.agent.turn import TurnDraft
from agcore_lab.errors import ConflictError, InvalidInputError
from agcore_lab.ids import new_id, utcnow
from agcore_lab.llm.messages import AssistantMessage, ToolCall, ToolMessage
from agcore_lab.llm.tools import run_tool_call
from agcore_lab.store._approvals import RunNotFoundError
from agcore_lab.store.pending import PendingToolCall

if TYPE_CHECKING:
    from agcore_lab.agent.agent import Agent
    from agcore_lab.store.aio import AsyncStore

__all__ = [
    "UNKNOWN_OUTCOME",
    "Approve",
    "Decision",
    "Reject",
    "RunNotFoundError",
    "answer_the_rest",
    "as_decision",
    "before_turn",
    "find_call",
    "new_pending",
    "reject_call",
    "run_approved",
    "settle_call",
]

UNKNOWN_OUTCOME = (
    "Error: the outcome of this call is unknown: the process running it stopped before it "
    "reported a result. A person marked it settled; do not assume it ran or did not run."
)


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


def answer_the_rest(draft: TurnDraft, remaining: list[ToolCall]) -> None:
    """Answer every call a failure left unanswered in ``draft`` (the interrupted answer's
    remaining calls, or a later answer's), so the history stays valid for any chat API."""
    asked = [m for m in draft.new_messages if isinstance(m, AssistantMessage)]
    calls = [*remaining, *(c for m in asked for c in m.tool_calls)]
    answered = {m.tool_call_id for m in draft.new_messages if isinstance(m, ToolMessage)}
    for call in calls:
        if call.id not in answered:
            draft.answer_unexecuted(call, "the turn failed before it ran")


def new_pending(draft: TurnDraft, session_id: str, run_id: str) -> PendingToolCall | None:
    """The pending-call record of a turn that stopped at a call needing approval."""
    if draft.interrupt is None:
        return None
    call, remaining, timeout = draft.interrupt
    now = utcnow()
    return PendingToolCall(
        interrupt_id=new_id("int"),
        session_id=session_id,
        run_id=run_id,
        tool_call_id=call.id,
        tool_name=call.name,
        tool_args=dict(call.arguments),
        created_at=now,
        updated_at=now,
        expires_at=now + timedelta(seconds=timeout) if timeout is not None else None,
        remaining_calls=remaining,
    )


def before_turn(draft: TurnDraft, call: PendingToolCall | None, session_id: str) -> None:
    """A new turn may not start while a call is unresolved. A call that expired is answered
    (with the calls after it) so the history stays valid, then the turn goes on.

    Raises:
        ConflictError: A call waits for a decision, is being run, is in doubt, or ran without
            its result reaching the model; the message says what to do.
    """
    if call is None or call.status == "REJECTED":
        return
    context = {"session_id": session_id, "run_id": call.run_id, "interrupt_id": call.interrupt_id}
    if call.status == "EXPIRED":
        draft.answer_unexecuted(call.call, "it expired without a decision")
        for later in call.remaining_calls:
            draft.answer_unexecuted(later, "an earlier call of the same answer expired")
        return
    if call.status == "PENDING_APPROVAL":
        why = "is waiting for a decision; resume it (approve or reject) before the next turn"
    elif call.in_doubt:
        why = (
            "is in doubt: the process running it stopped without reporting a result; settle "
            "it with manager.settle(session_id, interrupt_id, result=...) before the next turn"
        )
    elif call.status == "APPROVED_EXECUTING":
        why = f"is being run by {call.executor}; wait for its turn to finish"
    else:  # EXECUTED, but the turn was never continued
        why = (
            "ran, but its result never reached the model; manager.recover(session_id) (or "
            "session.continue_executed()) continues the turn with it"
        )
    raise ConflictError(f"the call {call.tool_name!r} ({call.interrupt_id}) {why}", **context)


async def find_call(
    store: AsyncStore, session_id: str, interrupt_id: str, run_id: str | None = None
) -> PendingToolCall:
    """The stored call of this session.

    Raises:
        RunNotFoundError: Unknown interrupt, or it belongs to another session (404).
    """
    call = await store.aget_pending(interrupt_id)
    if call is None or call.session_id != session_id:
        raise RunNotFoundError(
            "no such interrupted tool call in this session",
            session_id=session_id,
            run_id=run_id,
            interrupt_id=interrupt_id,
        )
    return call


async def run_approved(
    store: AsyncStore,
    agent: Agent,
    call: PendingToolCall,
    run_id: str,
    choice: Approve,
    *,
    executor: str,
    lease_seconds: float,
) -> ToolMessage:
    """Record the approval (compare-and-set: one winner), run the tool once under an executor
    lease, record its result, and return the tool message."""
    arguments = dict(choice.arguments) if choice.arguments is not None else call.tool_args
    tool = agent.tool_map.get(call.tool_name)
    if tool is not None and choice.arguments is not None:
        tool.validate(arguments)  # edited arguments: a clear error, nothing changes
    if call.previously_executed and not choice.rerun:
        raise ConflictError(
            f"this call already ran before a rollback (as {call.previous_interrupt_id}); "
            "approve it with Approve(rerun=True) to run it again, or reject it",
            session_id=call.session_id,
            interrupt_id=call.interrupt_id,
        )
    decided: dict[str, Any] = {"kind": "approve", "arguments": arguments}
    await store.adecide_pending(
        session_id=call.session_id,
        run_id=run_id,
        interrupt_id=call.interrupt_id,
        to_status="APPROVED_EXECUTING",
        decision=decided,
        executor=executor,
        lease_seconds=lease_seconds,
    )
    # The winner, and only the winner, runs the tool: once, renewing its executor lease.
    executed = ToolCall(id=call.tool_call_id, name=call.tool_name, arguments=arguments)
    # The renewal runs in a thread of its own (while the tool may block the loop): sync store.
    sync = store.sync_store
    renew = lambda: sync.renew_execution(call.interrupt_id, executor, ttl=lease_seconds)  # noqa: E731
    with keep_alive(renew, lease_seconds, "executor"):
        outcome = await run_tool_call(executed, agent.tool_map)
    await store.adecide_pending(
        session_id=call.session_id,
        run_id=run_id,
        interrupt_id=call.interrupt_id,
        from_status="APPROVED_EXECUTING",
        to_status="EXECUTED",
        result=outcome.message.content,
    )
    return outcome.message


async def reject_call(
    store: AsyncStore, call: PendingToolCall, run_id: str, choice: Reject
) -> ToolMessage:
    """Record the rejection (compare-and-set) and return the tool message the model sees."""
    await store.adecide_pending(
        session_id=call.session_id,
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


async def settle_call(store: AsyncStore, call: PendingToolCall, result: str | None) -> ToolMessage:
    """Resolve an in-doubt call (``APPROVED_EXECUTING`` → ``EXECUTED``, compare-and-set: one
    winner) with the result a person supplies, or an "outcome unknown" error.

    Raises:
        ConflictError: The call is not in doubt (still being run, or already resolved).
    """
    context = {"session_id": call.session_id, "interrupt_id": call.interrupt_id}
    if call.status != "APPROVED_EXECUTING":
        raise ConflictError(
            f"the call is {call.status}, not in doubt; only an approved call whose executor "
            "stopped can be settled (already settled?)",
            **context,
        )
    if not call.in_doubt:
        until = call.executor_expires_at.isoformat() if call.executor_expires_at else "?"
        raise ConflictError(
            f"the call is still being run by {call.executor} (lease until {until}); it is not "
            "in doubt yet",
            **context,
        )
    text = UNKNOWN_OUTCOME if result is None else str(result)
    await store.adecide_pending(
        session_id=call.session_id,
        run_id=call.run_id,
        interrupt_id=call.interrupt_id,
        from_status="APPROVED_EXECUTING",
        to_status="EXECUTED",
        result=text,
    )
    return ToolMessage(
        content=text, tool_call_id=call.tool_call_id, name=call.tool_name, is_error=result is None
    )

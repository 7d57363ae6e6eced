"""What the approval views and magics share, without widgets: find a call, resume it, describe
the outcome.

:func:`resume_call` runs ``manager.resume(...)`` and turns every way it can end into an
:class:`ApprovalOutcome` — the tool's result and the turn's reply, or a clear line for a
conflict (409), an expiry (410), an unknown call (404) or arguments the tool rejects (the call
stays pending). The magics import this module, so it must not import ipywidgets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from agcore_lab.agent.approval import Approve, Reject
from agcore_lab.errors import (
    AgcoreError,
    ConflictError,
    GoneError,
    InvalidInputError,
    NotFoundError,
    ProblemError,
)
from agcore_lab.ids import utcnow
from agcore_lab.store._approvals import RunNotFoundError

if TYPE_CHECKING:
    from agcore_lab.agent.events import TurnResult
    from agcore_lab.engine.manager import SessionManager
    from agcore_lab.store.pending import PendingToolCall

__all__ = [
    "ApprovalOutcome",
    "OutcomeKind",
    "find_call",
    "outcome_of_error",
    "outcome_of_result",
    "parse_arguments",
    "resolved_elsewhere",
    "resume_call",
    "settle_call",
    "time_left",
]

OutcomeKind = Literal[
    "executed",
    "rejected",
    "settled",
    "conflict",
    "expired",
    "not_found",
    "invalid",
    "failed",
    "resolved",
]
MAX_SHOWN = 500  # characters of a tool result or reply in one outcome line


@dataclass(frozen=True)
class ApprovalOutcome:
    """How a decision on one pending call ended.

    Attributes:
        interrupt_id: The call.
        kind: ``executed`` (approved, the tool ran), ``rejected``, ``settled`` (an in-doubt
            call resolved by a person), ``conflict`` (409: another resume or settle won, or a
            re-run needs confirming), ``expired`` (410), ``not_found`` (404),
            ``invalid`` (arguments the tool rejects; the call stays pending), ``failed``
            (another error), ``resolved`` (decided elsewhere, seen on a reload).
        text: One line for people (the status line, the magics).
        title: The short first line of :attr:`text` (the panel shows the result and the reply
            under it).
        status: The HTTP status of an error (409, 410, 404, 422), else ``None``.
        tool_result: What the tool returned, when it ran.
        reply: The turn's final reply after the decision.
        waiting_again: The next call of the same turn waiting for approval, if any.
    """

    interrupt_id: str
    kind: OutcomeKind
    text: str
    title: str = ""
    status: int | None = None
    tool_result: str | None = None
    reply: str | None = None
    waiting_again: str | None = None


def _cut(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + f" … ({len(text)} characters)"


def parse_arguments(text: str) -> dict[str, Any]:
    """Edited arguments as typed: a JSON object.

    Raises:
        InvalidInputError: Not JSON, or not an object.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"the arguments are not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(value, dict):
        raise InvalidInputError(
            'the arguments must be a JSON object, e.g. {"to": "u2", "amount": 100}'
        )
    return value


def find_call(manager: SessionManager, interrupt_id: str) -> PendingToolCall:
    """The stored call of ``interrupt_id`` (its session and run come with it).

    Raises:
        RunNotFoundError: No such call in the manager's store (404).
    """
    call = manager.store.get_pending(interrupt_id)
    if call is None:
        raise RunNotFoundError(
            f"no tool call {interrupt_id!r} waits for approval in this store; "
            "list them with %agcore approvals or manager.pending_calls()",
            interrupt_id=interrupt_id,
        )
    return call


def time_left(call: PendingToolCall, now: datetime | None = None) -> str:
    """``"expires in 4 min 12 s"``, ``"expired"`` or ``"no expiry"`` (for pending calls)."""
    if call.status == "EXPIRED":
        return "expired"
    if call.expires_at is None:
        return "no expiry"
    seconds = int((call.expires_at - (now or utcnow())).total_seconds() + 0.999)
    if seconds <= 0:
        return "expired"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"expires in {hours} h {minutes} min"
    if minutes:
        return f"expires in {minutes} min {secs} s"
    return f"expires in {secs} s"


def outcome_of_result(
    call: PendingToolCall, decision: Approve | Reject, result: TurnResult
) -> ApprovalOutcome:
    """The outcome of a resume that went through."""
    again = result.pending_tool_call
    waiting = again.interrupt_id if again is not None else None
    tail = (
        f"; the turn waits again, for {again.tool_name} ({again.interrupt_id})"
        if again is not None
        else f"; reply: {_cut(result.reply)}"
    )
    if isinstance(decision, Reject):
        reason = decision.reason or "no reason given"
        title = f"Rejected {call.tool_name} ({reason})"
        return ApprovalOutcome(
            call.interrupt_id,
            "rejected",
            title + tail,
            title,
            reply=result.reply,
            waiting_again=waiting,
        )
    answer = next(
        (m for m in result.tool_results if m.tool_call_id == call.tool_call_id),
        result.tool_results[0] if result.tool_results else None,
    )
    output = answer.content if answer is not None else ""
    ran = "failed" if answer is not None and answer.is_error else "ran"
    edited = " with edited arguments" if decision.arguments is not None else ""
    title = f"Approved{edited}: {call.tool_name} {ran}"
    return ApprovalOutcome(
        call.interrupt_id,
        "executed",
        f"{title} → {_cut(output)}{tail}",
        title,
        tool_result=output,
        reply=result.reply,
        waiting_again=waiting,
    )


def outcome_of_error(call: PendingToolCall, exc: AgcoreError) -> ApprovalOutcome:
    """The outcome of a resume that raised an engine error."""
    detail = " ".join(exc.message.split())
    status = exc.status if isinstance(exc, ProblemError) else None
    if isinstance(exc, GoneError):
        return ApprovalOutcome(
            call.interrupt_id, "expired", f"410 Gone: this call expired — {detail}", status=status
        )
    if isinstance(exc, ConflictError):
        return ApprovalOutcome(
            call.interrupt_id, "conflict", f"409 Conflict: {detail}", status=status
        )
    if isinstance(exc, NotFoundError):
        return ApprovalOutcome(
            call.interrupt_id, "not_found", f"404 Not found: {detail}", status=status
        )
    if isinstance(exc, InvalidInputError):
        return ApprovalOutcome(
            call.interrupt_id, "invalid", f"Not sent: {detail} (the call still waits)", status=422
        )
    return ApprovalOutcome(call.interrupt_id, "failed", f"Failed: {detail}", status=status)


def resolved_elsewhere(call: PendingToolCall) -> ApprovalOutcome:
    """A call decided by someone else (a cell, a magic, another process), seen on a reload."""
    what = {
        "APPROVED_EXECUTING": "approved elsewhere; the tool is running",
        "EXECUTED": "approved elsewhere; the tool ran",
        "REJECTED": "rejected elsewhere",
        "EXPIRED": "expired without a decision (410 Gone)",
    }.get(call.status, call.status)
    reason = call.decision.get("reason") if call.decision else None
    if call.status == "REJECTED" and reason:
        what += f" ({reason})"
    result = f" → {_cut(str(call.result))}" if call.result is not None else ""
    kind: OutcomeKind = "expired" if call.status == "EXPIRED" else "resolved"
    return ApprovalOutcome(
        call.interrupt_id,
        kind,
        f"{call.status}: {what}{result}",
        f"{call.status}: {what}",
        status=410 if kind == "expired" else None,
        tool_result=None if call.result is None else str(call.result),
    )


async def resume_call(
    manager: SessionManager, call: PendingToolCall, decision: Approve | Reject
) -> ApprovalOutcome:
    """``manager.resume(...)`` for ``call``; engine errors become outcomes, never raise."""
    try:
        result = await manager.resume(call.session_id, call.run_id, call.interrupt_id, decision)
    except AgcoreError as exc:
        return outcome_of_error(call, exc)
    return outcome_of_result(call, decision, result)


def outcome_of_settle(
    call: PendingToolCall, given: str | None, result: TurnResult
) -> ApprovalOutcome:
    """The outcome of a settle that went through: what the model was told, and the reply."""
    again = result.pending_tool_call
    waiting = again.interrupt_id if again is not None else None
    answer = next((m for m in result.tool_results if m.tool_call_id == call.tool_call_id), None)
    told = answer.content if answer is not None else (given or "")
    how = "with what happened" if given is not None else "as outcome unknown"
    title = f"Settled {call.tool_name} {how}"
    tail = (
        f"; the turn waits again, for {again.tool_name} ({again.interrupt_id})"
        if again is not None
        else f"; reply: {_cut(result.reply)}"
    )
    return ApprovalOutcome(
        call.interrupt_id,
        "settled",
        f"{title} → {_cut(told)}{tail}",
        title,
        tool_result=told,
        reply=result.reply,
        waiting_again=waiting,
    )


async def settle_call(
    manager: SessionManager, call: PendingToolCall, result: str | None
) -> ApprovalOutcome:
    """``manager.settle(...)`` for an in-doubt ``call`` with what a person knows (``None``:
    the outcome is unknown); engine errors (a 409 when it was settled already or is still
    running) become outcomes, never raise."""
    given = result.strip() if result is not None and result.strip() else None
    try:
        turn = await manager.settle(call.session_id, call.interrupt_id, result=given)
    except AgcoreError as exc:
        return outcome_of_error(call, exc)
    return outcome_of_settle(call, given, turn)

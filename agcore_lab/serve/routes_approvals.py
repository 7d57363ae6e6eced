"""Human approval over HTTP: the pending calls across sessions, one call, and resume.

``POST /sessions/{sid}/runs/{run}/interrupts/{interrupt}/resume`` is the design's route: of
any number of concurrent resumes of one call exactly one gets 200 and runs the tool; the rest
get 409. An expired call is 410 (and is stored as EXPIRED), an unknown one 404.

An approved call whose executor died while the tool ran is *in doubt*: ``GET /pending`` lists
it (``in_doubt: true``, or only those with ``?in_doubt=true``), and ``POST .../settle``
resolves it with what a person knows and continues the turn (409 if it is not in doubt, or was
settled already; one winner among concurrent settles).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import Response

from agcore_lab.agent.approval import Approve, Reject
from agcore_lab.agent.events import TurnResult
from agcore_lab.errors import InvalidInputError
from agcore_lab.ids import utcnow
from agcore_lab.serve.context import ServeContext, authorized, page_bounds
from agcore_lab.serve.openapi import ERRORS, ID_PATTERN
from agcore_lab.serve.problems import json_response
from agcore_lab.serve.schemas import Page, PendingDetail, ResumeRequest, SettleRequest
from agcore_lab.store._approvals import RunNotFoundError
from agcore_lab.store.pending import PendingToolCall

__all__ = ["router"]

router = APIRouter(tags=["approvals"], responses=ERRORS)
Ctx = Annotated[ServeContext, Depends(authorized)]
Id = Annotated[str, Path(pattern=ID_PATTERN)]


def detail_of(call: PendingToolCall) -> PendingDetail:
    """A call with its state and the seconds it has left."""
    left = None
    if call.expires_at is not None and call.status == "PENDING_APPROVAL":
        left = max(0.0, (call.expires_at - utcnow()).total_seconds())
    return PendingDetail(
        call=call, state=call.to_state(), seconds_left=left, in_doubt=call.in_doubt
    )


@router.get("/pending", response_model=Page[PendingDetail])
async def list_pending(
    ctx: Ctx,
    session_id: Annotated[str | None, Query(pattern=ID_PATTERN)] = None,
    include_resolved: bool = False,
    in_doubt: bool = False,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
    limit: Annotated[int | None, Query(ge=1, le=500)] = None,
) -> Page[PendingDetail]:
    """Tool calls waiting for a decision and approved calls in doubt, across sessions, oldest
    first (overdue ones are reported, and stored, as EXPIRED). ``include_resolved`` adds the
    decided and expired; ``in_doubt`` keeps only the calls to settle."""
    start, size = page_bounds(ctx, offset, limit)
    if session_id is not None:
        ctx.manager.require_stored(session_id)
    calls = ctx.manager.pending_calls(session_id, include_resolved=include_resolved)
    if in_doubt:
        calls = [c for c in calls if c.in_doubt]
    items = [detail_of(c) for c in calls[start : start + size]]
    return Page[PendingDetail](items=items, total=len(calls), offset=start, limit=size)


@router.get(
    "/sessions/{session_id}/runs/{run_id}/interrupts/{interrupt_id}",
    response_model=PendingDetail,
)
async def get_interrupt(session_id: Id, run_id: Id, interrupt_id: Id, ctx: Ctx) -> PendingDetail:
    """One call: its record and its versioned state."""
    context = {"session_id": session_id, "run_id": run_id, "interrupt_id": interrupt_id}
    ctx.manager.require_stored(session_id)
    listed = {c.interrupt_id: c for c in ctx.manager.pending_calls(session_id)}  # marks expiry
    call = listed.get(interrupt_id) or ctx.manager.store.get_pending(interrupt_id)
    if call is None or call.session_id != session_id or call.run_id != run_id:
        raise RunNotFoundError("no such interrupted tool call in this session run", **context)
    return detail_of(call)


@router.post(
    "/sessions/{session_id}/runs/{run_id}/interrupts/{interrupt_id}/resume",
    response_model=TurnResult,
)
async def resume(
    session_id: Id, run_id: Id, interrupt_id: Id, body: ResumeRequest, ctx: Ctx
) -> Response:
    """Decide the call and continue its turn: ``approve`` (optionally with edited
    ``arguments``) runs the tool exactly once; ``reject`` (with a ``reason``) does not."""
    decision: Approve | Reject
    if body.decision == "approve":
        decision = Approve(arguments=body.arguments, rerun=body.rerun)
    else:
        decision = Reject(reason=body.reason or "")
    if body.reason is not None and len(body.reason) > ctx.limits.max_reason_chars:
        raise InvalidInputError(f"the reason is over {ctx.limits.max_reason_chars} characters")
    result = await ctx.runner.call(ctx.manager.resume(session_id, run_id, interrupt_id, decision))
    return json_response(result)


@router.post(
    "/sessions/{session_id}/runs/{run_id}/interrupts/{interrupt_id}/settle",
    response_model=TurnResult,
)
async def settle(
    session_id: Id, run_id: Id, interrupt_id: Id, body: SettleRequest, ctx: Ctx
) -> Response:
    """Resolve an in-doubt call (approved; its executor died while the tool ran) with the
    ``result`` a person supplies — or an "outcome unknown" error — and continue its turn."""
    call = ctx.manager.store.get_pending(interrupt_id)
    if call is None or call.session_id != session_id or call.run_id != run_id:
        raise RunNotFoundError(
            "no such interrupted tool call in this session run",
            session_id=session_id,
            run_id=run_id,
            interrupt_id=interrupt_id,
        )
    result = await ctx.runner.call(ctx.manager.settle(session_id, interrupt_id, result=body.result))
    return json_response(result)

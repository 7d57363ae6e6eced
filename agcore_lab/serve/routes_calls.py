"""The model-call log over HTTP: what the model saw in every request of a session.

``GET /sessions/{sid}/calls`` lists a session's calls oldest first (paged; ``turn_index`` and
``last`` filter as ``manager.model_calls`` does), ``GET /calls/{call_id}`` is one call with its
exact request messages, tools, response, usage, cost and latency.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from agcore_lab.llm.call_record import ModelCall
from agcore_lab.serve.context import ServeContext, authorized, page_bounds
from agcore_lab.serve.openapi import ERRORS, ID_PATTERN
from agcore_lab.serve.schemas import Page

__all__ = ["router"]

router = APIRouter(tags=["model calls"], responses=ERRORS)
Ctx = Annotated[ServeContext, Depends(authorized)]
Id = Annotated[str, Path(pattern=ID_PATTERN)]


@router.get("/sessions/{session_id}/calls", response_model=Page[ModelCall])
async def list_calls(
    session_id: Id,
    ctx: Ctx,
    turn_index: Annotated[int | None, Query(ge=0, le=1_000_000_000)] = None,
    last: Annotated[int | None, Query(ge=1, le=100_000)] = None,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
    limit: Annotated[int | None, Query(ge=1, le=500)] = None,
) -> Page[ModelCall]:
    """The session's model calls, oldest first (one per request the session sent)."""
    start, size = page_bounds(ctx, offset, limit)
    ctx.manager.require_stored(session_id)
    calls = await ctx.runner.call(
        ctx.manager.model_calls(session_id, turn_index=turn_index, last=last)
    )
    return Page[ModelCall](
        items=calls[start : start + size], total=len(calls), offset=start, limit=size
    )


@router.get("/calls/{call_id}", response_model=ModelCall)
async def get_call(call_id: Id, ctx: Ctx) -> ModelCall:
    """One model call: the exact request, the response, usage, cost and latency."""
    return await ctx.runner.call(ctx.manager.get_call(call_id))

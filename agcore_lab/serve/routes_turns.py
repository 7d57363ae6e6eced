"""Turns: ``POST /sessions/{id}/turns`` as JSON, or streamed as server-sent events.

With ``Accept: text/event-stream`` the turn streams: one SSE event per engine event
(``text_delta``, ``tool_call_delta``, ``tool_call_started``, ``tool_result``) and finally
``turn_done`` carrying the :class:`~agcore_lab.TurnResult` — sent only once the turn is
committed. An error after the stream started is an ``error`` event carrying a problem document.
The session is looked up before the stream starts, so an unknown session is still a plain 404.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import Response, StreamingResponse

from agcore_lab.agent.events import TurnResult
from agcore_lab.errors import InvalidInputError
from agcore_lab.serve.context import ServeContext, authorized
from agcore_lab.serve.openapi import ERRORS, ID_PATTERN
from agcore_lab.serve.problems import json_response, to_problem
from agcore_lab.serve.schemas import TurnRequest

__all__ = ["router"]

router = APIRouter(tags=["turns"], responses=ERRORS)
Ctx = Annotated[ServeContext, Depends(authorized)]
SessionId = Annotated[str, Path(pattern=ID_PATTERN)]
logger = logging.getLogger("agcore_lab.serve")


def _sse(event: str, data: str) -> bytes:
    return f"event: {event}\ndata: {data}\n\n".encode()


def wants_stream(request: Request) -> bool:
    """Whether the client asked for server-sent events."""
    return "text/event-stream" in request.headers.get("accept", "").lower()


@router.post(
    "/sessions/{session_id}/turns",
    response_model=TurnResult,
    responses={200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}}},
)
async def submit_turn(
    session_id: SessionId, body: TurnRequest, request: Request, ctx: Ctx
) -> Response:
    """Run one turn; the result, or (``Accept: text/event-stream``) its events as they come.

    An interrupted turn (a tool waiting for approval) returns ``status: "interrupted"`` and
    ``pending_tool_call``; resume it with ``POST .../resume``.
    """
    if len(body.text) > ctx.limits.max_text_chars:
        raise InvalidInputError(
            f"the text is {len(body.text)} characters; the limit is {ctx.limits.max_text_chars}"
        )
    manager = ctx.manager
    await ctx.runner.call(manager.get_or_recover(session_id))  # 404 before any stream starts
    if not wants_stream(request):
        result = await ctx.runner.call(manager.submit_turn(session_id, body.text))
        return json_response(result)
    events = ctx.runner.stream(manager.submit_turn_stream(session_id, body.text))
    return StreamingResponse(
        _event_stream(events, request.url.path),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def _event_stream(events: AsyncIterator[object], path: str) -> AsyncIterator[bytes]:
    try:
        async for event in events:
            kind = getattr(event, "kind", "event")
            dump = getattr(event, "model_dump_json", None)
            yield _sse(kind, dump() if dump is not None else json.dumps(str(event)))
    except Exception as exc:  # the status line is gone: report the problem in the stream
        body = to_problem(exc, path)
        if body["status"] >= 500:
            logger.error("streamed turn failed on %s", path, exc_info=exc)
        yield _sse("error", json.dumps(body, default=str))
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()

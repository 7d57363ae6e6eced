"""Checkpoints: list, get, take, rollback, fork, export a snapshot, import one."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query

from agcore_lab.engine.snapshot import SessionSnapshot
from agcore_lab.errors import InvalidInputError
from agcore_lab.serve.context import ServeContext, authorized, page_bounds
from agcore_lab.serve.openapi import ERRORS, ID_PATTERN
from agcore_lab.serve.schemas import CheckpointRequest, CreatedSession, Page
from agcore_lab.store.base import CkptMeta

__all__ = ["router"]

router = APIRouter(tags=["checkpoints"], responses=ERRORS)
Ctx = Annotated[ServeContext, Depends(authorized)]
SessionId = Annotated[str, Path(pattern=ID_PATTERN)]
CkptId = Annotated[str, Path(pattern=ID_PATTERN, description="a checkpoint id (ckpt_...)")]


@router.get("/sessions/{session_id}/checkpoints", response_model=Page[CkptMeta])
async def list_checkpoints(
    session_id: SessionId,
    ctx: Ctx,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
    limit: Annotated[int | None, Query(ge=1, le=500)] = None,
    before: Annotated[
        str | None,
        Query(
            pattern=ID_PATTERN,
            description="only the checkpoints older than this one (a ckpt_... id): pass the "
            "last id of a page to get the next",
        ),
    ] = None,
) -> Page[CkptMeta]:
    """The session's checkpoints, newest first (older than ``before`` when given)."""
    start, size = page_bounds(ctx, offset, limit)
    ctx.manager.require_stored(session_id)
    metas = await ctx.runner.call(
        ctx.manager.checkpointer.list_checkpoints(session_id, before=before)
    )
    return Page[CkptMeta](
        items=metas[start : start + size], total=len(metas), offset=start, limit=size
    )


@router.post("/sessions/{session_id}/checkpoints", status_code=201, response_model=CkptMeta)
async def take_checkpoint(
    session_id: SessionId, ctx: Ctx, body: CheckpointRequest | None = None
) -> CkptMeta:
    """Checkpoint the session now (``label`` optional)."""
    label = body.label if body is not None else None
    ckpt_id = await ctx.runner.call(ctx.manager.checkpoint(session_id, label))
    return await ctx.runner.call(ctx.manager.checkpointer.get_checkpoint(ckpt_id, session_id))


@router.get("/sessions/{session_id}/checkpoints/{ckpt_id}", response_model=CkptMeta)
async def get_checkpoint(session_id: SessionId, ckpt_id: CkptId, ctx: Ctx) -> CkptMeta:
    """One checkpoint of the session."""
    ctx.manager.require_stored(session_id)
    return await ctx.runner.call(ctx.manager.checkpointer.get_checkpoint(ckpt_id, session_id))


@router.post("/sessions/{session_id}/checkpoints/{ckpt_id}/rollback", response_model=CkptMeta)
async def rollback(session_id: SessionId, ckpt_id: CkptId, ctx: Ctx) -> CkptMeta:
    """Return the session to the checkpoint; the answer is the rollback's own checkpoint."""
    cp = ctx.manager.checkpointer
    ctx.manager.require_stored(session_id)
    await ctx.runner.call(cp.get_checkpoint(ckpt_id, session_id))  # 404 / 400 before locking
    marker = await ctx.runner.call(cp.rollback(session_id, ckpt_id))
    return await ctx.runner.call(cp.get_checkpoint(marker, session_id))


@router.post(
    "/sessions/{session_id}/checkpoints/{ckpt_id}/fork",
    status_code=201,
    response_model=CreatedSession,
)
async def fork(session_id: SessionId, ckpt_id: CkptId, ctx: Ctx) -> CreatedSession:
    """Start a child session from the checkpoint."""
    child = await ctx.runner.call(ctx.manager.checkpointer.fork(session_id, ckpt_id))
    record = ctx.manager.require_stored(child)
    return CreatedSession(session_id=child, agent=record.agent_name, parent_id=session_id)


@router.get("/sessions/{session_id}/checkpoints/{ckpt_id}/snapshot", response_model=SessionSnapshot)
async def export_snapshot(session_id: SessionId, ckpt_id: CkptId, ctx: Ctx) -> SessionSnapshot:
    """The checkpoint's state as a self-contained, versioned snapshot (``version: 2``)."""
    cp = ctx.manager.checkpointer
    ctx.manager.require_stored(session_id)
    await ctx.runner.call(cp.get_checkpoint(ckpt_id, session_id))
    return await ctx.runner.call(cp.export_snapshot(ckpt_id))


@router.post("/snapshots", status_code=201, response_model=CreatedSession)
async def import_snapshot(
    ctx: Ctx,
    snapshot: Annotated[dict[str, Any], Body(description="a SessionSnapshot (version 2)")],
) -> CreatedSession:
    """Create a session from a snapshot. A snapshot of another version, with missing or
    wrongly typed fields, or with dangling references, is a 422 and writes nothing."""
    try:  # a JSON object the engine validates itself, so its 422 is the design's 422
        text = json.dumps(snapshot, allow_nan=False)
    except ValueError as exc:
        raise InvalidInputError("the snapshot holds NaN or Infinity numbers") from exc
    sid = await ctx.runner.call(ctx.manager.checkpointer.import_snapshot(text))
    record = ctx.manager.require_stored(sid)
    return CreatedSession(session_id=sid, agent=record.agent_name, parent_id=record.parent_id)

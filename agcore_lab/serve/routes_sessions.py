"""Sessions: create, list, get, tree, children, destroy."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from agcore_lab.engine.manager import AgentNotFoundError
from agcore_lab.serve.context import ServeContext, authorized, page_bounds
from agcore_lab.serve.openapi import ERRORS, ID_PATTERN
from agcore_lab.serve.schemas import CreatedSession, CreateSession, Page, SessionInfo, TreeNode

__all__ = ["router"]

router = APIRouter(tags=["sessions"], responses=ERRORS)
Ctx = Annotated[ServeContext, Depends(authorized)]
SessionId = Annotated[str, Path(pattern=ID_PATTERN, description="a session id (ses_...)")]
Offset = Annotated[int, Query(ge=0, le=1_000_000_000)]
Limit = Annotated[int | None, Query(ge=1, le=500)]


def _info(ctx: ServeContext, session_id: str) -> SessionInfo:
    record = ctx.manager.require_stored(session_id)
    return SessionInfo.of(
        record,
        live=session_id in ctx.manager.live_ids(),
        pending=ctx.manager.pending_calls(session_id),
    )


@router.post("/sessions", status_code=201, response_model=CreatedSession)
async def create_session(body: CreateSession, ctx: Ctx) -> CreatedSession:
    """Create a session for a registered agent (a child of ``parent_id`` if given)."""
    agent = ctx.manager.agents.get(body.agent)
    if agent is None:
        raise AgentNotFoundError(
            f"no agent named {body.agent!r}; registered: {sorted(ctx.manager.agents)}",
            agent_name=body.agent,
        )
    if body.parent_id is None:
        sid = await ctx.runner.call(ctx.manager.create(agent))
    else:
        sid = await ctx.runner.call(ctx.manager.create_child(body.parent_id, agent))
    return CreatedSession(session_id=sid, agent=agent.name, parent_id=body.parent_id)


@router.get("/sessions", response_model=Page[SessionInfo])
async def list_sessions(ctx: Ctx, offset: Offset = 0, limit: Limit = None) -> Page[SessionInfo]:
    """The stored sessions, oldest first, one page at a time."""
    start, size = page_bounds(ctx, offset, limit)
    records = ctx.manager.store.list_sessions()
    live = set(ctx.manager.live_ids())
    items = [
        SessionInfo.of(r, live=r.session_id in live, pending=[])
        for r in records[start : start + size]
    ]
    return Page[SessionInfo](items=items, total=len(records), offset=start, limit=size)


@router.get("/sessions/{session_id}", response_model=SessionInfo)
async def get_session(session_id: SessionId, ctx: Ctx) -> SessionInfo:
    """One session: its scalar state and the calls waiting for a decision."""
    return _info(ctx, session_id)


@router.get("/sessions/{session_id}/tree", response_model=TreeNode)
async def session_tree(session_id: SessionId, ctx: Ctx) -> TreeNode:
    """The subtree under the session."""
    tree = await ctx.runner.call(ctx.manager.tree(session_id))
    return TreeNode.of(tree.roots[0])


@router.get("/sessions/{session_id}/children", response_model=list[str])
async def session_children(session_id: SessionId, ctx: Ctx) -> list[str]:
    """Ids of the session's children, oldest first."""
    return await ctx.runner.call(ctx.manager.children(session_id))


@router.delete("/sessions/{session_id}", status_code=204, response_class=Response)
async def destroy_session(session_id: SessionId, ctx: Ctx) -> Response:
    """Destroy the session (its children stay, as orphans)."""
    await ctx.runner.call(ctx.manager.destroy(session_id))
    return Response(status_code=204)

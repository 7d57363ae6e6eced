"""What every route needs: the manager, the engine runner, the limits and the authenticator."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from agcore_lab.engine.manager import SessionManager
from agcore_lab.errors import InvalidInputError
from agcore_lab.serve.auth import Authenticator, AuthFailure
from agcore_lab.serve.engine import EngineRunner
from agcore_lab.serve.limits import Limits

__all__ = ["ServeContext", "authorized", "context", "page_bounds"]


@dataclass(frozen=True)
class ServeContext:
    """The app's state (``app.state.agcore``)."""

    manager: SessionManager
    runner: EngineRunner
    limits: Limits
    auth: Authenticator


def context(request: Request) -> ServeContext:
    """The app's :class:`ServeContext` (a FastAPI dependency)."""
    ctx: ServeContext = request.app.state.agcore
    return ctx


async def authorized(request: Request) -> ServeContext:
    """The context, once the request is authenticated (a FastAPI dependency).

    ``async`` on purpose: FastAPI runs a plain ``def`` dependency in a worker thread, a hop
    that cost more than the whole turn on ScriptedModel (``bench/serve.py``).
    """
    ctx = context(request)
    try:
        ctx.auth.check(request)
    except AuthFailure as failure:
        from fastapi import HTTPException

        raise HTTPException(failure.status, failure.detail) from None
    return ctx


def page_bounds(ctx: ServeContext, offset: int, limit: int | None) -> tuple[int, int]:
    """Check a listing's ``offset`` / ``limit`` against the limits (400 when out of range)."""
    size = ctx.limits.default_page if limit is None else limit
    if not 1 <= size <= ctx.limits.max_page:
        raise InvalidInputError(f"limit must be between 1 and {ctx.limits.max_page}", limit=size)
    if offset < 0:
        raise InvalidInputError("offset must be 0 or more", offset=offset)
    return offset, size

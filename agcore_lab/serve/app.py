"""``create_app(manager)``: the engine as an ASGI app (FastAPI), for uvicorn or embedding."""

from __future__ import annotations

import os
from typing import Any

from agcore_lab.engine.manager import SessionManager
from agcore_lab.serve.auth import Authenticator
from agcore_lab.serve.engine import EngineLoop, EngineRunner
from agcore_lab.serve.limits import Limits

__all__ = ["create_app"]


def create_app(
    manager: SessionManager,
    *,
    token: str | None = None,
    no_auth: bool = False,
    limits: Limits | None = None,
    engine_loop: EngineLoop = "bridge",
) -> Any:
    """Build the HTTP service for ``manager``.

    Routes: sessions, turns (JSON or server-sent events), checkpoints and snapshots, pending
    calls and resume, the approval page (``GET /approve``) and ``GET /health``. Every error
    is ``application/problem+json``. The OpenAPI document is at ``/openapi.json``.

    Args:
        manager: The manager whose sessions the service serves (its registered agents are
            the ones ``POST /sessions`` can start).
        token: The bearer token every request must carry (except ``/health``); by default
            ``AGCORE_TOKEN`` from the environment.
        no_auth: Serve without a token. Only for loopback hosts: ``agcore-lab serve`` and
            ``%agcore serve`` refuse it on any other host.
        limits: Request size, text length and page bounds (see :class:`Limits`).
        engine_loop: Where engine coroutines run: ``"bridge"`` (agcore_lab's background loop,
            safe when the manager is also used from sync code or a notebook) or ``"app"``
            (the server's own loop, when the server owns the manager). See
            :mod:`agcore_lab.serve.engine`.

    Returns:
        A FastAPI application.

    Raises:
        ConfigurationError: Neither a token (nor ``AGCORE_TOKEN``) nor ``no_auth``, or both.

    Example:
        >>> from agcore_lab import SessionManager, SqliteStore
        >>> app = create_app(SessionManager(SqliteStore(":memory:")), token="s3cret")
        >>> sorted(p for p in app.openapi()["paths"] if p.startswith("/sessions/{session_id}/t"))
        ['/sessions/{session_id}/tree', '/sessions/{session_id}/turns']
    """
    from fastapi import FastAPI
    from fastapi.security import HTTPBearer

    from agcore_lab import __version__
    from agcore_lab.serve import (
        routes_approvals,
        routes_calls,
        routes_checkpoints,
        routes_page,
        routes_sessions,
        routes_turns,
    )
    from agcore_lab.serve.body import BodyLimit
    from agcore_lab.serve.context import ServeContext
    from agcore_lab.serve.problems import install_problem_handlers

    if token is None and not no_auth:
        token = os.environ.get("AGCORE_TOKEN") or None
    auth = Authenticator(token=token, no_auth=no_auth)
    bounds = limits or Limits()
    app = FastAPI(
        title="agcore-lab",
        version=__version__,
        description="Sessions, turns, checkpoints and human approval of tool calls over HTTP.",
        dependencies=[],
    )
    app.state.agcore = ServeContext(
        manager=manager, runner=EngineRunner(engine_loop), limits=bounds, auth=auth
    )
    install_problem_handlers(app)
    bearer = HTTPBearer(auto_error=False, description="the service token")

    @app.get("/health", tags=["service"])
    async def health() -> dict[str, str]:
        """Liveness: no authentication, no engine call."""
        return {"status": "ok"}

    routers = (routes_sessions, routes_turns, routes_checkpoints, routes_approvals, routes_calls)
    for module in routers:
        app.include_router(module.router, dependencies=[_document_security(bearer)])
    app.include_router(routes_page.router)
    app.add_middleware(BodyLimit, max_bytes=bounds.max_body_bytes)
    return app


def _document_security(bearer: Any) -> Any:
    # Declares the bearer scheme in the OpenAPI document; the check itself is
    # ``context.authorized``, which also accepts the approval page's cookie.
    from fastapi import Depends

    return Depends(bearer)

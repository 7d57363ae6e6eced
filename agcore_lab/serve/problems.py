"""Every error as ``application/problem+json`` (RFC 7807), from the package's error tree.

``ProblemError`` subclasses carry their own status (404, 409, 410, 422 — and any subclass added
later, such as a 409 for a stale session, maps with no change here). Other failures map by
family: a usage mistake is 400, a failing model backend 502, a stored record that no longer
validates (a pydantic ``ValidationError`` or a ``JSONDecodeError`` escaping the engine, which
wraps every error of parsing *given* input itself) 422, anything unexpected 500 with no
internals in the body.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response

from agcore_lab.errors import (
    AgcoreError,
    AgentRunError,
    ModelError,
    ProblemError,
    StoredStateError,
    UserError,
)

__all__ = [
    "PROBLEM_TYPE",
    "PROBLEM_CONTENT_TYPE",
    "StoredStateError",
    "install_problem_handlers",
    "json_response",
    "problem",
    "problem_response",
]

PROBLEM_CONTENT_TYPE = "application/problem+json"
PROBLEM_TYPE = "https://agcore-lab.dev/problems/"
logger = logging.getLogger("agcore_lab.serve")

_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    406: "Not acceptable",
    409: "Conflict",
    410: "Gone",
    413: "Request too large",
    415: "Unsupported media type",
    422: "Unprocessable entity",
    500: "Internal error",
    502: "Bad gateway",
}


def problem(status: int, detail: str, *, slug: str | None = None, **extra: Any) -> dict[str, Any]:
    """A problem-details dict for an error that is not an ``AgcoreError``."""
    title = _TITLES.get(status, "Error")
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE + (slug or title.lower().replace(" ", "-")),
        "title": title,
        "status": status,
        "detail": detail,
    }
    body.update(extra)
    return body


def problem_response(body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    """The HTTP response carrying ``body``."""
    return Response(
        json.dumps(body, ensure_ascii=False, default=str),
        status_code=int(body["status"]),
        media_type=PROBLEM_CONTENT_TYPE,
        headers=headers,
    )


def json_response(model: BaseModel, status: int = 200) -> Response:
    """A pydantic model as a JSON response, serialized once by pydantic itself.

    Turn results are the hot path: returning them as a ``Response`` skips FastAPI's second
    validation of an engine object that is already validated (``bench/serve.py``).
    """
    return Response(model.model_dump_json(), status_code=status, media_type="application/json")


def to_problem(exc: BaseException, instance: str) -> dict[str, Any]:
    """Map any exception to a problem-details dict (``instance``: the request path)."""
    if isinstance(exc, ProblemError):
        return exc.to_problem(instance=instance)
    if isinstance(exc, ValidationError):  # raised by the engine: a stored record is invalid
        stored = StoredStateError(
            "a stored record failed validation: "
            + "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3]
            )
        )
        return stored.to_problem(instance=instance)
    if isinstance(exc, json.JSONDecodeError):  # the engine parses requests itself (422)
        return StoredStateError(f"a stored record is not valid JSON: {exc.msg}").to_problem(
            instance=instance
        )
    if isinstance(exc, UserError):
        return problem(400, str(exc), slug="invalid-input", instance=instance)
    if isinstance(exc, ModelError):
        return problem(502, f"the model backend failed: {exc}", slug="model-error")
    if isinstance(exc, AgentRunError):
        return problem(500, str(exc), slug="agent-run-error", instance=instance)
    if isinstance(exc, AgcoreError):
        return problem(500, f"{type(exc).__name__}: the engine failed", instance=instance)
    return problem(500, "an unexpected error; the server log has the details", instance=instance)


def _status_headers(status: int) -> dict[str, str] | None:
    return {"WWW-Authenticate": 'Bearer realm="agcore-lab"'} if status == 401 else None


async def _on_error(request: Request, exc: Exception) -> Response:
    body = to_problem(exc, request.url.path)
    if body["status"] >= 500:
        logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return problem_response(body)


async def _on_http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
    body = problem(exc.status_code, detail, instance=request.url.path)
    headers = dict(exc.headers or {}) | (_status_headers(exc.status_code) or {})
    return problem_response(body, headers or None)


async def _on_invalid_request(request: Request, exc: Exception) -> Response:
    errors: list[dict[str, Any]] = getattr(exc, "errors", list)()
    parts = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    detail = "malformed request: " + ("; ".join(parts) or "the request could not be read")
    fields = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))}
        for e in errors[:20]
    ]
    body = problem(400, detail, slug="malformed-request", instance=request.url.path, errors=fields)
    return problem_response(body)


def install_problem_handlers(app: Any) -> None:
    """Make every error of ``app`` (a FastAPI app) a problem document."""
    from fastapi.exceptions import RequestValidationError

    app.add_exception_handler(RequestValidationError, _on_invalid_request)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_exception_handler(Exception, _on_error)
    app.add_exception_handler(AgcoreError, _on_error)
    app.add_exception_handler(ValidationError, _on_error)
    app.add_exception_handler(json.JSONDecodeError, _on_error)

"""Bounded request bodies: an ASGI middleware that refuses a body over the limit with 413.

The body is read (at most ``max_bytes`` of it) before the app sees the request, so a handler
never parses a body that is too large and nothing is stored from it.
"""

from __future__ import annotations

import json
from typing import Any

from agcore_lab.serve.problems import PROBLEM_CONTENT_TYPE, problem

__all__ = ["BodyLimit"]

Scope = dict[str, Any]
Message = dict[str, Any]


class BodyLimit:
    """Wraps an ASGI app; a request whose body exceeds ``max_bytes`` gets a 413 problem."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.max_bytes
            except ValueError:
                await self._refuse(scope, send, 400, "the Content-Length header is not a number")
                return
            if too_big:
                await self._refuse(scope, send, 413, self._detail())
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, send, 413, self._detail())
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return dict(await receive())

        await self.app(scope, replay, send)

    def _detail(self) -> str:
        return f"the request body is larger than {self.max_bytes} bytes (the service's limit)"

    async def _refuse(self, scope: Scope, send: Any, status: int, detail: str) -> None:
        body = json.dumps(problem(status, detail, instance=scope.get("path", ""))).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", PROBLEM_CONTENT_TYPE.encode()),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

"""Fixtures for integration tests.

``openai_server``: a real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions wire
format (JSON and Server-Sent Events). Each test scripts it with a queue of behaviours
(``add_json``, ``add_sse``, ``add_cut_stream``, ...); the server records every request it gets.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

# The worker modules are imported by name in spawned processes (see each one's docstring); they
# hold no tests or doctests, and one imports another by name, which only works on their path.
collect_ignore_glob = ["_*_workers.py"]

Behaviour = Callable[["_Handler"], None]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any  # the parsed JSON body
    client_port: int  # tells connections apart: a reused connection keeps its port


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse is visible
    server: _Server

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.owner.requests.append(
            RecordedRequest(
                method="POST",
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=json.loads(raw) if raw else None,
                client_port=self.client_address[1],
            )
        )
        behaviour = self.server.owner.next_behaviour()
        try:
            behaviour(self)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (a timeout test)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet

    def send_head(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: OpenAIServer


class OpenAIServer:
    """A scriptable OpenAI-compatible server running in a background thread.

    Behaviours are used one per request, in order; when the queue is empty the ``fallback``
    behaviour answers (by default an HTTP 599 saying nothing was scripted).
    """

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.stopping = threading.Event()
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self.fallback: Behaviour = self._json_behaviour(599, {"error": "nothing scripted"}, {}, 0)
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()  # wakes handlers that are sleeping in a scripted delay
        self._httpd.shutdown()
        self._httpd.server_close()

    def next_behaviour(self) -> Behaviour:
        with self._lock:
            return self._queue.popleft() if self._queue else self.fallback

    def add(self, behaviour: Behaviour) -> None:
        with self._lock:
            self._queue.append(behaviour)

    def add_json(
        self,
        status: int,
        body: Any,
        *,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
        always: bool = False,
    ) -> None:
        """Answer with a JSON body (after ``delay`` seconds); ``always`` answers every request."""
        behaviour = self._json_behaviour(status, body, headers or {}, delay)
        if always:
            self.fallback = behaviour
        else:
            self.add(behaviour)

    def add_sse(self, chunks: list[Any], *, done: bool = True, raw_events: bool = False) -> None:
        """Answer 200 with a chunked SSE stream: one ``data:`` event per chunk (JSON-encoded,
        or sent as is with ``raw_events``), then ``data: [DONE]`` when ``done``."""

        def behaviour(handler: _Handler) -> None:
            handler.send_head(
                200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
            )
            for chunk in chunks:
                data = chunk if raw_events else json.dumps(chunk)
                handler.write_chunk(f"data: {data}\n\n".encode())
            if done:
                handler.write_chunk(b"data: [DONE]\n\n")
            handler.write_chunk(b"")

        self.add(behaviour)

    def add_cut_stream(self, chunks: list[Any], partial: bytes, *, chunked: bool) -> None:
        """Send ``chunks`` as SSE events, then ``partial`` (half an event), then close the
        connection: mid-chunk when ``chunked``, else at the end of a close-delimited body."""

        def behaviour(handler: _Handler) -> None:
            headers = {"Content-Type": "text/event-stream"}
            headers.update({"Transfer-Encoding": "chunked"} if chunked else {"Connection": "close"})
            handler.send_head(200, headers)
            send = handler.write_chunk if chunked else handler.wfile.write
            for chunk in chunks:
                send(f"data: {json.dumps(chunk)}\n\n".encode())
            if chunked:  # announce a longer chunk than we send
                handler.wfile.write(f"{len(partial) + 50:x}\r\n".encode() + partial)
            else:
                handler.wfile.write(partial)
            handler.wfile.flush()
            handler.close_connection = True

        self.add(behaviour)

    def _json_behaviour(
        self, status: int, body: Any, headers: dict[str, str], delay: float
    ) -> Behaviour:
        payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()

        def behaviour(handler: _Handler) -> None:
            if delay and self.stopping.wait(delay):
                return
            handler.send_head(
                status,
                {
                    "Content-Type": "application/json",
                    "Content-Length": str(len(payload)),
                    **headers,
                },
            )
            handler.wfile.write(payload)
            handler.wfile.flush()

        return behaviour


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A running :class:`OpenAIServer`, stopped after the test."""
    server = OpenAIServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()

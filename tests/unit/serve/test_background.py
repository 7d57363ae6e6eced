"""``BackgroundServer``: a real uvicorn thread on 127.0.0.1, a free port by default, a clear
error for a taken port, and a clean stop."""

from __future__ import annotations

import socket

import httpx
import pytest

from agcore_lab import SessionManager
from agcore_lab.errors import ConfigurationError
from agcore_lab.serve import BackgroundServer, create_app


def test_serves_on_a_free_port_and_stops() -> None:
    server = BackgroundServer(create_app(SessionManager(), no_auth=True)).start()
    try:
        assert server.running and server.port > 0
        with httpx.Client(base_url=server.url) as client:
            for _ in range(3):  # one kept-alive connection, several requests
                assert client.get("/health", timeout=1).json() == {"status": "ok"}
    finally:
        server.stop()
    assert not server.running
    with pytest.raises(httpx.TransportError):
        httpx.get(server.url + "/health", timeout=1)


def test_a_taken_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = BackgroundServer(create_app(SessionManager(), no_auth=True), port=port)
        with pytest.raises(ConfigurationError, match="cannot listen"):
            server.start()
        assert not server.running

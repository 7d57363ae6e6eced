"""``%agcore serve``: starts the service for the notebook's manager, prints the page's
address (never the token), answers real HTTP on 127.0.0.1, and ``--stop`` stops it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from IPython import get_ipython
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.jupyter._serve_magics import TOKEN_VARIABLE, running_servers


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = start_ipython() or get_ipython()  # the test shell is one per process
    shell.run_line_magic("load_ext", "agcore_lab")
    return shell


@pytest.fixture
def notebook(ip: Any) -> Iterator[Any]:
    manager = SessionManager(SqliteStore(":memory:"))
    ip.user_ns["manager"] = manager
    yield ip
    for port in list(running_servers()):
        ip.run_line_magic("agcore", f"serve --stop --port {port}")
    for name in ("manager", TOKEN_VARIABLE):
        ip.user_ns.pop(name, None)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _line(ip: Any, text: str) -> tuple[str, str]:
    with capture_output() as captured:
        ip.run_line_magic("agcore", text)
    return captured.stdout, captured.stderr


def test_serve_starts_the_service_for_the_notebooks_manager(notebook: Any) -> None:
    port = _free_port()
    out, err = _line(notebook, f"serve --port {port}")
    assert err == ""
    assert f"http://127.0.0.1:{port}/approve" in out
    token = notebook.user_ns[TOKEN_VARIABLE]
    assert len(token) >= 16 and token not in out
    manager = notebook.user_ns["manager"]
    manager.register_agent(Agent(name="writer", model=ScriptedModel()))
    base = f"http://127.0.0.1:{port}"
    assert httpx.get(base + "/sessions").status_code == 401
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as c:
        sid = c.post("/sessions", json={"agent": "writer"}).json()["session_id"]
        reply = c.post(f"/sessions/{sid}/turns", json={"text": "hello"}).json()["reply"]
    assert reply == "[scripted] hello"
    # The same manager, from a cell: the sync twins see the turn the service ran.
    assert manager.get_sync(sid).messages[-1].text == "[scripted] hello"
    out, err = _line(notebook, f"serve --port {port}")
    assert "already serving" in err
    out, _ = _line(notebook, "serve --stop")
    assert out.startswith("stopped ") and running_servers() == {}
    with pytest.raises(httpx.TransportError):
        httpx.get(base + "/health", timeout=2)


def test_serve_with_a_given_token_and_no_auth_rules(notebook: Any) -> None:
    port = _free_port()
    out, _ = _line(notebook, f"serve --port {port} --token hunter2x")
    assert "hunter2x" not in out and notebook.user_ns[TOKEN_VARIABLE] == "hunter2x"
    ok = httpx.get(f"http://127.0.0.1:{port}/pending", headers={"Authorization": "Bearer hunter2x"})
    assert ok.status_code == 200
    _line(notebook, f"serve --stop --port {port}")
    _, err = _line(notebook, "serve --no-auth --host 0.0.0.0")
    assert "loopback" in err
    _, err = _line(notebook, "serve --stop")
    assert "no service" in err
    port = _free_port()
    out, _ = _line(notebook, f"serve --port {port} --no-auth")
    assert "no token" in out
    assert httpx.get(f"http://127.0.0.1:{port}/pending").status_code == 200


def test_serve_without_a_manager_says_so(ip: Any) -> None:
    ip.user_ns.pop("manager", None)
    _, err = _line(ip, f"serve --port {_free_port()}")
    assert "no SessionManager" in err and running_servers() == {}

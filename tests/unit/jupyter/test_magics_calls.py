"""%agcore calls and %agcore prompt in IPython's headless test shell.

This module sorts after test_magics.py, which starts the shared test shell; here it is only
fetched (``globalipapp.get_ipython`` starts it when this module runs alone).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from IPython.testing import globalipapp
from IPython.utils.capture import CapturedIO, capture_output

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore, ToolCall


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def manager() -> SessionManager:
    return SessionManager(SqliteStore(":memory:"))


@pytest.fixture
def sid(manager: SessionManager) -> str:
    model = ScriptedModel([ToolCall(name="add", arguments={"a": 2, "b": 3}), "5"])
    agent = Agent(name="calc", system_prompt="You add.", model=model, tools=[add])
    session_id = manager.create_sync(agent)
    manager.submit_turn_sync(session_id, "2 + 3?")
    manager.submit_turn_sync(session_id, "again")
    return session_id


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "agcore_lab")
    return shell


@pytest.fixture
def ns(ip: Any) -> Iterator[dict[str, Any]]:
    instance = ip.magics_manager.registry["AgcoreMagics"]
    instance.last_manager_session = None
    names = set(ip.user_ns)
    yield ip.user_ns
    for name in set(ip.user_ns) - names:
        del ip.user_ns[name]


def line(ip: Any, text: str) -> CapturedIO:
    with capture_output() as captured:
        result = ip.run_line_magic("agcore", text)
    assert result is None
    return captured


def test_calls_prints_a_compact_table(
    ip: Any, ns: dict[str, Any], manager: SessionManager, sid: str
) -> None:
    ns["manager"] = manager
    ns["sid"] = sid
    out = line(ip, "calls sid").stdout.splitlines()
    assert out[0].split() == [
        "call",
        "session",
        "turn",
        "kind",
        "model",
        "tokens",
        "ms",
        "cost",
        "status",
    ]
    calls = manager.model_calls_sync(sid)
    assert [row.split()[0] for row in out[1:]] == [c.call_id for c in calls]
    assert out[1].split()[2:5] == ["1", "turn", "scripted"]
    last = line(ip, "calls sid --last 1").stdout.splitlines()
    assert len(last) == 2 and last[1].startswith(calls[-1].call_id)
    # Without SESSION: the manager session used last.
    assert line(ip, "calls").stdout.splitlines() == out


def test_prompt_prints_the_full_request(
    ip: Any, ns: dict[str, Any], manager: SessionManager, sid: str
) -> None:
    ns["manager"] = manager
    call = manager.model_calls_sync(sid)[1]
    out = line(ip, f"prompt {call.call_id}").stdout
    assert out.splitlines()[0].startswith(f"call {call.call_id} · session {sid}")
    assert "[0] system  <system_prompt>\n    You add." in out
    assert "[3] tool (add)\n    5" in out
    assert "--- response (stop)\n    5" in out


def test_bad_input_is_one_line(
    ip: Any, ns: dict[str, Any], manager: SessionManager, sid: str
) -> None:
    ns["manager"] = manager
    err = line(ip, "prompt call_nope").stderr
    assert err.startswith("agcore: no such model call") and err.count("\n") == 1
    err = line(ip, f"calls {sid} --last 0").stderr
    assert err.strip() == "agcore: --last must be a positive number of calls"
    err = line(ip, "calls ses_missing").stderr
    assert err.startswith("agcore: no such session")


def test_help_lists_the_call_commands(ip: Any, ns: dict[str, Any]) -> None:
    out = line(ip, "help").stdout
    assert "%agcore calls [SESSION] [--last N] [--inspect]" in out
    assert "%agcore prompt CALL_ID" in out

"""CallInspector and the %agcore calls / prompt commands, in plain Python and IPython."""

from __future__ import annotations

import html
import re
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore, ToolCall
from agcore_lab.agent.summary import SummaryConfig
from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter import CallInspector
from agcore_lab.llm.messages import Message

XSS = "<img src=x onerror=alert(1)>"


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
    manager.submit_turn_sync(session_id, XSS)
    return session_id


@pytest.fixture
def inspector(manager: SessionManager, sid: str) -> Iterator[CallInspector]:
    view = CallInspector(manager, sid)
    yield view
    view.close()


def _text(value: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", value))


def test_lists_calls_newest_first_and_shows_the_newest(inspector: CallInspector) -> None:
    assert [c.turn_index for c in inspector.page_calls()] == [2, 1, 1]
    options = inspector.call_select.options
    assert [value for _, value in options] == [c.call_id for c in inspector.page_calls()]
    first = options[0][0].split()
    assert first[0] == "2" and first[1] == "turn" and first[2] == "scripted" and first[-1] == "ok"
    assert inspector.shown is inspector.calls[-1]
    detail = inspector.detail_html.value
    assert "Request as the model saw it" in detail and "system prompt" in detail
    # Text from users and models is escaped, never markup.
    assert XSS not in detail and "&lt;img src=x onerror=alert(1)&gt;" in detail


def test_selecting_a_call_shows_its_request_response_and_prompt_diff(
    inspector: CallInspector,
) -> None:
    second = inspector.calls[1]  # the tool loop's second request of turn 1
    inspector.select(second.call_id)
    assert inspector.call_select.value == second.call_id
    detail = _text(inspector.detail_html.value)
    assert "[3] tool (add)5" in detail and '-> add({"a": 2, "b": 3})' in detail
    assert "Response" in detail and "finish: stop" in detail
    # The diff against the first call of the slot shows what the tool loop added.
    html_value = inspector.detail_html.value
    assert "Prompt diff against " + inspector.calls[0].call_id in html_value
    assert '<span class="agc-add">+## tool</span>' in html_value
    with pytest.raises(InvalidInputError, match="no call"):
        inspector.select("call_nope")
    inspector.select(None)
    assert inspector.shown is inspector.calls[-1]


def test_marks_an_injected_summary_and_the_focused_cut(manager: SessionManager) -> None:
    config = SummaryConfig(max_context_tokens=60, trigger_token_ratio=0.5, debounce_turns=0)
    agent = Agent(name="sum", model=ScriptedModel(), summary_config=config)
    session_id = manager.create_sync(agent)
    session = manager.get_sync(session_id)
    session.set_slot_mode_sync("focused", recent_window=2)  # summaries feed Focused slots only
    for i in range(4):
        manager.submit_turn_sync(session_id, f"tell me about item {i} in some detail please")
    manager.submit_turn_sync(session_id, "and now?")
    view = CallInspector(manager, session_id)
    try:
        last = view.shown
        assert last is not None and last.kind == "summary"  # the summary after the last turn
        turn_call = [c for c in view.calls if c.kind == "turn"][-1]
        view.select(turn_call.call_id)
        detail = view.detail_html.value
        assert "injected summary" in detail and "agc-msg-injected" in detail
        assert turn_call.window_start > 0
        assert f"focused window: {turn_call.window_start} earlier messages cut" in detail
    finally:
        view.close()


class _Slow:
    """A model that waits on an event before its second answer (to watch a turn live)."""

    model_name = "slow"

    def __init__(self) -> None:
        self.inner = ScriptedModel([ToolCall(name="add", arguments={"a": 1, "b": 1}), "2"])
        self.gate = threading.Event()
        self.asked = 0

    async def complete(self, messages: Sequence[Message], *, tools: Any = ()) -> Any:
        import asyncio

        self.asked += 1
        if self.asked == 2:
            while not self.gate.is_set():
                await asyncio.sleep(0.01)
        return await self.inner.complete(messages, tools=tools)

    def stream(self, messages: Sequence[Message], *, tools: Any = ()) -> Any:
        return self.inner.stream(messages, tools=tools)


def test_updates_live_during_a_turn(manager: SessionManager) -> None:
    model = _Slow()
    session_id = manager.create_sync(Agent(name="slow", model=model, tools=[add]))
    view = CallInspector(manager, session_id)
    try:
        assert view.calls == []
        done = threading.Event()
        worker = threading.Thread(
            target=lambda: (manager.submit_turn_sync(session_id, "1 + 1?"), done.set())
        )
        worker.start()
        deadline = time.monotonic() + 10
        while len(view.calls) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        # The first call is shown while the turn is still running (nothing committed yet).
        assert not done.is_set() and [c.turn_index for c in view.calls] == [1]
        assert manager.model_calls_sync(session_id) == []
        assert "add" in _text(view.detail_html.value)
        model.gate.set()
        worker.join(10)
        assert view.wait(10)
        deadline = time.monotonic() + 10
        while len(view.calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [c.call_id for c in view.calls] == [
            c.call_id for c in manager.model_calls_sync(session_id)
        ]
    finally:
        view.close()
    assert view._on_call not in manager.bundle.call_listeners


def test_static_html_fallback(inspector: CallInspector) -> None:
    page = inspector._repr_html_()
    assert "Model calls" in page and "agc-call-detail" in page and XSS not in page

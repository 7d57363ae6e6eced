"""CheckpointTimeline built in plain Python: list, plot, preview, rollback, fork, events."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator

import pytest

from agcore_lab import Agent, RuntimeBundle, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.jupyter import CheckpointTimeline, SessionTreeBrowser
from agcore_lab.jupyter._confirm import ConfirmBar
from agcore_lab.jupyter._refresh import Reloader
from agcore_lab.jupyter._session_html import render_checkpoint_table, render_memory, render_messages
from agcore_lab.jupyter._svg import MAX_POINTS, PlotPoint, cumulative_plot
from agcore_lab.llm.messages import AssistantMessage, ToolCall, UserMessage
from agcore_lab.llm.usage import ModelPrice, PriceTable

XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture
def manager() -> SessionManager:
    prices = PriceTable({"scripted": ModelPrice(prompt=1.0, completion=2.0)})
    bundle = RuntimeBundle(store=SqliteStore(":memory:"), prices=prices)
    return SessionManager(bundle=bundle, agents=[Agent(name="writer", model=ScriptedModel())])


@pytest.fixture
def sid(manager: SessionManager) -> str:
    session_id = manager.create_sync(manager.agents["writer"])
    for text in ("one", XSS, "three"):
        manager.submit_turn_sync(session_id, text)
    return session_id


@pytest.fixture
def timeline(manager: SessionManager, sid: str) -> Iterator[CheckpointTimeline]:
    view = CheckpointTimeline(manager, sid)
    yield view
    view.close()


def _text(html_value: str) -> str:
    return re.sub(r"<[^>]+>", "", html_value)


def _turns(view: CheckpointTimeline) -> list[int]:
    return [c.turn_index for c in view.checkpoints]


def test_lists_checkpoints_newest_first_with_a_plot(timeline: CheckpointTimeline, sid: str) -> None:
    assert _turns(timeline) == [3, 2, 1, 0]
    options = timeline.ckpt_select.options
    assert [value for _, value in options] == [c.ckpt_id for c in timeline.checkpoints]
    first = options[0][0].split()
    assert first[0] == "3" and first[2] == "auto" and first[-1].startswith("$0.0")
    assert options[-1][0].split()[3] == "start"
    header = _text(timeline.header_html.value)
    assert f"Checkpoints of {sid}" in header and "turn 3" in header and "live" in header
    assert "4 checkpoints" in header
    svg = timeline.plot_html.value
    assert svg.startswith("<svg") and svg.count("<circle") == 4
    assert svg.count("<polyline") == 2
    assert timeline.rollback_button.disabled and timeline.fork_button.disabled


def test_preview_shows_state_escaped(timeline: CheckpointTimeline, manager: SessionManager) -> None:
    manager.get_sync(timeline.session_id).session_memory.set("mood", XSS)
    two = timeline.checkpoints[1]
    timeline.ckpt_select.value = two.ckpt_id  # what a click in the list does
    assert timeline.wait(10)
    assert timeline.selected == two.ckpt_id and timeline.preview.meta.turn_index == 2
    preview = timeline.preview_html.value
    assert "&lt;img src=x onerror=alert(1)&gt;" in preview
    assert "<img" not in preview and "<img" not in timeline._repr_html_()
    assert "main (4)" in _text(preview)
    assert "memory is empty" in preview  # memory as of that checkpoint, not as of now
    assert "agc-pt-selected" in timeline.plot_html.value
    assert not timeline.rollback_button.disabled


def test_rollback_asks_first_then_rolls_back(
    timeline: CheckpointTimeline, manager: SessionManager, sid: str
) -> None:
    browser = SessionTreeBrowser(manager)
    try:
        target = timeline.checkpoints[2]  # turn 1
        timeline.select(target.ckpt_id)
        timeline.rollback_button.click()
        question = _text(timeline.confirm_bar.question_html.value)
        assert f"Roll session {sid} back to turn 1" in question
        timeline.confirm_bar.cancel_button.click()
        assert "Rollback cancelled; nothing changed." in timeline.status_html.value
        assert manager.get_sync(sid).turn_index == 3

        timeline.ask_rollback()
        timeline.confirm_bar.confirm_button.click()
        assert timeline.wait(10) and browser.wait(10)
        assert manager.get_sync(sid).turn_index == 1
        assert timeline.turn_index == 1 and "turn 1" in timeline.header_html.value
        assert _turns(timeline) == [1, 3, 2, 1, 0]
        assert timeline.checkpoints[0].source == "rollback"
        assert "Rolled back to turn 1" in timeline.status_html.value
        assert timeline.selected == target.ckpt_id  # still selected, on its page
        # The open tree browser followed the manager's rollback event.
        assert browser.rows[0].node.turn_index == 1
    finally:
        browser.close()


def test_fork_asks_first_then_forks(
    timeline: CheckpointTimeline, manager: SessionManager, sid: str
) -> None:
    browser = SessionTreeBrowser(manager)
    try:
        target = timeline.checkpoints[1]  # turn 2
        timeline.ask_fork(target.ckpt_id)
        assert timeline.confirm_bar.pending == "fork"
        task = timeline.confirm()
        assert task is not None and task.wait(10) and timeline.wait(10) and browser.wait(10)
        child = timeline.last_fork
        assert child is not None and f"into session {child}" in timeline.status_html.value
        assert manager.get_sync(sid).turn_index == 3  # the original is untouched
        assert manager.get_sync(child).turn_index == 2
        assert [r.node.session_id for r in browser.rows] == [sid, child]
    finally:
        browser.close()


def test_updates_as_turns_arrive_and_close_stops(
    timeline: CheckpointTimeline, manager: SessionManager, sid: str
) -> None:
    manager.submit_turn_sync(sid, "four")
    assert timeline.wait(10)
    assert _turns(timeline)[0] == 4 and timeline.turn_index == 4
    label = "<script>alert(1)</script>"
    manager.checkpoint_sync(sid, label)
    assert timeline.wait(10)
    assert timeline.checkpoints[0].source == "manual"
    assert timeline.ckpt_select.options[0][0].split()[3].startswith("<script>")  # text only
    assert "<script>" not in timeline._repr_html_() and "<script>" not in timeline.plot_html.value
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in timeline._repr_html_()
    timeline.close()
    manager.submit_turn_sync(sid, "five")
    time.sleep(0.05)
    assert _turns(timeline)[0] == 4


def test_paging(manager: SessionManager, sid: str) -> None:
    view = CheckpointTimeline(manager, sid, page_size=3)
    try:
        assert view.pages == 2 and len(view.ckpt_select.options) == 3
        view.next_button.click()
        assert [v for _, v in view.ckpt_select.options] == [view.checkpoints[3].ckpt_id]
        view.prev_button.click()
        view.select(view.checkpoints[-1].ckpt_id)
        assert view.page == 1 and view.ckpt_select.value == view.checkpoints[-1].ckpt_id
    finally:
        view.close()


def test_errors_show_inline(timeline: CheckpointTimeline, manager: SessionManager) -> None:
    assert timeline.ask_rollback() is None
    assert "agcore: select a checkpoint first" in timeline.error_html.value
    timeline.select("ckpt_nope")
    assert "no checkpoint &#x27;ckpt_nope&#x27;" in timeline.error_html.value
    timeline.select(timeline.checkpoints[0].ckpt_id)
    timeline.ask_rollback()
    manager.destroy_sync(timeline.session_id)
    task = timeline.confirm()
    assert task is not None and task.wait(10) and timeline.wait(10)
    assert "agcore: no such session in the store" in timeline.error_html.value
    assert "failed; nothing changed" in timeline.status_html.value


def test_stored_session_header(manager: SessionManager, sid: str) -> None:
    other = SessionManager(manager.store, agents=[manager.agents["writer"]])
    view = CheckpointTimeline(other, sid)
    try:
        assert "turn 3" in view.header_html.value and "stored" in view.header_html.value
        assert view.live is False and view.agent_name == "writer"
        assert repr(view).startswith(f"CheckpointTimeline('{sid}', 4 checkpoints, turn=3")
    finally:
        view.close()


def test_plot_empty_single_and_thinned() -> None:
    assert "no checkpoints yet" in cumulative_plot([])
    one = cumulative_plot([PlotPoint(key="k", turn=0, tokens=0, cost=0.0, tooltip="<b>")])
    assert one.count("<circle") == 1 and "<polyline" not in one and "&lt;b&gt;" in one
    many = [
        PlotPoint(key=f"k{i}", turn=i, tokens=i * 10, cost=i / 1000, tooltip=f"t{i}")
        for i in range(1000)
    ]
    svg = cumulative_plot(many, selected="k555")
    assert MAX_POINTS <= svg.count("<circle") <= MAX_POINTS + 2
    assert 'data-key="k555"' in svg and 'data-key="k999"' in svg and 'data-key="k0"' in svg


def test_confirm_bar_runs_once() -> None:
    bar = ConfirmBar()
    runs: list[int] = []
    bar.ask("Go?", lambda: runs.append(1), action="go")
    assert bar.confirm() is None and runs == [1]
    assert bar.confirm() is None and runs == [1] and not bar.visible
    bar.ask("<b>bold?</b>", lambda: runs.append(2))
    assert "&lt;b&gt;bold?&lt;/b&gt;" in bar.question_html.value
    bar.cancel()
    assert runs == [1] and bar.pending is None


def test_reloader_folds_requests_into_one_more_load() -> None:
    loads: list[int] = []
    seen: list[int] = []
    gate = threading.Event()

    async def load() -> int:
        loads.append(len(loads))
        while not gate.is_set():
            await asyncio.sleep(0.005)
        return len(loads)

    reloader = Reloader(load, on_loaded=seen.append, on_error=print)
    assert reloader.request() is True
    deadline = time.monotonic() + 5
    while not loads and time.monotonic() < deadline:  # the load has started (and waits)
        time.sleep(0.005)
    for _ in range(5):
        assert reloader.request() is False
    assert reloader.busy
    gate.set()
    assert reloader.wait(5)
    assert len(loads) == 2 and seen == [1, 2]
    reloader.stop()
    assert reloader.request() is False and not reloader.busy


def test_reloader_coalesces_a_burst_from_many_threads_into_few_loads() -> None:
    # 8 threads x 200 events in a burst: at most one load per interval, and the last load
    # starts after the last request (the view ends on fresh data).
    loads: list[float] = []
    requested_last = [0.0]

    async def load() -> int:
        loads.append(time.monotonic())
        return len(loads)

    reloader = Reloader(load, on_loaded=lambda _: None, on_error=print, interval=0.1)

    def burst() -> None:
        for _ in range(200):
            reloader.request()
            requested_last[0] = max(requested_last[0], time.monotonic())

    threads = [threading.Thread(target=burst) for _ in range(8)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    burst_time = time.monotonic() - start
    assert reloader.wait(5)
    assert 1 <= len(loads) <= 2 + int(burst_time / 0.1)
    assert loads[-1] >= requested_last[0] - 0.001
    gaps = [b - a for a, b in zip(loads, loads[1:], strict=False)]
    assert all(gap >= 0.095 for gap in gaps)


def test_a_listener_returns_at_once_even_when_a_load_is_slow(
    manager: SessionManager, sid: str
) -> None:
    # A view's listener must never wait for its load (it runs inside the turn).
    view = CheckpointTimeline(manager, sid)
    try:
        gate = threading.Event()
        original = view._load

        async def slow() -> object:
            while not gate.is_set():
                await asyncio.sleep(0.01)
            return await original()

        view._loaders[0]._load = slow
        start = time.perf_counter()
        for _ in range(100):
            manager.emit("turn", sid)
        assert time.perf_counter() - start < 0.05
        gate.set()
        assert view.wait(10) and view._loaders[0].loads <= 4
    finally:
        view.close()


def test_stale_a_destroyed_sessions_timeline_says_so_and_disables_actions(
    manager: SessionManager, sid: str
) -> None:
    # The stale case of the issue: it used to say "live · 5 checkpoints" with Rollback and
    # Fork enabled.
    view = CheckpointTimeline(manager, sid)
    try:
        view.select(view.checkpoints[1].ckpt_id)
        view.ask_rollback()
        assert view.confirm_bar.visible and not view.rollback_button.disabled
        manager.destroy_sync(sid)
        assert view.wait(10)
        assert view.gone
        header = _text(view.header_html.value)
        assert "Gone:" in header and "was destroyed" in header and "live" not in header
        assert view.rollback_button.disabled and view.fork_button.disabled
        assert not view.confirm_bar.visible  # the question was withdrawn, not run
        assert "withdrawn" in view.status_html.value
        assert view.checkpoints == [] and view.ckpt_select.options == ()
        view.ask_fork()
        assert "was destroyed" in view.error_html.value and not view.confirm_bar.visible
    finally:
        view.close()


def test_stale_tree_browser_drops_a_session_destroyed_elsewhere(
    manager: SessionManager, sid: str
) -> None:
    browser = SessionTreeBrowser(manager)
    try:
        browser.select(sid)
        assert not browser.destroy_button.disabled
        manager.destroy_sync(sid)  # in a cell, not through the browser
        assert browser.wait(10)
        assert browser.selected is None and browser.rows == []
        assert browser.destroy_button.disabled and browser.details_html.value == ""
    finally:
        browser.close()


def test_long_text_tool_calls_and_big_memory_are_cut_for_display() -> None:
    html_list = render_messages(
        [
            UserMessage(content="x" * 1000),
            AssistantMessage(content=None, tool_calls=[ToolCall(name="add", id="call_1")]),
        ]
    )
    assert "x" * 300 + "… (700 more characters)" in html_list
    assert "calls add" in html_list
    assert "no messages" in render_messages([])
    memory = render_memory({f"k{i:03}": "v" * 500 for i in range(60)})
    assert memory.count("<tr>") == 51 and "… and 10 more keys" in memory
    assert "(302 more characters)" in memory  # the JSON string with its quotes, cut at 200
    assert "no checkpoints yet" in render_checkpoint_table([])


def test_history_graph_branches_at_a_rollback_and_marks_forks(
    manager: SessionManager, sid: str
) -> None:
    from agcore_lab.jupyter._history_svg import history_svg, lanes_of

    checkpointer = manager.checkpointer
    before = checkpointer.list_checkpoints_sync(sid)  # turns 3, 2, 1, 0
    turn1 = next(c for c in before if c.turn_index == 1)
    turn2 = next(c for c in before if c.turn_index == 2)
    checkpointer.rollback_sync(sid, turn1.ckpt_id)
    manager.submit_turn_sync(sid, "again")
    child = checkpointer.fork_sync(sid, turn2.ckpt_id)
    view = CheckpointTimeline(manager, sid)
    try:
        lanes, lane_of = lanes_of(view.checkpoints)
        assert len(lanes) == 2
        assert [c.turn_index for c in lanes[0].points] == [0, 1, 2, 3]
        assert [(c.turn_index, c.source) for c in lanes[1].points] == [(1, "rollback"), (2, "auto")]
        assert lanes[1].origin.ckpt_id == turn1.ckpt_id
        assert lanes[1].label == "↩ rollback to turn 1"
        assert view.forks == {turn2.ckpt_id: [child]}
        svg = view.history_html.value
        assert svg.count("<polyline") == 2 and 'data-lane="1"' in svg
        assert f'data-children="{child}"' in svg and f"forked into {child}" in svg
        assert "↩ rollback to turn 1" in svg and ">turn</text>" in svg
        assert svg.count("<circle") + svg.count("<path") == len(view.checkpoints)
        view.select(turn1.ckpt_id)
        assert "agc-pt-selected" in view.history_html.value
    finally:
        view.close()
    assert history_svg([]) == '<div class="agc-status">no checkpoints yet</div>'


def test_history_graph_of_ten_thousand_checkpoints_stays_light() -> None:
    from datetime import UTC, datetime

    from agcore_lab.jupyter._history_svg import MAX_DOTS, history_svg
    from agcore_lab.store.base import CkptMeta

    stamp = datetime(2026, 1, 1, tzinfo=UTC)
    metas = []
    for i in range(10_000):
        parent = f"c{i - 1:05d}" if i else None
        if i == 6_000:
            parent = "c02000"  # a rollback to turn 2000
        metas.append(
            CkptMeta(
                ckpt_id=f"c{i:05d}",
                session_id="s",
                parent_ckpt_id=parent,
                turn_index=i if i < 6_000 else 2_000 + i - 6_000,
                created_at=stamp,
                source="rollback" if i == 6_000 else "auto",
                message_count=2 * i,
                agent_name="a",
                current_slot_id="main",
            )
        )
    start = time.perf_counter()
    svg = history_svg(metas)
    took = time.perf_counter() - start
    assert svg.count("<polyline") == 2
    assert svg.count("<circle") <= MAX_DOTS
    assert len(svg) < 400_000 and took < 1.0


def test_rollback_rows_say_where_they_went(manager: SessionManager, sid: str) -> None:
    view = CheckpointTimeline(manager, sid)
    try:
        view.select(view.checkpoints[2].ckpt_id)  # turn 1
        view.ask_rollback()
        assert view.confirm().wait(10) and view.wait(10)
        newest = view.ckpt_select.options[0][0]
        assert "rollback" in newest and "↩ to turn 1" in newest
    finally:
        view.close()

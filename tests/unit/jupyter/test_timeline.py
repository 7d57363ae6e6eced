"""CheckpointTimeline built in plain Python: history, table, preview, rollback, fork, events."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator

import pytest

from agcore_lab import Agent, RuntimeBundle, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter import CheckpointTimeline, SessionTreeBrowser
from agcore_lab.jupyter._confirm import ConfirmBar
from agcore_lab.jupyter._session_html import render_checkpoint_table, render_memory, render_messages
from agcore_lab.jupyter.common.refresh import Reloader
from agcore_lab.jupyter.history.lanes import MAX_LANES, graph_data, lanes_of
from agcore_lab.jupyter.history.rows import row_order
from agcore_lab.llm.messages import AssistantMessage, ToolCall, UserMessage
from agcore_lab.llm.usage import ModelPrice, PriceTable

XSS = "<img src=x onerror=alert(1)>"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def manager() -> SessionManager:
    prices = PriceTable({"scripted": ModelPrice(prompt=1.0, completion=2.0)})
    bundle = RuntimeBundle(store=SqliteStore(":memory:"), prices=prices)
    return SessionManager(bundle=bundle, agents=[Agent(name="writer", model=ScriptedModel())])


@pytest.fixture
def sid(manager: SessionManager) -> str:
    session_id = manager.create_sync(manager.agents["writer"])
    for text in ("one", XSS, "three"):
        time.sleep(0.01)  # distinct times on the time axis (a turn takes well under 1 ms)
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


def _table(view: CheckpointTimeline) -> list[tuple[int, str, str]]:
    """The table's rows as the front-end draws them: (turn, source, label)."""
    data = view.graph.data
    return [
        (data["turn"][i], ("auto", "manual", "rollback", "fork")[data["src"][i]], data["label"][i])
        for i in view.graph.order
    ]


def test_lists_checkpoints_newest_first_in_graph_and_table(
    timeline: CheckpointTimeline, sid: str
) -> None:
    assert _turns(timeline) == [3, 2, 1, 0]
    data = timeline.graph.data
    assert data["ids"] == [c.ckpt_id for c in reversed(timeline.checkpoints)]  # oldest first
    assert timeline.graph.order == [3, 2, 1, 0]  # the table: newest first
    assert [c.ckpt_id for c in timeline.shown_checkpoints()] == [
        c.ckpt_id for c in timeline.checkpoints
    ]
    assert _table(timeline)[0][:2] == (3, "auto") and _table(timeline)[-1] == (0, "auto", "start")
    assert data["cost"][-1] > 0 and data["tokens"] == sorted(data["tokens"])
    assert data["slot"] == ["main"] * 4 and data["msgs"] == [0, 2, 4, 6]
    assert data["calls"] == [0, 1, 1, 1]  # one model call led to each turn's checkpoint
    assert [lane["label"] for lane in data["lanes"]] == ["history"]
    header = _text(timeline.header_html.value)
    assert f"Checkpoints of {sid}" in header and "turn 3" in header and "live" in header
    assert "4 checkpoints" in header and "branch" not in header
    assert timeline.rollback_button.disabled and timeline.fork_button.disabled
    assert timeline.graph.version >= 1 and not timeline.graph.disabled


def test_preview_shows_state_escaped(timeline: CheckpointTimeline, manager: SessionManager) -> None:
    manager.get_sync(timeline.session_id).session_memory.set("mood", XSS)
    two = timeline.checkpoints[1]
    timeline.graph.selected = two.ckpt_id  # what a click on a dot or a row does
    assert timeline.wait(10)
    assert timeline.selected == two.ckpt_id and timeline.preview.meta.turn_index == 2
    preview = timeline.preview_html.value
    assert "&lt;img src=x onerror=alert(1)&gt;" in preview
    assert "<img" not in preview and "<img" not in timeline._repr_html_()
    assert "main (4)" in _text(preview)
    assert "memory is empty" in preview  # memory as of that checkpoint, not as of now
    assert timeline.graph.selected == two.ckpt_id
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
    assert _table(timeline)[0] == (4, "manual", label)  # text: history.js uses textContent
    assert "<script>" not in timeline._repr_html_()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in timeline._repr_html_()
    timeline.close()
    manager.submit_turn_sync(sid, "five")
    time.sleep(0.05)
    assert _turns(timeline)[0] == 4


def test_sort_brush_and_axis(timeline: CheckpointTimeline, manager: SessionManager) -> None:
    timeline.sort("tokens")
    assert [t for t, _, _ in _table(timeline)] == [0, 1, 2, 3]
    timeline.graph.descending = True  # what a second click on the head does
    assert [t for t, _, _ in _table(timeline)] == [3, 2, 1, 0]
    timeline.graph.sort_key = "label"  # a click from the browser
    assert _table(timeline)[0][2] == "start"  # descending: "start" before the empty labels
    timeline.sort()
    timeline.brush_range(0.5, 2.2)
    assert [c.turn_index for c in timeline.shown_checkpoints()] == [2, 1]
    assert timeline.graph.brush == [0.5, 2.2]
    timeline.reset_zoom()
    assert len(timeline.shown_checkpoints()) == 4
    timeline.set_axis("time")
    assert timeline.graph.axis == "time" and timeline.graph.brush == []
    spread = timeline.graph.data["t"]
    timeline.graph.brush = [spread[1], spread[2]]  # a brush dragged on a time axis
    assert [c.turn_index for c in timeline.shown_checkpoints()] == [2, 1]
    with pytest.raises(InvalidInputError, match="no column 'nope'"):
        timeline.sort("nope")
    with pytest.raises(InvalidInputError, match="axis must be"):
        timeline.set_axis("tokens")
    assert timeline.graph.axis == "time" and timeline.graph.sort_key == ""


def test_a_turns_model_calls_open_in_the_call_inspector(manager: SessionManager) -> None:
    model = ScriptedModel([ToolCall(name="add", arguments={"a": 2, "b": 3}), "5", "ok"])
    manager.register_agent(Agent(name="calc", model=model, tools=[add]))
    sid = manager.create_sync(manager.agents["calc"])
    manager.submit_turn_sync(sid, "2 + 3?")  # two model calls: the tool step and the answer
    manager.submit_turn_sync(sid, "thanks")
    view = CheckpointTimeline(manager, sid)
    try:
        assert view.graph.data["calls"] == [0, 2, 1]
        first = view.checkpoints[1]
        view.select(first.ckpt_id)
        assert view.wait(10)
        expected = [c.call_id for c in manager.model_calls_sync(sid, turn_index=1)]
        assert [c.call_id for c in view.selected_calls] == expected
        assert [row["id"] for row in view.graph.calls] == expected
        assert view.graph.calls[0]["status"] == "ok" and view.graph.calls[0]["kind"] == "turn"
        view.graph.inspect = expected[1]  # a click on the second call's Inspect
        inspector = view.inspector
        assert inspector is not None and inspector.selected == expected[1]
        assert inspector.shown is not None and inspector.shown.response.content == "5"
        assert view.inspector_box.children == (inspector,) and view.graph.inspect == ""
        again = view.open_call(expected[0])
        assert again is not None and again is view.inspector and again.selected == expected[0]
        assert inspector._closed  # the first one stopped following the manager
        assert view.open_call("call_nope") is None
        assert "no call &#x27;call_nope&#x27;" in view.error_html.value
        view.select(view.checkpoints[-1].ckpt_id)  # the start: no calls
        assert view.wait(10) and view.selected_calls == [] and view.graph.calls == []
    finally:
        view.close()
    assert view.inspector is not None and view.inspector._closed


def test_on_open_call_gets_the_call_instead(manager: SessionManager, sid: str) -> None:
    seen: list[str] = []
    view = CheckpointTimeline(manager, sid, on_open_call=lambda call: seen.append(call.call_id))
    try:
        view.select(view.checkpoints[0].ckpt_id)
        assert view.wait(10) and len(view.selected_calls) == 1
        assert view.open_call(view.selected_calls[0].call_id) is None
        assert seen == [view.selected_calls[0].call_id] and view.inspector is None
    finally:
        view.close()


def test_counts_and_checkpoints_without_read_dataframe() -> None:
    # read_dataframe is part of the Store protocol now; the views still probe for it, so
    # their record-only path is checked by hiding it from them once the engine's async seam
    # (which requires the whole protocol) is built.
    store = SqliteStore(":memory:")
    manager = SessionManager(store, agents=[Agent(name="w", model=ScriptedModel())])
    sid = manager.create_sync(manager.agents["w"])
    assert manager.astore.sync_store is store
    store.read_dataframe = None  # type: ignore[assignment]  # no SQL shortcuts for the views
    for text in ("a", "b"):
        manager.submit_turn_sync(sid, text)
    view = CheckpointTimeline(manager, sid)
    try:
        assert view.graph.data["calls"] == [0, 1, 1]
        reads = view._counts.reads
        manager.submit_turn_sync(sid, "c")
        assert view.wait(10) and view.graph.data["calls"] == [0, 1, 1, 1]
        assert view._counts.reads == reads + 1  # only the newest calls were read
        assert view._reader.full_reads >= 2  # no count to check against: read in full
    finally:
        view.close()


def test_reloads_read_only_new_checkpoints_and_notice_a_prune(
    manager: SessionManager, sid: str
) -> None:
    view = CheckpointTimeline(manager, sid)
    try:
        assert view._reader.full_reads == 1
        for i in range(3):
            manager.submit_turn_sync(sid, f"more {i}")
        assert view.wait(10) and _turns(view) == [6, 5, 4, 3, 2, 1, 0]
        assert view._reader.full_reads == 1
        for i in range(70):  # more than the first window the reader reads again
            manager.submit_turn_sync(sid, f"many {i}")
        assert view.wait(10) and len(view.checkpoints) == 77 and view._reader.full_reads == 1
        view.select(view.checkpoints[-1].ckpt_id)  # the start: pruned next
        assert view.wait(10) and view.preview is not None
        manager.checkpointer.prune_sync(sid, keep_last=66)
        view.refresh()
        assert view.wait(10)
        assert view.selected is None and view.preview is None and view.graph.selected is None
        assert _turns(view) == list(range(76, 10, -1)) and view._reader.full_reads == 2
        manager.checkpointer.prune_sync(sid, keep_last=2)
        view.refresh()
        assert view.wait(10) and _turns(view) == [76, 75]
        assert view.graph.data["calls"] == [1, 1]
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
        assert view.checkpoints == [] and view.graph.order == [] and view.graph.disabled
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
        data = view.graph.data
        assert data["lane"] == [0, 0, 0, 0, 1, 1]
        assert data["lanes"][1] == {
            "label": "↩ rollback to turn 1",
            "origin": data["ids"].index(turn1.ckpt_id),
            "row": 1,
        }
        assert data["forks"] == {str(data["ids"].index(turn2.ckpt_id)): [child]}
        assert data["src"][4] == 2 and data["label"][4] == "↩ to turn 1"
        header = _text(view.header_html.value)
        assert "1 branch" in header and "1 fork" in header
        view.select(turn1.ckpt_id)
        assert view.graph.selected == turn1.ckpt_id
        view.graph.open_session = child  # a click on the fork's "Open timeline"
        fork_view = view.fork_view
        assert fork_view is not None and fork_view.session_id == child
        assert fork_view.checkpoints[0].source == "fork" and view.graph.open_session == ""
        assert view.inspector_box.children == (fork_view,)
        assert view.open_fork("ses_nope") is None
        assert "is not a fork of this session" in view.error_html.value

    finally:
        view.close()
    assert fork_view._closed  # closed with the timeline that opened it
    assert graph_data([])["ids"] == [] and row_order(graph_data([])) == []


def test_history_of_ten_thousand_checkpoints_stays_light() -> None:
    from datetime import UTC, datetime, timedelta

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
                created_at=stamp + timedelta(seconds=i),
                source="rollback" if i == 6_000 else "auto",
                message_count=2 * i,
                agent_name="a",
                current_slot_id="main",
            )
        )
    for extra in range(20):  # more branches than rows: they share the last row
        metas.append(
            CkptMeta(
                ckpt_id=f"d{extra:05d}",
                session_id="s",
                parent_ckpt_id=f"c{extra * 100:05d}",
                turn_index=extra * 100,
                created_at=stamp + timedelta(seconds=20_000 + extra),
                source="rollback",
                agent_name="a",
            )
        )
    start = time.perf_counter()
    data = graph_data(metas)
    order = row_order(data, sort_key="turn", descending=True, brush=(100, 200))
    took = time.perf_counter() - start
    assert len(data["ids"]) == 10_020 and len(data["lanes"]) == 22
    assert max(lane["row"] for lane in data["lanes"]) == MAX_LANES - 1
    assert data["t"][1] == 1.0 and data["t0"] == stamp.timestamp()
    assert [data["turn"][i] for i in order][:2] == [200, 200]  # both lanes at turn 200
    assert len(json.dumps(data)) < 1_200_000 and took < 2.0


def test_rollback_rows_say_where_they_went(manager: SessionManager, sid: str) -> None:
    view = CheckpointTimeline(manager, sid)
    try:
        view.select(view.checkpoints[2].ckpt_id)  # turn 1
        view.ask_rollback()
        assert view.confirm().wait(10) and view.wait(10)
        assert _table(view)[0] == (1, "rollback", "↩ to turn 1")
    finally:
        view.close()


def test_static_snapshot_lists_the_first_rows_and_says_how_many_more(
    manager: SessionManager, sid: str
) -> None:
    view = CheckpointTimeline(manager, sid, page_size=2)
    try:
        snapshot = view._repr_html_()
        assert snapshot.count("<tr data-ckpt=") == 2 and "… and 2 more checkpoints" in snapshot
        assert "Checkpoints</b> of" in snapshot and "<canvas" not in snapshot
        assert [c.turn_index for c in view.page_checkpoints()] == [3, 2]
    finally:
        view.close()

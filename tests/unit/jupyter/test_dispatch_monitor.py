"""DispatchMonitor built in plain Python: progress, table, live tree, cancel, failures."""

from __future__ import annotations

import asyncio
import concurrent.futures
import html
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    Approve,
    DispatchConfig,
    DispatchProgress,
    InvalidInputError,
    Message,
    ModelError,
    ScriptedModel,
    SessionManager,
    SessionNotFoundError,
    SqliteStore,
    SubTaskError,
    SubTaskResult,
    Tool,
    ToolCall,
)
from agcore_lab.jupyter import DispatchMonitor

XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture
def manager() -> SessionManager:
    return SessionManager(SqliteStore(":memory:"))


@pytest.fixture
def lead(manager: SessionManager) -> str:
    return manager.create_sync(Agent(name="lead", model=ScriptedModel()))


@pytest.fixture
def make_monitor() -> Iterator[Callable[..., DispatchMonitor]]:
    monitors: list[DispatchMonitor] = []

    def make(*args: Any, **options: Any) -> DispatchMonitor:
        options.setdefault("display", False)
        monitor = DispatchMonitor(*args, **options)
        monitors.append(monitor)
        return monitor

    yield make
    for monitor in monitors:
        monitor.cancel()
        monitor.close()


def _worker(name: str = "worker", latency: float = 0.0, reply: str = "ok") -> Agent:
    def answer(messages: Sequence[Message]) -> str:
        return f"{reply}: {messages[-1].text}"

    return Agent(name=name, model=ScriptedModel(answer, latency=latency))


def _text(html_value: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", html_value))


def _until(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def test_runs_the_dispatch_and_shows_it_finished(
    manager: SessionManager, lead: str, make_monitor: Any
) -> None:
    worker = _worker(latency=0.02)
    seen: list[tuple[int, int, int]] = []

    def watch(progress: DispatchProgress) -> None:
        seen.append((progress.waiting, progress.running, progress.done))

    tasks = [(worker, f"task {i}") for i in range(8)]
    monitor = make_monitor(
        manager, lead, tasks, DispatchConfig(max_concurrency=3), on_progress=watch
    )
    results = monitor.results(timeout=30)
    assert [r.response for r in results] == [f"ok: task {i}" for i in range(8)]
    assert all(isinstance(r, SubTaskResult) for r in results)
    assert monitor.outcome == "completed"
    assert (monitor.bar.value, monitor.bar.max, monitor.bar.description) == (8, 8, "8/8")
    assert monitor.bar.bar_style == "success" and monitor.cancel_button.disabled
    assert monitor.counts == {"waiting": 0, "running": 0, "done": 8, "failed": 0, "cancelled": 0}
    assert monitor.progress.peak_running == 3  # the limit, and never more
    assert max(running for _, running, _ in seen) == 3 and seen[-1] == (0, 0, 8)
    counts = _text(monitor.counts_html.value)
    assert "done 8" in counts and "peak 3 running" in counts
    assert re.match(
        r"Done in \d+\.\d\d s: 8 completed, 0 failed\.", _text(monitor.status_html.value)
    )
    table = _text(monitor.table_html.value)
    # Each row shows its child's own status.
    assert table.count("done") == 8 and all(r.child_id in table for r in results)
    assert repr(monitor) == (
        "DispatchMonitor(8 tasks: 8 done, 0 failed, 0 running, 0 waiting, 0 cancelled; completed)"
    )
    # The children in the tree, under the lead, each after its turn.
    browser = monitor.tree_browser
    assert browser is not None and browser.selected == lead
    rows = browser.rows
    assert [r.node.session_id for r in rows[1:]] == [r.child_id for r in results]
    assert all(r.depth == 1 and r.node.turn_index == 1 for r in rows[1:])
    frame = monitor.to_dataframe()
    assert list(frame["status"]) == ["completed"] * 8
    assert list(frame["response"]) == [r.response for r in results]
    assert list(frame["summary"]) == [r.summary for r in results]


def test_children_appear_in_the_tree_while_it_runs(
    manager: SessionManager, lead: str, make_monitor: Any
) -> None:
    worker = _worker(latency=0.3)
    tasks = [(worker, f"task {i}") for i in range(4)]
    monitor = make_monitor(manager, lead, tasks, DispatchConfig(max_concurrency=2))
    browser = monitor.tree_browser
    # Mid-run: two children run and the two waiting tasks' children are made ahead (all
    # four created, no turn yet), two tasks wait.
    assert _until(lambda: monitor.counts["running"] == 2 and len(browser.rows) == 5)
    assert [r.node.turn_index for r in browser.rows[1:]] == [0, 0, 0, 0]
    assert monitor.counts["waiting"] == 2 and monitor.outcome == "running"
    assert _text(monitor.status_html.value).startswith("Running for")
    assert not monitor.cancel_button.disabled
    assert "running" in _text(monitor.table_html.value)
    assert monitor.wait(30)
    assert [r.node.turn_index for r in browser.rows[1:]] == [1, 1, 1, 1]


def test_cancel_stops_the_unfinished_tasks_and_keeps_the_finished(
    manager: SessionManager, lead: str, make_monitor: Any
) -> None:
    fast, slow = _worker("fast"), _worker("slow", latency=30)
    tasks = [(fast, "a"), (fast, "b"), (slow, "c"), (slow, "d")]
    monitor = make_monitor(manager, lead, tasks, DispatchConfig(max_concurrency=4))
    assert _until(lambda: monitor.counts["done"] == 2 and monitor.counts["running"] == 2)
    monitor.cancel_button.click()
    assert monitor.wait(10)
    assert monitor.outcome == "cancelled"
    assert monitor.progress.statuses == ["completed", "completed", "cancelled", "cancelled"]
    assert monitor.counts["cancelled"] == 2 and monitor.bar.bar_style == "danger"
    assert monitor.bar.value == 4 and monitor.cancel_button.disabled
    assert _text(monitor.status_html.value).startswith("Cancelled after")
    assert "2 completed, 0 failed, 2 cancelled" in _text(monitor.status_html.value)
    with pytest.raises(concurrent.futures.CancelledError, match="cancelled"):
        monitor.results()
    assert monitor.cancel() is False  # over already
    # The finished children keep their results and checkpoints; the others are marked.
    children = manager.children_sync(lead)
    assert len(children) == 4
    records = [manager.store.get_session(c) for c in children]
    marks = [r.metadata.get("dispatch") for r in records if r is not None]
    assert marks.count("cancelled") == 2
    # Every child is known, the cancelled ones too (named as soon as they existed).
    pairs = list(zip(monitor.progress.child_ids, monitor.progress.statuses, strict=True))
    assert all(c is not None for c, _ in pairs) and set(monitor.progress.child_ids) == set(children)
    done = [c for c, status in pairs if status == "completed" and c is not None]
    assert len(done) == 2
    for child, status in pairs[2:]:
        record = manager.store.get_session(child or "")
        assert status == "cancelled" and record is not None
        assert record.metadata.get("dispatch") == "cancelled"
    for child in done:
        assert str(manager.child_memory(child)["result_summary"]).startswith("ok: ")
        assert manager.checkpointer.list_checkpoints_sync(child)[0].turn_index == 1
    frame = monitor.to_dataframe()
    assert list(frame["status"]) == ["completed", "completed", "cancelled", "cancelled"]
    assert list(frame["summary"])[:2] == ["ok: a", "ok: b"]


def test_failures_keep_their_place(manager: SessionManager, lead: str, make_monitor: Any) -> None:
    def broken(_messages: object) -> str:
        raise ModelError("the backend said no")

    bad = Agent(name="bad", model=ScriptedModel(broken))
    tasks = [(_worker(), "one"), (bad, "two"), (_worker(), "three")]
    monitor = make_monitor(manager, lead, tasks, DispatchConfig(max_concurrency=2))
    results = monitor.results(timeout=30)
    assert isinstance(results[1], SubTaskError) and results[1].status == "failed"
    assert [type(r) for r in (results[0], results[2])] == [SubTaskResult, SubTaskResult]
    assert monitor.counts["failed"] == 1 and monitor.bar.bar_style == "warning"
    assert "2 completed, 1 failed" in _text(monitor.status_html.value)
    frame = monitor.to_dataframe()
    assert list(frame["status"]) == ["completed", "failed", "completed"]
    assert "the backend said no" in frame["error"][1]


def test_paging_escaping_and_static_html(
    manager: SessionManager, lead: str, make_monitor: Any
) -> None:
    worker = _worker()
    tasks = [(worker, f"{XSS} {i}") for i in range(45)]
    monitor = make_monitor(manager, lead, tasks, DispatchConfig(max_concurrency=10), tree=False)
    assert monitor.wait(30)
    assert monitor.tree_browser is None and monitor.pages == 3
    assert len(monitor.page_rows()) == 20
    monitor.show_page(2)
    assert [r.index for r in monitor.page_rows()] == list(range(40, 45))
    assert "&lt;img src=x" in monitor.table_html.value
    assert "<img" not in monitor.table_html.value and "<img" not in monitor._repr_html_()
    assert "45 tasks · at most 10 at once" in _text(monitor._repr_html_())


def test_bad_arguments_fail_at_once(manager: SessionManager, lead: str) -> None:
    with pytest.raises(SessionNotFoundError):
        DispatchMonitor(manager, "ses_nope", [(_worker(), "x")], display=False)
    with pytest.raises(InvalidInputError, match="pairs"):
        DispatchMonitor(manager, lead, ["just text"], display=False)  # type: ignore[list-item]
    assert manager.children_sync(lead) == []


def test_displays_itself(
    manager: SessionManager, lead: str, make_monitor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: list[object] = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monitor = make_monitor(manager, lead, [(_worker(), "x")], display=True)
    assert shown == [monitor]
    assert monitor.wait(30)


def test_close_leaves_the_dispatch_running_and_stops_the_tree(
    manager: SessionManager, lead: str, make_monitor: Any
) -> None:
    monitor = make_monitor(manager, lead, [(_worker(latency=0.1), "x")])
    monitor.close()
    assert monitor.dispatch_task.wait(30)
    assert monitor.dispatch_task.future.result()[0].response == "ok: x"


def test_cancel_before_the_dispatch_got_going(
    manager: SessionManager, lead: str, make_monitor: Any
) -> None:
    import threading

    from agcore_lab.aio import submit

    gate = threading.Event()

    async def hold_the_loop() -> None:
        gate.wait(10)  # blocks agcore_lab's loop: the dispatch cannot start yet

    held = submit(hold_the_loop())
    tasks = [(_worker(), f"task {i}") for i in range(3)]
    monitor = make_monitor(manager, lead, tasks, tree=False)
    assert monitor.cancel() is True
    gate.set()
    held.result(10)
    assert monitor.wait(10)
    assert monitor.outcome == "cancelled"
    assert monitor.progress.statuses == ["cancelled"] * 3
    assert monitor.counts["cancelled"] == 3 and monitor.cancel_button.disabled
    assert manager.children_sync(lead) == []  # no child was ever created


def test_stale_a_failed_child_says_failed_with_its_error_and_replies_are_previewed(
    manager: SessionManager, lead: str, make_monitor: Any
) -> None:
    # The stale case of the issue: a child whose task failed showed as "live" in the tree,
    # with nothing saying it failed.
    def broken(_messages: object) -> str:
        raise ModelError("the backend said no")

    bad = Agent(name="bad", model=ScriptedModel(broken))
    tasks = [(_worker(reply="fine"), "one"), (bad, "two")]
    monitor = make_monitor(manager, lead, tasks, DispatchConfig(max_concurrency=2))
    monitor.results(timeout=30)
    assert monitor.wait(30)
    rows = monitor.rows()
    assert rows[0].reply == "fine: one" and rows[0].error is None
    assert rows[1].status == "failed" and "the backend said no" in (rows[1].error or "")
    table = _text(monitor.table_html.value)
    assert "reply / error" in table and "fine: one" in table and "the backend said no" in table
    # The embedded tree shows only the dispatch's parent and its children, with the
    # dispatch's statuses first.
    tree = monitor.tree_browser
    assert tree is not None and tree.root == lead
    statuses = {r["id"]: r["cells"]["status"] for r in tree.tree_table.rows}
    assert set(statuses) == {lead, rows[0].child_id, rows[1].child_id}
    assert statuses[rows[1].child_id].startswith("failed")
    assert statuses[rows[0].child_id].startswith("done")
    bad_row = next(r for r in tree.tree_table.rows if r["id"] == rows[1].child_id)
    assert bad_row["tone"] == "error"


def test_the_embedded_tree_leaves_out_other_sessions(
    manager: SessionManager, lead: str, make_monitor: Any
) -> None:
    other = manager.create_sync(Agent(name="other", model=ScriptedModel()))
    monitor = make_monitor(manager, lead, [(_worker(), "one")])
    assert monitor.wait(30)
    assert monitor.tree_browser is not None
    ids = [r["id"] for r in monitor.tree_browser.tree_table.rows]
    assert lead in ids and other not in ids and len(ids) == 2


def test_a_finished_childs_reply_shows_while_the_others_run(
    manager: SessionManager, lead: str, make_monitor: Any
) -> None:
    tasks = [(_worker(reply="fast"), "one"), (_worker("slow", latency=30), "two")]
    monitor = make_monitor(manager, lead, tasks, DispatchConfig(max_concurrency=2))
    assert _until(lambda: monitor.rows()[0].reply == "fast: one", timeout=10)
    assert monitor.outcome == "running" and monitor.rows()[1].reply is None
    assert "fast: one" in _text(monitor.table_html.value)
    monitor.cancel()
    assert monitor.wait(30)


class _GatedModel(ScriptedModel):
    """Answers only once ``gate`` is set: a model call that blocks (without blocking the loop)."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__(lambda messages: f"finished: {messages[-1].text}")
        self.gate = gate

    async def complete(self, messages: Sequence[Message], *, tools: Sequence[Any] = ()) -> Any:
        while not self.gate.is_set():
            await asyncio.sleep(0.01)
        return await super().complete(messages, tools=tools)


def test_a_running_child_shows_its_own_status_live_then_done(
    manager: SessionManager, lead: str, make_monitor: Any
) -> None:
    gate = threading.Event()
    gated = Agent(name="gated", model=_GatedModel(gate))
    monitor = make_monitor(manager, lead, [(gated, "one"), (gated, "two")])
    browser = monitor.tree_browser
    # While the model call blocks, each child is known and shows "running": in the table, in
    # child_status() and in the embedded tree.
    assert _until(lambda: all(monitor.progress.child_ids))
    children = list(monitor.progress.child_ids)
    assert _until(lambda: [r.shown_status for r in monitor.rows()] == ["running", "running"])
    table = _text(monitor.table_html.value)
    assert all(c in table for c in children)
    assert monitor.table_html.value.count('class="agc-badge agc-badge-running"') == 2
    assert [monitor.child_status(c) for c in children] == ["running", "running"]
    assert _until(
        lambda: {r["id"]: r["cells"]["status"] for r in browser.tree_table.rows}.get(
            children[0], ""
        ).startswith("running")
    )
    assert monitor.outcome == "running"
    gate.set()
    assert monitor.wait(30)
    assert [r.shown_status for r in monitor.rows()] == ["done", "done"]
    assert [monitor.child_status(c) for c in children] == ["done", "done"]
    statuses = {r["id"]: r["cells"]["status"] for r in browser.tree_table.rows}
    assert statuses[children[0]].startswith("done") and statuses[children[1]].startswith("done")
    assert monitor.table_html.value.count('class="agc-badge agc-badge-done"') == 2
    assert "finished: one" in _text(monitor._repr_html_())


def _approval_worker(runs: list[int]) -> Agent:
    def transfer(amount: int) -> str:
        """Move money.

        Args:
            amount: How much.
        """
        runs.append(amount)
        return f"sent {amount}"

    tool = Tool.from_function(transfer, name="transfer", requires_approval=True)
    script: list[Any] = [ToolCall(name="transfer", arguments={"amount": 5}), "paid"]
    return Agent(name="payer", model=ScriptedModel(script), tools=[tool])


def test_a_child_waiting_for_approval_says_so_until_it_is_decided(
    manager: SessionManager, lead: str, make_monitor: Any
) -> None:
    runs: list[int] = []
    monitor = make_monitor(manager, lead, [(_approval_worker(runs), "pay")])
    assert monitor.wait(30)
    (child,) = monitor.progress.child_ids
    assert child is not None and monitor.progress.statuses == ["completed"]
    # The dispatch counts the task completed, but the child's turn stopped at the tool call.
    assert monitor.child_status(child) == "waiting for approval"
    assert monitor.rows()[0].shown_status == "waiting for approval"
    assert "waiting for approval" in _text(monitor.table_html.value)
    tree_status = next(r for r in monitor.tree_browser.tree_table.rows if r["id"] == child)
    assert tree_status["cells"]["status"].count("waiting for approval") == 1
    # Decided in a cell: the manager's event brings the monitor up to date.
    (call,) = manager.pending_calls(child)
    manager.resume_sync(child, call.run_id, call.interrupt_id, Approve())
    assert runs == [5]
    assert _until(lambda: monitor.child_status(child) == "done")
    assert _until(lambda: "waiting for approval" not in _text(monitor.table_html.value))
    assert monitor.rows()[0].shown_status == "done"

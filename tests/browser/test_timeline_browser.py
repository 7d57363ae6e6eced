"""CheckpointTimeline in real JupyterLab: the history graph and table, a turn's model calls,
rollback and fork (asked first), sorting, hover and brush — and the render time of a
10,000-checkpoint history.

The first notebook also shows a SessionTreeBrowser, which must follow the rollback by itself.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

SETUP = """\
from agcore_lab import Agent, ScriptedModel, SessionManager, ToolCall
from agcore_lab.jupyter import CheckpointTimeline

def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

model = ScriptedModel([ToolCall(name="add", arguments={"a": 1, "b": 2}), "3", "ok", "ok", "ok"])
manager = SessionManager(agents=[Agent(name="writer", model=model, tools=[add])])
sid = manager.create_sync(manager.agents["writer"])
for i in range(3):
    manager.submit_turn_sync(sid, f"turn {i}")
timeline = CheckpointTimeline(manager, sid)
timeline"""

READ_BACK = 'print("turn index:", manager.get_sync(sid).turn_index)'

TREE = """\
from agcore_lab.jupyter import SessionTreeBrowser

SessionTreeBrowser(manager)"""

KERNEL_STATE = """\
timeline.wait(10)
inspected = timeline.inspector.shown if timeline.inspector is not None else None
if inspected is not None:  # (Run All reaches this cell before anything was clicked)
    print("state:", timeline.graph.sort_key, len(timeline.graph.brush),
          inspected.turn_index, inspected.request_messages[-1].text,
          sum(len(v) for v in timeline.forks.values()))"""

AXIS = 'print("axis:", timeline.graph.axis, timeline.graph.brush)'

pytestmark = pytest.mark.browser


def _rows(timeline: Any) -> Any:
    return timeline.locator("tr.agc-ht-row")


def _pixel(canvas: Any, box: dict[str, float], x: float, y: float) -> list[int]:
    """The RGBA of the canvas at page point ``(x, y)``."""
    return list(
        canvas.evaluate(
            """(el, [x, y]) => {
              const dpr = window.devicePixelRatio || 1;
              const data = el.getContext("2d").getImageData(
                Math.round(x * dpr), Math.round(y * dpr), 1, 1).data;
              return Array.from(data);
            }""",
            [x - box["x"], y - box["y"]],
        )
    )


def _dot(canvas: Any, box: dict[str, float], x: float, row: int) -> tuple[float, float]:
    """Where the graph draws a checkpoint at ``x`` on row ``row`` (see history.js's layout)."""
    low, high = (float(v) for v in (canvas.get_attribute("data-view") or "0,1").split(","))
    left, right, top, row_h = 150, 16, 10, 26
    at = left + (x - low) / (high - low) * (box["width"] - left - right)
    return box["x"] + at, box["y"] + top + row_h * (row + 0.5)


def test_timeline_graph_table_calls_rollback_fork(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    jupyter_lab.write_notebook("timeline.ipynb", [SETUP, READ_BACK, TREE, KERNEL_STATE, AXIS])
    jupyter_lab.open_notebook(page, "timeline.ipynb")
    jupyter_lab.run_all_cells(page)

    timeline = page.locator(".jp-OutputArea-output .agc-timeline").first
    expect(timeline).to_be_visible(timeout=60_000)
    expect(_rows(timeline)).to_have_count(4)
    expect(timeline.locator(".agc-turn")).to_have_text("turn 3")
    canvas = timeline.locator("canvas.agc-ht-canvas")
    expect(canvas).to_have_attribute("data-points", "4")
    expect(canvas).to_have_attribute("data-first-paint-ms", re.compile(r"\d"))
    # Newest first: turn 3, 2, 1, start; the first turn made two model calls (a tool step).
    expect(_rows(timeline).nth(3).locator("td[data-key=label]")).to_have_text("start")
    expect(_rows(timeline).nth(2).locator("td[data-key=calls]")).to_have_text("2")
    read_back = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output")
    expect(read_back).to_have_text("turn index: 3", timeout=30_000)
    tree_row = page.locator(".agc-tree-browser tr.agc-tt-row").first
    expect(tree_row.locator("td[data-key=turns]")).to_have_text("3", timeout=30_000)

    # Hover a dot: its details.
    box = canvas.bounding_box()
    assert box is not None
    page.mouse.move(*_dot(canvas, box, 0.0, 0))  # the first dot (turn 0)
    tip = timeline.locator(".agc-ht-tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("turn 0")

    # Select the turn-1 row: its preview and its two model calls; Inspect opens the inspector.
    _rows(timeline).nth(2).click()
    expect(_rows(timeline).nth(2)).to_have_class(re.compile("agc-ht-selected"))
    expect(timeline.locator(".agc-ckpt-preview .agc-head")).to_contain_text("turn 1")
    calls = timeline.locator("tr.agc-ht-call")
    expect(calls).to_have_count(2)
    expect(timeline.locator(".agc-ht-calls-head")).to_contain_text("2 calls led to")
    calls.first.locator("button.agc-ht-inspect").click()
    inspector = timeline.locator(".agc-calls")
    expect(inspector).to_be_visible(timeout=30_000)
    expect(inspector.locator(".agc-call-detail")).to_contain_text("add")
    jupyter_lab.screenshot(page, "timeline_calls")

    # Rollback, asked first.
    timeline.locator("button.jupyter-button", has_text="Rollback").click()
    expect(timeline.locator(".agc-question")).to_contain_text("back to turn 1")
    timeline.locator("button.jupyter-button", has_text="Confirm rollback").click()
    expect(timeline.locator(".agc-status-line")).to_contain_text(
        "Rolled back to turn 1", timeout=30_000
    )
    expect(timeline.locator(".agc-turn")).to_have_text("turn 1")
    expect(_rows(timeline)).to_have_count(5)
    newest = _rows(timeline).first
    expect(newest.locator("td[data-key=source]")).to_have_text("rollback")
    expect(newest.locator("td[data-key=label]")).to_have_text("↩ to turn 1")
    expect(timeline.locator(".agc-ht-summary")).to_contain_text("1 branch")
    expect(tree_row.locator("td[data-key=turns]")).to_have_text("1")  # the tree followed

    # Fork from the turn-2 checkpoint (row 2 now: rollback, 3, 2, 1, start).
    _rows(timeline).nth(2).click()
    expect(timeline.locator(".agc-ckpt-preview .agc-head")).to_contain_text("turn 2")
    timeline.locator("button.jupyter-button", has_text="Fork").click()
    timeline.locator("button.jupyter-button", has_text="Confirm fork").click()
    expect(timeline.locator(".agc-status-line")).to_contain_text("into session", timeout=30_000)
    child = timeline.locator(".agc-status-line").inner_text().split("into session ")[1].rstrip(".")
    expect(timeline.locator(".agc-head").first).to_contain_text("1 fork")
    jupyter_lab.screenshot(page, "timeline_rollback_fork_light")
    box = canvas.bounding_box()
    assert box is not None
    lane = _dot(canvas, box, 2.5, 0)  # the first branch's line between turns 2 and 3
    light = _pixel(canvas, box, *lane)
    jupyter_lab.set_theme(page, "JupyterLab Dark")
    jupyter_lab.screenshot(page, "timeline_rollback_fork_dark")
    dark = _pixel(canvas, box, *lane)
    # The canvas follows the theme: the lane is drawn in each theme's brand colour.
    assert light != dark and light[3] > 0 and dark[3] > 0, (light, dark)
    jupyter_lab.set_theme(page, "JupyterLab Light")

    # Sort by tokens (a click on the head), then brush a range of turns on the graph.
    timeline.locator("th[data-key=tokens]").click()
    expect(timeline.locator("th[data-key=tokens]")).to_contain_text("▲")
    expect(_rows(timeline).first.locator("td[data-key=label]")).to_have_text("start")
    box = canvas.bounding_box()
    assert box is not None
    y = box["y"] + 15
    page.mouse.move(box["x"] + box["width"] * 0.5, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.75, y, steps=5)
    page.mouse.move(box["x"] + box["width"] - 10, y, steps=5)
    page.mouse.up()
    expect(timeline.locator(".agc-ht-count")).to_contain_text("brushed turns")
    jupyter_lab.run_cell(page, 3)
    state = page.locator(".jp-Notebook .jp-Cell").nth(3).locator(".jp-OutputArea-output")
    expect(state).to_have_text("state: tokens 2 1 turn 0 1", timeout=30_000)
    timeline.locator("button.agc-ht-reset").click()
    expect(timeline.locator(".agc-ht-count")).to_have_text("5 of 5 checkpoints")
    # The time axis (with dates), switched by its button.
    timeline.locator("button[title='x axis: time (UTC)']").click()
    expect(timeline.locator("button.agc-ht-btn.agc-ht-on")).to_have_text("time")
    jupyter_lab.run_cell(page, 4)
    axis = page.locator(".jp-Notebook .jp-Cell").nth(4).locator(".jp-OutputArea-output")
    expect(axis).to_have_text("axis: time []", timeout=30_000)
    jupyter_lab.screenshot(page, "timeline_time_axis")
    expect(timeline.locator(".agc-error")).to_have_count(0)

    # The kernel agrees: the live session's turn index went back.
    jupyter_lab.run_cell(page, 1)
    expect(read_back).to_have_text("turn index: 1", timeout=30_000)

    # The fork links to the child session: its own history opens below.
    timeline.locator("button[title='x axis: turn']").click()
    forked_row = _rows(timeline).filter(has=page.locator("td[data-key=turn]", has_text="2"))
    forked_row.first.click()
    expect(timeline.locator(".agc-ht-forks")).to_contain_text(child)
    timeline.locator("button.agc-ht-open-fork").click()
    nested = timeline.locator(".agc-timeline")
    expect(nested).to_have_count(1, timeout=30_000)
    expect(nested.locator(".agc-head").first).to_contain_text(child)
    expect(nested.locator("tr.agc-ht-row").first.locator("td[data-key=source]")).to_have_text(
        "fork"
    )
    jupyter_lab.screenshot(page, "timeline_fork_opened")
    assert jupyter_lab.dialogs == []


BIG = """\
import time
from agcore_lab import SessionManager, SqliteStore
from agcore_lab.jupyter import CheckpointTimeline

manager = SessionManager(SqliteStore("big.db"))
sid = open("big-sid.txt").read()
start = time.perf_counter()
timeline = CheckpointTimeline(manager, sid)
print(f"built in {time.perf_counter() - start:.2f} s: {len(timeline.checkpoints)} checkpoints")
timeline"""


def _big_history(path: Path, turns: int) -> str:
    """A session of ``turns`` turns with a rollback half way and a fork (built once here)."""
    from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore

    agent = Agent(name="bench", model=ScriptedModel(lambda messages: "ok"))
    manager = SessionManager(SqliteStore(path), agents=[agent])
    sid = manager.create_sync(agent)
    for i in range(turns):
        manager.submit_turn_sync(sid, f"t{i}")
        if i == turns // 2:
            back = manager.checkpointer.list_checkpoints_sync(sid)[turns // 4]
            manager.checkpointer.rollback_sync(sid, back.ckpt_id)
    ckpts = manager.checkpointer.list_checkpoints_sync(sid)
    manager.checkpointer.fork_sync(sid, ckpts[len(ckpts) // 3].ckpt_id)
    manager.store.close()
    return sid


def test_ten_thousand_checkpoints_render_time(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    built = time.perf_counter()
    sid = _big_history(jupyter_lab.root_dir / "big.db", 9_998)
    (jupyter_lab.root_dir / "big-sid.txt").write_text(sid)
    print(f"\nbuilt a history of 10,000 checkpoints in {time.perf_counter() - built:.1f} s")
    jupyter_lab.write_notebook("big.ipynb", [BIG])
    jupyter_lab.open_notebook(page, "big.ipynb")
    started = time.perf_counter()
    jupyter_lab.run_all_cells(page)
    timeline = page.locator(".jp-OutputArea-output .agc-timeline")
    canvas = timeline.locator("canvas.agc-ht-canvas")
    expect(canvas).to_have_attribute("data-points", "10000", timeout=120_000)
    page.wait_for_function(
        "document.querySelector('canvas.agc-ht-canvas')?.dataset.firstPaintMs !== undefined",
        timeout=60_000,
    )
    wall = time.perf_counter() - started
    paint_ms = float(canvas.get_attribute("data-first-paint-ms") or "nan")
    built_line = page.locator(".jp-OutputArea-output pre").first.inner_text()
    print(
        f"10,000 checkpoints: first paint of the graph {paint_ms:.0f} ms after the view was "
        f"created in the page (goal < 1000 ms: {'PASS' if paint_ms < 1000 else 'MISS'}); "
        f"run cell -> drawn {wall:.2f} s (kernel: {built_line})"
    )
    assert paint_ms < 10_000  # a sanity bound only; the figure is printed above
    turn = timeline.locator(".agc-turn").inner_text().split()[-1]
    expect(_rows(timeline).first.locator("td[data-key=turn]")).to_have_text(turn)
    expect(timeline.locator(".agc-ht-summary")).to_contain_text("10,000 checkpoints")
    expect(timeline.locator(".agc-ht-summary")).to_contain_text("1 branch")
    jupyter_lab.screenshot(page, "timeline_10000_whole")
    # The table is virtualised: a few dozen rows in the page, not 10,000.
    assert _rows(timeline).count() < 80
    before = _rows(timeline).first.get_attribute("data-id")
    timeline.locator(".agc-ht-scroll").evaluate("(el) => { el.scrollTop = 22 * 5000; }")
    expect(_rows(timeline).first).not_to_have_attribute("data-id", before or "", timeout=5_000)
    assert _rows(timeline).count() < 80
    # Wheel zoom stays responsive: time a few zoom steps.
    box = canvas.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 20)
    zoom_started = time.perf_counter()
    for _ in range(10):
        page.mouse.wheel(0, -200)
    page.wait_for_timeout(100)
    zoom_ms = (time.perf_counter() - zoom_started) * 1000
    print(f"10 wheel-zoom steps: {zoom_ms:.0f} ms; view {canvas.get_attribute('data-view')}")
    jupyter_lab.screenshot(page, "timeline_10000_light")
    jupyter_lab.set_theme(page, "JupyterLab Dark")
    jupyter_lab.screenshot(page, "timeline_10000_dark")
    jupyter_lab.set_theme(page, "JupyterLab Light")
    assert jupyter_lab.dialogs == []

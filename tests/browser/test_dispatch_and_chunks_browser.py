"""DispatchMonitor and ChunkInspector in real JupyterLab, each through its main interaction.

- The monitor runs a dispatch with one failing and two slow tasks; the test presses Cancel and
  reads back in the kernel that the dispatch was cancelled. The table shows a finished child's
  reply while the others run, and the scoped tree shows the failed child as failed and the
  stopped ones as cancelled.
- The inspector: the test types a chunk size into the slider's readout and reads back in the
  kernel that the splitter changed; the table is paged.
Both are looked at in the light and the dark theme; both stay within the height cap.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

DISPATCH = """\
from agcore_lab import Agent, DispatchConfig, ModelError, ScriptedModel, SessionManager
from agcore_lab.jupyter import DispatchMonitor

def broken(messages):
    raise ModelError("the backend said no")

manager = SessionManager()
lead = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
quick = Agent(name="quick", model=ScriptedModel(lambda m: "quick answer: " + m[-1].text))
slow = Agent(name="slow", model=ScriptedModel(lambda m: "slow", latency=120))
bad = Agent(name="bad", model=ScriptedModel(broken))
monitor = DispatchMonitor(manager, lead, [(quick, "one"), (bad, "two"), (slow, "three"),
                                          (slow, "four")], DispatchConfig(max_concurrency=4))"""

DISPATCH_READ = 'print("outcome:", monitor.outcome, monitor.progress.statuses)'

CHUNKS = """\
from agcore_lab.jupyter import ChunkInspector

inspector = ChunkInspector("word " * 4000, chunk_size=300, chunk_overlap=0)
inspector"""

CHUNKS_READ = 'print("size:", inspector.splitter.chunk_size, "pages:", inspector.pages)'

pytestmark = pytest.mark.browser


def _shown(page: Any) -> Any:
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")


def test_dispatch_monitor_cancel_in_jupyterlab(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    jupyter_lab.write_notebook("dispatch.ipynb", [DISPATCH, DISPATCH_READ])
    jupyter_lab.open_notebook(page, "dispatch.ipynb")
    jupyter_lab.run_cell(page, 0)
    view = _shown(page).locator(".jp-OutputArea-output .agc-dispatch-monitor")
    expect(view).to_be_visible(timeout=60_000)
    table = view.locator("table.agc-tasks")
    expect(table).to_contain_text("quick answer: one", timeout=30_000)  # while others run
    tree_rows = view.locator(".agc-tree-browser tr.agc-tt-row")
    expect(tree_rows).to_have_count(5, timeout=30_000)  # the lead and its four children
    expect(view.locator(".agc-tt-status", has_text="failed")).to_have_count(1)
    # The slow children's own status while their model calls run: "running", in the table
    # (with their session) and in the tree; the quick one is "done".
    running = table.locator("tr.agc-task-running")
    expect(running).to_have_count(2)
    expect(running.locator(".agc-badge-running")).to_have_count(2)
    expect(running.locator("code").first).to_have_text(re.compile(r"^ses_"))
    expect(table.locator("tr.agc-task-completed .agc-badge-done")).to_have_text("done")
    expect(view.locator(".agc-tt-status", has_text="running")).to_have_count(2)
    expect(view.locator(".agc-tt-status", has_text="done")).to_have_count(1)
    jupyter_lab.screenshot(page, "dispatch_light")

    view.locator("button.jupyter-button", has_text="Cancel").first.click()
    expect(view.locator(".agc-status-line").first).to_contain_text("Cancelled", timeout=30_000)
    expect(view.locator(".agc-tt-status", has_text="cancelled")).to_have_count(2)
    # (The failed child's error text comes with the dispatch's results, which a cancelled
    # dispatch does not return: the unit tests check it for a dispatch that completes.)
    jupyter_lab.run_cell(page, 1)
    read_back = _shown(page).locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output")
    expect(read_back).to_have_text(
        "outcome: cancelled ['completed', 'failed', 'cancelled', 'cancelled']", timeout=30_000
    )
    height = view.evaluate("e => e.getBoundingClientRect().height")
    assert height <= 602, height
    jupyter_lab.set_theme(page, "JupyterLab Dark")
    jupyter_lab.screenshot(page, "dispatch_dark")
    jupyter_lab.set_theme(page, "JupyterLab Light")
    assert jupyter_lab.dialogs == []


def test_chunk_inspector_slider_in_jupyterlab(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    jupyter_lab.write_notebook("chunks.ipynb", [CHUNKS, CHUNKS_READ])
    jupyter_lab.open_notebook(page, "chunks.ipynb")
    jupyter_lab.run_cell(page, 0)
    view = _shown(page).locator(".jp-OutputArea-output .agc-chunk-inspector")
    expect(view).to_be_visible(timeout=60_000)
    expect(view.locator(".agc-status").first).to_contain_text("chunk size 300")
    expect(view.locator("svg.agc-hist .agc-x-tick").first).to_have_text("0")
    jupyter_lab.screenshot(page, "chunks_light")

    # Type an exact size into the slider's readout (what a user does for a precise value).
    readout = view.locator(".widget-readout").first
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("100")
    page.keyboard.press("Enter")
    expect(view.locator(".agc-status").first).to_contain_text("chunk size 100,", timeout=30_000)
    view.locator("button.jupyter-button", has_text="Next").click()
    expect(view.locator(".agc-status", has_text="page 2 of")).to_have_count(1)
    jupyter_lab.run_cell(page, 1)
    read_back = _shown(page).locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output")
    expect(read_back).to_contain_text("size: 100 pages: 4", timeout=30_000)
    height = view.evaluate("e => e.getBoundingClientRect().height")
    assert height <= 602, height
    jupyter_lab.set_theme(page, "JupyterLab Dark")
    jupyter_lab.screenshot(page, "chunks_dark")
    jupyter_lab.set_theme(page, "JupyterLab Light")
    assert jupyter_lab.dialogs == []

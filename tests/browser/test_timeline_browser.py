"""CheckpointTimeline in real JupyterLab: select a checkpoint, Rollback, Confirm, see it change.

The notebook also shows a SessionTreeBrowser, which must follow the rollback by itself.
"""

from __future__ import annotations

from typing import Any

import pytest

SETUP = """\
from agcore_lab import Agent, ScriptedModel, SessionManager
from agcore_lab.jupyter import CheckpointTimeline

manager = SessionManager(agents=[Agent(name="writer", model=ScriptedModel())])
sid = manager.create_sync(manager.agents["writer"])
for i in range(3):
    manager.submit_turn_sync(sid, f"turn {i}")
timeline = CheckpointTimeline(manager, sid)
timeline"""

READ_BACK = 'print("turn index:", manager.get_sync(sid).turn_index)'

TREE = """\
from agcore_lab.jupyter import SessionTreeBrowser

SessionTreeBrowser(manager)"""

pytestmark = pytest.mark.browser


def test_timeline_rollback_in_jupyterlab(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    jupyter_lab.write_notebook("timeline.ipynb", [SETUP, READ_BACK, TREE])
    jupyter_lab.open_notebook(page, "timeline.ipynb")
    jupyter_lab.run_all_cells(page)

    timeline = page.locator(".jp-OutputArea-output .agc-timeline")
    expect(timeline).to_be_visible(timeout=60_000)
    options = timeline.locator(".agc-ckpt-list select option")
    expect(options).to_have_count(4)
    expect(timeline.locator(".agc-turn")).to_have_text("turn 3")
    expect(timeline.locator("svg.agc-plot:not(.agc-history) circle")).to_have_count(4)
    expect(timeline.locator("svg.agc-history polyline")).to_have_count(1)
    read_back = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output")
    expect(read_back).to_have_text("turn index: 3", timeout=30_000)
    tree_row = page.locator(".agc-tree-browser tr.agc-tt-row").first
    expect(tree_row.locator("td[data-key=agent]")).to_have_text("writer", timeout=30_000)
    expect(tree_row.locator("td[data-key=turns]")).to_have_text("3")

    # Pick the checkpoint after turn 1 (newest first: 3, 2, 1, start).
    timeline.locator(".agc-ckpt-list select").select_option(index=2)
    expect(timeline.locator(".agc-ckpt-preview .agc-head")).to_contain_text("turn 1")
    timeline.locator("button.jupyter-button", has_text="Rollback").click()
    expect(timeline.locator(".agc-question")).to_contain_text("back to turn 1")
    page.screenshot(path=str(jupyter_lab.tmp_dir / "timeline_confirm.png"))
    timeline.locator("button.jupyter-button", has_text="Confirm rollback").click()

    expect(timeline.locator(".agc-status-line")).to_contain_text(
        "Rolled back to turn 1", timeout=30_000
    )
    expect(timeline.locator(".agc-turn")).to_have_text("turn 1")
    expect(options).to_have_count(5)
    expect(options.first).to_contain_text("rollback")
    expect(timeline.locator("svg.agc-plot:not(.agc-history) circle")).to_have_count(5)
    # The history graph branches at the rollback: a second lane, labelled where it went.
    expect(timeline.locator("svg.agc-history polyline")).to_have_count(2)
    expect(timeline.locator("svg.agc-history .agc-lane-label").nth(1)).to_contain_text(
        "rollback to turn 1"
    )
    expect(timeline.locator(".agc-error")).to_have_count(0)
    expect(tree_row.locator("td[data-key=turns]")).to_have_text("1")  # the tree followed
    shot = jupyter_lab.screenshot(page, "timeline_rolled_back")
    assert shot.stat().st_size > 10_000

    # The kernel agrees: the live session's turn index went back.
    jupyter_lab.run_cell(page, 1)
    expect(read_back).to_have_text("turn index: 1", timeout=30_000)
    assert jupyter_lab.dialogs == []

"""Two kernels on one file: a turn submitted elsewhere shows up in the open views by itself.

The notebook's kernel shows a SessionTreeBrowser and a CheckpointTimeline of a session kept in
a SQLite file; this test process stands in for the second kernel and adds a turn to the same
session through its own store. No Refresh button is pressed.
"""

from __future__ import annotations

from typing import Any

import pytest

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore

SETUP = """\
from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.jupyter import CheckpointTimeline, SessionTreeBrowser

manager = SessionManager(SqliteStore("two-kernels.db"), agents=[Agent(name="writer")])
sid = manager.create_sync(manager.agents["writer"])
manager.submit_turn_sync(sid, "from the first kernel")
open("sid.txt", "w").write(sid)
CheckpointTimeline(manager, sid)"""

TREE = "SessionTreeBrowser(manager)"

pytestmark = pytest.mark.browser


def test_a_turn_from_another_kernel_appears_without_refresh(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    jupyter_lab.write_notebook("two-kernels.ipynb", [SETUP, TREE])
    jupyter_lab.open_notebook(page, "two-kernels.ipynb")
    jupyter_lab.run_all_cells(page)
    timeline = page.locator(".jp-OutputArea-output .agc-timeline")
    expect(timeline).to_be_visible(timeout=60_000)
    expect(timeline.locator(".agc-turn")).to_have_text("turn 1")
    tree_row = page.locator(".agc-tree-browser tr.agc-tt-row").first
    expect(tree_row.locator("td[data-key=agent]")).to_have_text("writer", timeout=30_000)
    expect(tree_row.locator("td[data-key=turns]")).to_have_text("1")
    jupyter_lab.wait_for_idle(page)

    # The second kernel: its own store on the same file.
    sid = (jupyter_lab.root_dir / "sid.txt").read_text()
    other = SessionManager(
        SqliteStore(jupyter_lab.root_dir / "two-kernels.db"),
        agents=[Agent(name="writer", model=ScriptedModel())],
        watch_interval=None,
    )
    other.submit_turn_sync(sid, "from the second kernel")

    expect(timeline.locator(".agc-turn")).to_have_text("turn 2", timeout=15_000)
    expect(timeline.locator("tr.agc-ht-row")).to_have_count(3)
    expect(tree_row.locator("td[data-key=turns]")).to_have_text("2", timeout=15_000)
    page.screenshot(path=str(jupyter_lab.tmp_dir / "two_kernels.png"))
    assert jupyter_lab.dialogs == []

"""Views stay true after Run All: later cells change what earlier views show.

The stale cases of issue 12, in real JupyterLab: a diff viewer whose slots the next cell merges
(it used to keep offering "Merge what-if → main" and preview "append 0 messages"), and a
timeline whose session the next cell destroys (it used to say "live" with Rollback and Fork
enabled). Both must update by themselves, say what happened and disable what no longer applies.
"""

from __future__ import annotations

from typing import Any

import pytest

DIFF = """\
from agcore_lab import Agent, AgentSession, ScriptedModel, SessionManager
from agcore_lab.jupyter import CheckpointTimeline, SlotDiffViewer

session = AgentSession(Agent(name="demo", model=ScriptedModel()))
session.submit_turn_sync("hi")
session.fork_slot_sync("what-if", switch=True)
session.submit_turn_sync("and then?")
viewer = SlotDiffViewer(session, "main", "what-if")
viewer"""

MERGE = 'session.merge_slot_sync("what-if", into="main")'

TIMELINE = """\
manager = SessionManager(agents=[Agent(name="writer", model=ScriptedModel())])
sid = manager.create_sync(manager.agents["writer"])
for i in range(4):
    manager.submit_turn_sync(sid, f"turn {i}")
timeline = CheckpointTimeline(manager, sid)
timeline"""

DESTROY = "manager.destroy_sync(sid)"

pytestmark = pytest.mark.browser


def test_views_follow_later_cells(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    jupyter_lab.write_notebook("stale.ipynb", [DIFF, MERGE, TIMELINE, DESTROY])
    jupyter_lab.open_notebook(page, "stale.ipynb")
    jupyter_lab.run_all_cells(page)
    jupyter_lab.wait_for_idle(page)

    viewer = page.locator(".jp-OutputArea-output .agc-diff-viewer")
    merge = viewer.locator("button.jupyter-button", has_text="merge")
    expect(merge).to_have_text("Nothing to merge", timeout=30_000)
    expect(merge).to_be_disabled()
    expect(viewer.locator(".agc-head").first).to_contain_text("main (4 messages)")
    expect(viewer.locator(".agc-cell.agc-right_only")).to_have_count(0)

    timeline = page.locator(".jp-OutputArea-output .agc-timeline")
    expect(timeline.locator(".agc-head").first).to_contain_text("Gone:", timeout=30_000)
    expect(timeline.locator(".agc-head").first).to_contain_text("was destroyed")
    expect(timeline.locator(".agc-head").first).not_to_contain_text("live")
    for label in ("Rollback", "Fork"):
        expect(timeline.locator("button.jupyter-button", has_text=label)).to_be_disabled()
    expect(timeline.locator("tr.agc-ht-row")).to_have_count(0)
    expect(timeline.locator(".agc-ht-summary")).to_have_text(
        "session destroyed: no history to show"
    )
    jupyter_lab.screenshot(page, "stale_light")
    jupyter_lab.set_theme(page, "JupyterLab Dark")
    jupyter_lab.screenshot(page, "stale_dark")
    jupyter_lab.set_theme(page, "JupyterLab Light")
    assert jupyter_lab.dialogs == []

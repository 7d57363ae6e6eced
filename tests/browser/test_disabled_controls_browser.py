"""Disabled controls look disabled in every view, in JupyterLab Light and Dark.

Issue 12: in JupyterLab Dark a merged slot's Merge and a gone timeline's Rollback/Fork kept
their primary/danger colours although disabled. One shared rule (``common/theme.py``) greys
and dims every disabled control inside a view. The test compares a disabled Merge (its slots
were merged by a later cell) with an enabled Merge of another viewer, and a gone timeline's
Rollback/Fork with those enabled colours, through the browser's computed styles.
"""

from __future__ import annotations

from typing import Any

import pytest

from agcore_lab.jupyter.common.theme import DISABLED_OPACITY

VIEWS = """\
from agcore_lab import Agent, AgentSession, ScriptedModel, SessionManager
from agcore_lab.jupyter import CheckpointTimeline, SlotDiffViewer

def forked():
    session = AgentSession(Agent(name="demo", model=ScriptedModel()))
    session.submit_turn_sync("hi")
    session.fork_slot_sync("what-if", switch=True)
    session.submit_turn_sync("and then?")
    return session

merged, open_ = forked(), forked()
display(SlotDiffViewer(merged, "main", "what-if"), SlotDiffViewer(open_, "main", "what-if"))"""

MERGE = 'merged.merge_slot_sync("what-if", into="main")'

TIMELINE = """\
manager = SessionManager(agents=[Agent(name="writer", model=ScriptedModel())])
sid = manager.create_sync(manager.agents["writer"])
manager.submit_turn_sync(sid, "turn")
timeline = CheckpointTimeline(manager, sid)
timeline"""

DESTROY = "manager.destroy_sync(sid)"

pytestmark = pytest.mark.browser

_STYLE = """el => {
  const s = getComputedStyle(el);
  return {opacity: s.opacity, background: s.backgroundColor, color: s.color,
          disabled: el.disabled};
}"""


def _style(locator: Any) -> dict[str, Any]:
    return dict(locator.evaluate(_STYLE))


def test_disabled_buttons_are_dimmed_in_light_and_dark(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    jupyter_lab.write_notebook("disabled.ipynb", [VIEWS, MERGE, TIMELINE, DESTROY])
    jupyter_lab.open_notebook(page, "disabled.ipynb")
    jupyter_lab.run_all_cells(page)
    jupyter_lab.wait_for_idle(page)

    viewers = page.locator(".jp-OutputArea-output .agc-diff-viewer")
    expect(viewers).to_have_count(2, timeout=60_000)
    gone_merge = viewers.nth(0).locator("button.jupyter-button", has_text="merge")
    live_merge = viewers.nth(1).locator("button.jupyter-button", has_text="Merge what-if")
    expect(gone_merge).to_have_text("Nothing to merge", timeout=30_000)
    expect(gone_merge).to_be_disabled()
    expect(live_merge).to_be_enabled()
    timeline = page.locator(".jp-OutputArea-output .agc-timeline")
    expect(timeline.locator(".agc-head").first).to_contain_text("Gone:", timeout=30_000)
    rollback = timeline.locator("button.jupyter-button", has_text="Rollback")
    fork = timeline.locator("button.jupyter-button", has_text="Fork")
    expect(rollback).to_be_disabled()
    expect(fork).to_be_disabled()

    for theme in ("JupyterLab Dark", "JupyterLab Light"):
        jupyter_lab.set_theme(page, theme)
        enabled, disabled = _style(live_merge), _style(gone_merge)
        assert not enabled["disabled"] and disabled["disabled"]
        assert float(enabled["opacity"]) == 1.0, (theme, enabled)
        assert float(disabled["opacity"]) == pytest.approx(DISABLED_OPACITY), (theme, disabled)
        # The same primary button: disabled, it loses its colour (greyed), text too.
        assert disabled["background"] != enabled["background"], (theme, disabled, enabled)
        assert disabled["color"] != enabled["color"], (theme, disabled, enabled)
        for button in (rollback, fork):  # the history family's buttons follow the same rule
            style = _style(button)
            assert float(style["opacity"]) == pytest.approx(DISABLED_OPACITY), (theme, style)
            assert style["background"] == disabled["background"], (theme, style, disabled)
        name = "dark" if "Dark" in theme else "light"
        viewers.nth(0).scroll_into_view_if_needed()
        jupyter_lab.screenshot(page, f"disabled_controls_{name}")
    assert jupyter_lab.dialogs == []

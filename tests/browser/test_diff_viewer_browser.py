"""SlotDiffViewer in real JupyterLab: render, escape, preview, confirm, dark theme."""

from __future__ import annotations

from typing import Any

import pytest

XSS = "<img src=x onerror=alert(1)>"

SETUP = f"""\
from agcore_lab import Agent, AgentSession, ScriptedModel
from agcore_lab.jupyter import SlotDiffViewer

session = AgentSession(Agent(name="demo", model=ScriptedModel(["Hello!", "A picture, as text."])))
session.submit_turn_sync("hi")
session.fork_slot_sync("alt", switch=True)
session.submit_turn_sync({XSS!r})
viewer = SlotDiffViewer(session, "main", "alt")
viewer"""

pytestmark = pytest.mark.browser


def _background(page: Any, selector: str) -> str:
    return str(page.eval_on_selector(selector, "el => getComputedStyle(el).backgroundColor"))


def test_diff_viewer_merge_in_jupyterlab(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    jupyter_lab.write_notebook("diff_viewer.ipynb", [SETUP])
    jupyter_lab.open_notebook(page, "diff_viewer.ipynb")
    jupyter_lab.run_all_cells(page)

    viewer = page.locator(".jp-OutputArea-output .agc-diff-viewer")
    expect(viewer).to_be_visible(timeout=60_000)
    expect(viewer.locator(".agc-colhead")).to_have_text(["main", "alt"])
    expect(viewer.locator(".agc-note.agc-fold")).to_contain_text("2 shared messages")
    right_only = viewer.locator(".agc-cell.agc-right_only .agc-text")
    # The message is shown as text: the literal characters, and no <img> element anywhere.
    expect(right_only).to_have_text([XSS, "A picture, as text."])
    assert viewer.locator("img").count() == 0
    box, grid = viewer.bounding_box(), viewer.locator(".agc-grid").bounding_box()
    assert grid["x"] + grid["width"] <= box["x"] + box["width"] + 0.5  # nothing cut off
    assert jupyter_lab.dialogs == []
    # Compact rows: a short message's role and text sit on one line, and the header is one line.
    line = viewer.locator(".agc-cell.agc-right_only .agc-line").first
    role, text = line.locator(".agc-role").bounding_box(), line.locator(".agc-text").bounding_box()
    assert abs(role["y"] - text["y"]) < 8 and text["x"] > role["x"] + role["width"]
    cell_height = viewer.locator(".agc-cell.agc-right_only").first.bounding_box()["height"]
    jupyter_lab.screenshot(page, "diff_viewer_before")
    assert cell_height < 42, cell_height  # one line (37 px here); two lines took more
    header = viewer.locator(".agc-head.agc-summary")
    expect(header).to_have_text("main (2 messages) ⟷ alt (4 messages) · 2 shared · 2 only in alt")
    assert header.bounding_box()["height"] < 30
    jupyter_lab.screenshot(page, "diff_viewer_before")

    viewer.locator("button.jupyter-button", has_text="Merge alt").click()
    expect(viewer.locator(".agc-describe")).to_have_text(
        "This will append 2 message(s) from 'alt' to 'main' (2 -> 4 messages)."
    )
    expect(viewer.locator(".agc-preview li .agc-text").first).to_have_text(XSS)
    page.screenshot(path=str(jupyter_lab.tmp_dir / "diff_viewer_preview.png"))
    viewer.locator("button.jupyter-button", has_text="Confirm").click()

    expect(viewer.locator(".agc-status")).to_have_text(
        "Merged 'alt' into 'main' (append): 'main' now has 4 messages.", timeout=30_000
    )
    expect(viewer.locator(".agc-cell.agc-right_only")).to_have_count(0)
    expect(viewer.locator(".agc-preview")).to_be_hidden()
    expect(viewer.locator(".agc-note.agc-fold")).to_contain_text("4 shared messages")
    expect(viewer.locator(".agc-error")).to_have_count(0)
    page.screenshot(path=str(jupyter_lab.tmp_dir / "diff_viewer_light.png"))

    # Dark theme: the view's colours come from JupyterLab's CSS variables.
    light = _background(page, ".agc-diff-viewer")
    page.evaluate(
        "window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})"
    )
    page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    page.wait_for_function(
        f"getComputedStyle(document.querySelector('.agc-diff-viewer')).backgroundColor "
        f"!== {light!r}",
        timeout=30_000,
    )
    dark = _background(page, ".agc-diff-viewer")
    channels = [int(c) for c in dark[dark.index("(") + 1 : dark.index(")")].split(",")[:3]]
    assert max(channels) < 100, dark
    expect(page.locator("#jupyterlab-splash")).to_have_count(0, timeout=30_000)
    viewer.locator("button.jupyter-button", has_text="Show shared").click()
    expect(viewer.locator(".agc-cell.agc-shared")).to_have_count(8)
    shot = jupyter_lab.screenshot(page, "diff_viewer_dark")
    assert shot.stat().st_size > 10_000
    assert jupyter_lab.dialogs == []

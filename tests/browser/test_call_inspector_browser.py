"""CallInspector in real JupyterLab: the list, a selected call's request, live updates, and the
dark theme."""

from __future__ import annotations

from typing import Any

import pytest

SETUP = """\
from agcore_lab import Agent, ScriptedModel, SessionManager, ToolCall
from agcore_lab.jupyter import CallInspector

def add(a: int, b: int) -> int:
    "Add two integers."
    return a + b

model = ScriptedModel([ToolCall(name="add", arguments={"a": 2, "b": 3}), "5"])
manager = SessionManager()
sid = manager.create_sync(Agent(name="calc", system_prompt="You add.", model=model, tools=[add]))
manager.submit_turn_sync(sid, "2 + 3?")
inspector = CallInspector(manager, sid)
inspector"""

MORE = 'manager.submit_turn_sync(sid, "and <b>now</b>?").reply'

pytestmark = pytest.mark.browser


def test_call_inspector_in_jupyterlab(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    page.set_viewport_size({"width": 1400, "height": 1300})
    jupyter_lab.write_notebook("calls.ipynb", [SETUP, MORE])
    jupyter_lab.open_notebook(page, "calls.ipynb")
    jupyter_lab.run_cell(page, 0)

    view = page.locator(".jp-OutputArea-output .agc-calls")
    expect(view).to_be_visible(timeout=60_000)
    options = view.locator(".agc-call-list select option")
    expect(options).to_have_count(2)
    expect(view.locator(".agc-head")).to_contain_text("2 calls")
    detail = view.locator(".agc-call-detail")
    # The newest call is shown: the second request of the tool loop, with the tool's result.
    expect(detail.locator(".agc-msg")).to_have_count(4)
    expect(detail.locator(".agc-msg").first.locator(".agc-badge")).to_have_text("system prompt")
    expect(detail.locator(".agc-msg-tool")).to_contain_text("5")
    expect(detail.locator(".agc-diff .agc-add").first).to_be_visible()
    # The detail pane's height is capped.
    height = detail.evaluate("el => el.getBoundingClientRect().height")
    assert height <= 470

    # Pick the first call: its request had two messages and the model asked for the tool.
    view.locator(".agc-call-list select").select_option(index=1)
    expect(detail.locator(".agc-msg")).to_have_count(2)
    expect(detail).to_contain_text('-> add({"a": 2, "b": 3})')
    page.screenshot(path=str(jupyter_lab.tmp_dir / "call_inspector.png"))

    # A new turn in another cell: the open view follows by itself.
    view.locator("button.jupyter-button", has_text="Follow latest").click()
    jupyter_lab.run_cell(page, 1)
    expect(options).to_have_count(3, timeout=30_000)
    expect(detail.locator(".agc-msg-user").last).to_contain_text("and <b>now</b>?")
    expect(detail.locator(".agc-msg-user b")).to_have_count(0)  # shown as text, never markup

    light = view.evaluate("el => getComputedStyle(el).backgroundColor")
    page.evaluate(
        "window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})"
    )
    page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    page.wait_for_timeout(500)
    dark = view.evaluate("el => getComputedStyle(el).backgroundColor")
    assert dark != light
    shot = jupyter_lab.tmp_dir / "call_inspector_dark.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    assert jupyter_lab.dialogs == []

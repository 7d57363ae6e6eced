"""ApprovalPanel in real JupyterLab: a turn waits for approval, the test clicks Approve, and the
tool's result and the turn's final reply appear in the panel.

A second cell reads the outcome back from the kernel, so the click is known to have reached
the engine (the tool ran once), not just the page.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

SETUP = """\
from agcore_lab import Agent, ScriptedModel, SessionManager, Tool, ToolCall
from agcore_lab.jupyter import ApprovalPanel

runs = []

def transfer(to: str, amount: int) -> str:
    \"\"\"Move money.\"\"\"
    runs.append((to, amount))
    return f"sent {amount} to {to}"

model = ScriptedModel([ToolCall(name="transfer", arguments={"to": "u2", "amount": 100}),
                       "Done: 100 are on their way to u2."])
agent = Agent(name="bank", model=model,
              tools=[Tool.from_function(transfer, requires_approval=True, approval_timeout=600)])
manager = SessionManager()
sid = manager.create_sync(agent)
result = manager.submit_turn_sync(sid, "send 100 to u2")
assert result.status == "interrupted"
panel = ApprovalPanel(manager)
panel"""

READ_BACK = """\
call = manager.pending_calls(include_resolved=True)[0]
print(call.status, runs, manager.get_sync(sid).messages[-1].text)"""

pytestmark = pytest.mark.browser


def test_approve_in_jupyterlab(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    jupyter_lab.write_notebook("approval.ipynb", [SETUP, READ_BACK])
    jupyter_lab.open_notebook(page, "approval.ipynb")
    # Only the first cell: the read-back runs after the click.
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-cell')")

    panel = page.locator(".jp-OutputArea-output .agc-approval-panel")
    expect(panel).to_be_visible(timeout=60_000)
    card = panel.locator(".agc-call")
    expect(card).to_have_count(1)
    expect(panel.locator(".agc-head")).to_contain_text("1 waiting · 0 decided")
    expect(card.locator(".agc-tool")).to_have_text("transfer")
    expect(card.locator("pre.agc-args")).to_contain_text('"amount": 100')
    expect(card.locator(".agc-time-left")).to_contain_text("expires in")
    jupyter_lab.screenshot(page, "approval_pending")

    approve = card.locator("button.jupyter-button", has_text=re.compile(r"^\s*Approve\s*$"))
    expect(approve).to_have_count(1)
    approve.click()

    outcome = card.locator(".agc-outcome")
    expect(outcome).to_contain_text("Approved: transfer ran", timeout=30_000)
    expect(outcome.locator("pre.agc-result")).to_have_text("sent 100 to u2")
    expect(outcome.locator(".agc-reply")).to_have_text("Done: 100 are on their way to u2.")
    expect(panel.locator(".agc-head")).to_contain_text("0 waiting · 1 decided")
    expect(approve).to_be_hidden()  # decided: no more buttons
    expect(panel.locator(".agc-error")).to_have_count(0)
    shot = jupyter_lab.tmp_dir / "approval_approved.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000

    # The kernel agrees: executed once, and the turn ended with the reply.
    jupyter_lab.run_cell(page, 1)
    read_back = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output")
    expect(read_back).to_have_text(
        "EXECUTED [('u2', 100)] Done: 100 are on their way to u2.", timeout=30_000
    )
    jupyter_lab.set_theme(page, "JupyterLab Dark")
    jupyter_lab.screenshot(page, "approval_dark")
    jupyter_lab.set_theme(page, "JupyterLab Light")
    assert jupyter_lab.dialogs == []

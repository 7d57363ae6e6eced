"""ApprovalPanel in real JupyterLab, second round: an in-doubt call (its executor died while
the tool ran) is settled from the panel, and the kernel sees the turn continue with what the
person typed; a ticked selection of waiting calls is approved at once; cards stay compact.

Screenshots (light and dark) are kept in ``$AGCORE_SCREENSHOTS`` when set.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

SETUP = """\
import time
from agcore_lab import Agent, ScriptedModel, SessionManager, Tool, ToolCall
from agcore_lab.jupyter import ApprovalPanel

runs = []

def transfer(to: str, amount: int) -> str:
    \"\"\"Move money.\"\"\"
    runs.append((to, amount))
    return f"sent {amount} to {to}"

def agent(name, to, amount):
    model = ScriptedModel([ToolCall(name="transfer", arguments={"to": to, "amount": amount}),
                           lambda messages: f"Noted: {messages[-1].text}"])
    tool = Tool.from_function(transfer, requires_approval=True, approval_timeout=600)
    return Agent(name=name, model=model, tools=[tool])

manager = SessionManager()
calls = []
for i, name in enumerate(["crashed", "alice", "bob"]):
    sid = manager.create_sync(agent(name, f"u{i}", 10 * (i + 1)))
    calls.append(manager.submit_turn_sync(sid, f"send {10 * (i + 1)} to u{i}").pending_tool_call)
doubt = calls[0]
# A worker approved it and died while the tool ran: nobody renews its lease.
manager.store.decide_pending(
    session_id=doubt.session_id, run_id=doubt.run_id, interrupt_id=doubt.interrupt_id,
    to_status="APPROVED_EXECUTING", decision={"kind": "approve", "arguments": doubt.tool_args},
    executor="worker:1:x", lease_seconds=0.05)
time.sleep(0.1)
panel = ApprovalPanel(manager)
panel"""

READ_BACK = """\
stored = manager.store.get_pending(doubt.interrupt_id)
reply = manager.get_sync(doubt.session_id).messages[-1].text
print(stored.status, stored.in_doubt, repr(stored.result), runs, reply)"""

pytestmark = pytest.mark.browser


def test_settle_an_in_doubt_call_in_jupyterlab(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    jupyter_lab.write_notebook("settle.ipynb", [SETUP, READ_BACK])
    jupyter_lab.open_notebook(page, "settle.ipynb")
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-cell')")

    panel = page.locator(".jp-OutputArea-output .agc-approval-panel")
    expect(panel).to_be_visible(timeout=60_000)
    expect(panel.locator(".agc-head").first).to_contain_text("2 waiting · 1 in doubt · 0 decided")
    cards = panel.locator(".agc-call")
    expect(cards).to_have_count(3)
    expect(panel.locator(".agc-call.agc-call-doubt")).to_have_count(1)
    doubt = cards.first  # the oldest call; it loses the in-doubt look once settled
    expect(doubt).to_have_class(re.compile(r"agc-call-doubt"))
    expect(doubt.locator(".agc-doubt")).to_contain_text(
        "in doubt: its process stopped while the tool ran"
    )
    expect(doubt.locator(".agc-doubt")).to_contain_text("run by worker:1:x")
    # The turn is folded: its summary shows, its rows do not.
    turn = doubt.locator("details.agc-turn")
    expect(turn.locator("summary")).to_contain_text("the turn that led to this call")
    expect(turn.locator(".agc-turn-rows")).to_be_hidden()

    jupyter_lab.screenshot(page, "approval_in_doubt")
    # Compact: a waiting card with short arguments is a few lines tall.
    heights = [
        cards.nth(i).bounding_box()["height"]  # type: ignore[index]
        for i in range(1, 3)
    ]
    assert max(heights) < 120, heights
    jupyter_lab.set_theme(page, "JupyterLab Dark")
    jupyter_lab.screenshot(page, "approval_in_doubt_dark")
    jupyter_lab.set_theme(page, "JupyterLab Light")

    doubt.locator(".agc-settle-text input").fill("it did run: the bank confirms 10 to u0")
    doubt.locator("button.jupyter-button", has_text=re.compile(r"^\s*Settle\s*$")).click()
    # Decided, the card moves below the waiting ones.
    outcome = panel.locator(".agc-call .agc-outcome-settled")
    expect(outcome).to_contain_text("Settled transfer with what happened", timeout=30_000)
    expect(outcome.locator(".agc-reply")).to_have_text(
        "Noted: it did run: the bank confirms 10 to u0"
    )
    expect(panel.locator(".agc-call.agc-call-doubt")).to_have_count(0)
    expect(panel.locator(".agc-error")).to_have_count(0)

    # The kernel agrees: settled once, the tool never ran again, the turn went on.
    jupyter_lab.run_cell(page, 1)
    read_back = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output")
    expect(read_back).to_have_text(
        "EXECUTED False 'it did run: the bank confirms 10 to u0' [] "
        "Noted: it did run: the bank confirms 10 to u0",
        timeout=30_000,
    )

    # Approve the two waiting calls at once: tick all, Approve selected.
    panel.locator(".agc-bulk-bar .widget-checkbox input").check()
    approve_all = panel.locator("button.jupyter-button", has_text="Approve selected (2)")
    expect(approve_all).to_be_enabled()
    approve_all.click()
    expect(panel.locator(".agc-head").first).to_contain_text(
        "0 waiting · 3 decided", timeout=30_000
    )
    expect(panel.locator(".agc-outcome", has_text="Approved: transfer ran")).to_have_count(2)
    jupyter_lab.screenshot(page, "approval_settled")
    jupyter_lab.set_theme(page, "JupyterLab Dark")
    jupyter_lab.screenshot(page, "approval_settled_dark")
    jupyter_lab.set_theme(page, "JupyterLab Light")
    assert jupyter_lab.dialogs == []

"""The approval page in headless Chromium: log in, approve one call (the Python side sees the
tool's result and the finished turn), edit another's arguments, reject a third with a reason.

The service runs in this process (``BackgroundServer``, engine on agcore_lab's background
loop), on the same manager the test reads — as ``%agcore serve`` runs it beside a notebook.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    Message,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    Tool,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_lab.serve import BackgroundServer, Limits, create_app

pytestmark = pytest.mark.browser
TOKEN = "page-token-123"


class Bank:
    def __init__(self, path: Path) -> None:
        self.runs: list[tuple[str, int]] = []

        def transfer(to: str, amount: int) -> str:
            """Move money."""
            self.runs.append((to, amount))
            return f"sent {amount} to {to}"

        def script(messages: Sequence[Message]) -> Any:
            last = messages[-1]
            if isinstance(last, UserMessage):
                return ToolCall(
                    name="transfer", arguments={"to": last.text.split()[-1], "amount": 100}
                )
            return "done" if isinstance(last, ToolMessage) and not last.is_error else "refused"

        tool = Tool.from_function(transfer, requires_approval=True, approval_timeout=600)
        self.agent = Agent(name="bank", model=ScriptedModel(script), tools=[tool])
        self.manager = SessionManager(SqliteStore(path), agents=[self.agent])

    def interrupted(self, to: str) -> tuple[str, Any]:
        sid = self.manager.create_sync(self.agent)
        result = self.manager.submit_turn_sync(sid, f"send 100 to {to}")
        assert result.pending_tool_call is not None
        return sid, result.pending_tool_call


@pytest.fixture
def bank(tmp_path: Path) -> Iterator[Bank]:
    made = Bank(tmp_path / "lab.db")
    app = create_app(made.manager, token=TOKEN, limits=Limits(poll_seconds=0.5))
    with BackgroundServer(app) as server:
        made.url = server.url  # type: ignore[attr-defined]
        yield made
    made.manager.store.close()


def test_approve_edit_and_reject_on_the_page(
    browser_context: Any, bank: Bank, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    first_sid, first = bank.interrupted("alice")
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(bank.url + "/approve")  # type: ignore[attr-defined]
        page.fill("input[name=token]", TOKEN)
        page.click("button[type=submit]")
        row = page.locator(f'tr[data-interrupt="{first.interrupt_id}"]')
        expect(row).to_contain_text("transfer")
        expect(row).to_contain_text('"to": "alice"')
        expect(row.locator("td.left")).to_contain_text(" s")
        page.screenshot(path=str(tmp_path / "serve-approval-page.png"))

        row.get_by_role("button", name="Approve", exact=True).click()
        expect(page.locator("#status")).to_contain_text(f"approved transfer ({first.interrupt_id})")
        expect(page.locator("#status")).to_contain_text("reply: done")
        expect(row).to_have_count(0)
        # The Python side: the tool ran once, the call is executed, the turn went on.
        assert bank.runs == [("alice", 100)]
        stored = bank.manager.store.get_pending(first.interrupt_id)
        assert stored is not None and stored.status == "EXECUTED"
        assert bank.manager.get_sync(first_sid).messages[-1].text == "done"

        # Calls made after the page loaded appear by polling.
        _, second = bank.interrupted("bob")
        _, third = bank.interrupted("carol")
        row2 = page.locator(f'tr[data-interrupt="{second.interrupt_id}"]')
        row3 = page.locator(f'tr[data-interrupt="{third.interrupt_id}"]')
        expect(row2).to_be_visible()
        expect(row3).to_be_visible()
        row2.locator("textarea.edit").fill('{"to": "bob", "amount": 7}')
        row2.get_by_role("button", name="Approve edited").click()
        expect(page.locator("#status")).to_contain_text("reply: done")
        row3.locator("input.reason").fill("carol is not a customer")
        row3.get_by_role("button", name="Reject").click()
        expect(page.locator("#status")).to_contain_text("rejected transfer")
        expect(page.locator("#status")).to_contain_text("reply: refused")
        expect(page.locator("td.empty")).to_contain_text("No calls are waiting")
        page.screenshot(path=str(tmp_path / "serve-approval-page-done.png"))
    finally:
        page.close()
    assert bank.runs == [("alice", 100), ("bob", 7)]
    rejected = bank.manager.store.get_pending(third.interrupt_id)
    assert rejected is not None and rejected.status == "REJECTED"
    assert rejected.decision == {"kind": "reject", "reason": "carol is not a customer"}
    assert errors == []  # no script error on the page


def test_a_refresh_that_lands_while_a_reason_is_typed_leaves_the_box_alone(
    browser_context: Any, bank: Bank
) -> None:
    """A poll already on its way when the user starts typing must not swap the rows: that would
    take the box (and the keys typed next) away from under the user's hands."""
    from playwright.sync_api import expect

    _, call = bank.interrupted("dave")
    page = browser_context.new_page()
    held: list[Any] = []
    try:
        page.goto(bank.url + "/approve")  # type: ignore[attr-defined]
        if page.locator("input[name=token]").count():  # not logged in by an earlier test
            page.fill("input[name=token]", TOKEN)
            page.click("button[type=submit]")
        row = page.locator(f'tr[data-interrupt="{call.interrupt_id}"]')
        expect(row).to_be_visible()
        page.route("**/approve/rows", lambda route: held.append(route))  # the next poll waits
        for _ in range(100):
            if held:
                break
            page.wait_for_timeout(50)
        assert held, "the page did not poll"
        box = row.locator("input.reason")
        box.focus()
        page.keyboard.type("dave is ")  # typed while that poll is on its way
        with page.expect_response("**/approve/rows"):
            held[0].continue_()
        page.unroute("**/approve/rows")
        page.wait_for_timeout(300)  # the page has the answer: it must leave the box alone
        page.keyboard.type("not a customer")
        expect(box).to_be_focused()
        expect(box).to_have_value("dave is not a customer")
    finally:
        page.close()

"""ApprovalPanel built in plain Python: listing, approve, edit, reject, live updates, 409/410."""

from __future__ import annotations

import html
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    Message,
    Reject,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    Tool,
    ToolCall,
    ToolMessage,
)
from agcore_lab.jupyter import ApprovalPanel
from agcore_lab.jupyter.approval.ops import parse_arguments, time_left
from agcore_lab.store.pending import PendingToolCall

XSS = "<img src=x onerror=alert(1)>"


class Bank:
    """Sessions whose ``transfer`` tool needs approval; every run of the tool is counted."""

    def __init__(self, manager: SessionManager, *, timeout: float | None = 60.0) -> None:
        self.manager = manager
        self.timeout = timeout
        self.runs: list[tuple[str, int]] = []
        self.seen: list[list[Message]] = []
        self._guard = threading.Lock()

    def transfer(self, to: str, amount: int) -> str:
        """Move money.

        Args:
            to: The receiver.
            amount: How much.
        """
        with self._guard:
            self.runs.append((to, amount))
        return f"sent {amount} to {to}"

    def _answer(self, messages: Sequence[Message]) -> str:
        self.seen.append(list(messages))
        last = messages[-1]
        if isinstance(last, ToolMessage) and last.is_error:
            return f"understood: {last.text}"
        return f"done: {last.text}"

    def agent(self, name: str = "bank", *, to: str = "u2", amount: int = 100) -> Agent:
        script: list[Any] = [ToolCall(name="transfer", arguments={"to": to, "amount": amount})]
        script.append(self._answer)
        tool = Tool.from_function(
            self.transfer, name="transfer", requires_approval=True, approval_timeout=self.timeout
        )
        return Agent(name=name, model=ScriptedModel(script), tools=[tool])

    def ask(self, name: str = "bank", **call: Any) -> PendingToolCall:
        """A new session whose first turn waits for approval; returns the pending call."""
        sid = self.manager.create_sync(self.agent(name, **call))
        result = self.manager.submit_turn_sync(sid, "send the money")
        assert result.status == "interrupted" and result.pending_tool_call is not None
        return result.pending_tool_call


@pytest.fixture
def manager(tmp_path: Path) -> SessionManager:
    return SessionManager(SqliteStore(tmp_path / "bank.db"))


@pytest.fixture
def bank(manager: SessionManager) -> Bank:
    return Bank(manager)


@pytest.fixture
def make_panel() -> Iterator[Callable[..., ApprovalPanel]]:
    panels: list[ApprovalPanel] = []

    def make(manager: SessionManager, **options: Any) -> ApprovalPanel:
        options.setdefault("tick", None)
        panel = ApprovalPanel(manager, **options)
        panels.append(panel)
        return panel

    yield make
    for panel in panels:
        panel.close()


def _text(html_value: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", html_value))


def _until(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def test_lists_pending_calls_across_sessions(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    first = bank.ask("alice", to=XSS, amount=5)
    second = bank.ask("bob")
    panel = make_panel(manager)
    assert [c.interrupt_id for c in panel.pending] == [first.interrupt_id, second.interrupt_id]
    assert {c.session_id for c in panel.pending} == {first.session_id, second.session_id}
    header = _text(panel.header_html.value)
    assert "2 waiting · 0 decided" in header
    card = panel.card(first.interrupt_id)
    assert card in panel.cards_box.children
    head = _text(card.head_html.value)
    assert "transfer" in head and first.session_id in head and first.interrupt_id in head
    assert first.run_id in head and "PENDING_APPROVAL" in head
    # Arguments as JSON, escaped: the markup in them is text.
    assert "&lt;img src=x onerror=alert(1)&gt;" in card.args_html.value
    assert "<img" not in card.args_html.value and "<img" not in panel._repr_html_()
    assert "&quot;amount&quot;: 5" in card.args_html.value
    assert re.search(r"expires in (59|60) s|expires in 1 min 0 s", _text(card.time_html.value))
    assert not card.approve_button.disabled and card.actions.layout.display != "none"
    assert repr(panel) == "ApprovalPanel(2 waiting, 0 decided)"


def test_approve_button_shows_the_tool_result_and_the_reply(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    panel = make_panel(manager)
    card = panel.card(call.interrupt_id)
    card.approve_button.click()  # what a click does: returns at once, runs in the background
    assert panel.wait(10)
    outcome = panel.outcomes[call.interrupt_id]
    assert outcome.kind == "executed"
    assert (outcome.tool_result, outcome.reply) == ("sent 100 to u2", "done: sent 100 to u2")
    shown = _text(card.outcome_html.value)
    assert "Approved: transfer ran" in shown
    assert "sent 100 to u2" in shown and "done: sent 100 to u2" in shown
    assert bank.runs == [("u2", 100)]
    assert manager.pending_calls() == []
    assert card.actions.layout.display == "none" and card.time_html.value == ""
    assert "EXECUTED" in _text(card.head_html.value)
    assert "0 waiting · 1 decided" in _text(panel.header_html.value)
    assert "Approved: transfer ran → sent 100 to u2; reply: done" in panel.status_html.value
    assert panel.last_error is None


def test_edited_arguments_are_checked_before_they_are_sent(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    panel = make_panel(manager)
    iid = call.interrupt_id
    card = panel.card(iid)
    card.edit_button.click()
    assert card.editing and '"to": "u2"' in card.editor.value
    # Not JSON: checked here, nothing is sent.
    card.editor.value = '{"to": "u3", amount: 5}'
    card.send_edit_button.click()
    assert "not valid JSON" in _text(card.note_html.value)
    assert panel.task is None and card.editing
    # JSON, but not an object.
    assert panel.approve_edited(iid, "[1, 2]") is None
    assert "must be a JSON object" in panel.notes[iid]
    # An object the tool rejects: the engine says why, the call still waits.
    task = panel.approve_edited(iid, '{"to": "u3", "amount": "lots"}')
    assert task is not None and task.wait(10) and panel.wait(10)
    assert "invalid arguments for tool 'transfer'" in _text(card.note_html.value)
    assert "the call still waits" in panel.notes[iid]
    assert [c.interrupt_id for c in panel.pending] == [iid] and bank.runs == []
    assert card.editing and not card.approve_button.disabled
    # Valid: the tool runs with the edited arguments.
    task = panel.approve_edited(iid, '{"to": "u3", "amount": 5}')
    assert task is not None and task.wait(10) and panel.wait(10)
    assert bank.runs == [("u3", 5)]
    outcome = panel.outcomes[iid]
    assert outcome.title == "Approved with edited arguments: transfer ran"
    assert outcome.reply == "done: sent 5 to u3" and iid not in panel.notes
    assert not card.editing and card.note_html.value == ""


def test_reject_with_a_reason_the_model_sees(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    panel = make_panel(manager)
    card = panel.card(call.interrupt_id)
    card.reject_button.click()
    assert card.rejecting
    card.reason_text.value = "  over the daily limit "
    card.send_reject_button.click()
    assert panel.wait(10)
    outcome = panel.outcomes[call.interrupt_id]
    assert outcome.kind == "rejected" and outcome.tool_result is None
    assert outcome.title == "Rejected transfer (over the daily limit)"
    assert "over the daily limit" in (outcome.reply or "")
    assert "over the daily limit" in bank.seen[-1][-1].text  # the model saw the reason
    assert bank.runs == []
    assert "reply" in _text(card.outcome_html.value) and not card.rejecting


def test_calls_decided_elsewhere_and_new_calls_show_up_live(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    first = bank.ask("alice")
    panel = make_panel(manager)
    assert len(panel.pending) == 1
    second = bank.ask("bob")  # a turn elsewhere: the panel hears of it
    assert _until(lambda: len(panel.pending) == 2)
    manager.resume_sync(first.session_id, first.run_id, first.interrupt_id, "approve")
    manager.resume_sync(second.session_id, second.run_id, second.interrupt_id, Reject(reason="no"))
    assert panel.wait(10)
    assert _until(lambda: len(panel.outcomes) == 2)
    done = panel.outcomes[first.interrupt_id]
    assert done.kind == "resolved"
    assert done.text == "EXECUTED: approved elsewhere; the tool ran → sent 100 to u2"
    assert panel.outcomes[second.interrupt_id].text == "REJECTED: rejected elsewhere (no)"
    assert panel.pending == [] and "0 waiting · 2 decided" in _text(panel.header_html.value)
    assert panel.card(first.interrupt_id).actions.layout.display == "none"
    assert bank.runs == [("u2", 100)]


def test_a_lost_race_shows_409_conflict(tmp_path: Path, make_panel: Any) -> None:
    db = tmp_path / "shared.db"
    here = SessionManager(SqliteStore(db))
    bank = Bank(here)
    call = bank.ask()
    panel = make_panel(here)
    # Another kernel (another manager on the same file) approves first; no event reaches us.
    elsewhere = SessionManager(SqliteStore(db), agents=[bank.agent()])
    elsewhere.resume_sync(call.session_id, call.run_id, call.interrupt_id, "approve")
    assert [c.interrupt_id for c in panel.pending] == [call.interrupt_id]
    task = panel.approve(call.interrupt_id)
    assert task is not None and task.wait(10) and panel.wait(10)
    outcome = panel.outcomes[call.interrupt_id]
    assert outcome.kind == "conflict" and outcome.status == 409
    assert outcome.text.startswith("409 Conflict:")
    assert "409 Conflict" in _text(panel.card(call.interrupt_id).outcome_html.value)
    assert "EXECUTED" in _text(panel.card(call.interrupt_id).head_html.value)
    assert bank.runs == [("u2", 100)]  # the tool ran once, elsewhere


def test_an_expired_call_shows_410_gone(manager: SessionManager, make_panel: Any) -> None:
    bank = Bank(manager, timeout=0.2)
    call = bank.ask()
    panel = make_panel(manager, tick=30)  # no countdown re-read during the test
    time.sleep(0.3)
    assert time_left(panel.pending[0]) == "expired"
    task = panel.approve(call.interrupt_id)
    assert task is not None and task.wait(10) and panel.wait(10)
    outcome = panel.outcomes[call.interrupt_id]
    assert outcome.kind == "expired" and outcome.status == 410
    assert outcome.text.startswith("410 Gone: this call expired")
    assert bank.runs == []
    assert "EXPIRED" in _text(panel.card(call.interrupt_id).head_html.value)


def test_the_countdown_runs_and_moves_overdue_calls_to_expired(
    manager: SessionManager, make_panel: Any
) -> None:
    bank = Bank(manager, timeout=0.4)
    call = bank.ask()
    panel = make_panel(manager, tick=0.05)
    card = panel.card(call.interrupt_id)
    assert "expires in 1 s" in _text(card.time_html.value)
    assert _until(lambda: call.interrupt_id in panel.outcomes, timeout=5)
    assert panel.wait(10)
    outcome = panel.outcomes[call.interrupt_id]
    assert outcome.kind == "expired" and outcome.text.startswith("EXPIRED: expired")
    assert manager.pending_calls(include_resolved=True)[0].status == "EXPIRED"
    assert card.actions.layout.display == "none"


def test_a_restored_call_that_already_ran_asks_before_running_again(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    while_pending = manager.checkpointer.list_checkpoints_sync(call.session_id)[0]
    manager.resume_sync(call.session_id, call.run_id, call.interrupt_id, "approve")
    manager.checkpointer.rollback_sync(call.session_id, while_pending.ckpt_id)
    panel = make_panel(manager)
    (restored,) = panel.pending
    assert restored.previously_executed
    card = panel.card(restored.interrupt_id)
    assert "already ran once" in _text(card.warning_html.value)
    assert call.interrupt_id in card.warning_html.value
    card.approve_button.click()
    assert panel.confirm_bar.pending == "rerun" and panel.task is None
    assert "Run it again?" in _text(panel.confirm_bar.question_html.value)
    panel.cancel()
    assert bank.runs == [("u2", 100)] and panel.pending == [restored]
    assert "still waits" in panel.status_html.value
    panel.approve(restored.interrupt_id)
    task = panel.confirm()
    assert task is not None and task.wait(10) and panel.wait(10)
    assert bank.runs == [("u2", 100), ("u2", 100)]  # once more, after the confirmation
    assert panel.outcomes[restored.interrupt_id].kind == "executed"


def test_one_decision_at_a_time(bank: Bank, manager: SessionManager, make_panel: Any) -> None:
    slow = threading.Event()
    original = bank.transfer

    def transfer(to: str, amount: int) -> str:
        slow.wait(5)
        return original(to, amount)

    bank.transfer = transfer  # type: ignore[method-assign]
    first, second = bank.ask("alice"), bank.ask("bob")
    panel = make_panel(manager)
    task = panel.approve(first.interrupt_id)
    assert task is not None
    assert panel.card(second.interrupt_id).approve_button.disabled
    assert panel.approve(second.interrupt_id) is None
    assert "Busy" in panel.status_html.value
    slow.set()
    assert task.wait(10) and panel.wait(10)
    assert [c.interrupt_id for c in panel.pending] == [second.interrupt_id]
    assert not panel.card(second.interrupt_id).approve_button.disabled


def test_a_rollback_to_before_the_call_removes_it(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    before = manager.checkpointer.list_checkpoints_sync(call.session_id)[-1]  # the start
    panel = make_panel(manager)
    manager.checkpointer.rollback_sync(call.session_id, before.ckpt_id)
    assert _until(lambda: call.interrupt_id in panel.outcomes)
    assert panel.outcomes[call.interrupt_id].text.startswith("No longer waiting")
    assert panel.pending == []
    assert panel.approve(call.interrupt_id) is None
    assert "waits no more" in _text(panel.error_html.value)


def test_paging_clearing_and_keeping_decided_calls(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    calls = [bank.ask(f"s{i}") for i in range(3)]
    panel = make_panel(manager, page_size=2, keep_decided=1)
    assert panel.pages == 2 and len(panel.cards_box.children) == 2
    panel.show_page(1)
    assert [c.interrupt_id for c in panel.page_calls()] == [calls[2].interrupt_id]
    for call in calls[:2]:
        task = panel.approve(call.interrupt_id)
        assert task is not None and task.wait(10) and panel.wait(10)
    # keep_decided=1: only the newest decided call stays listed.
    assert [c.interrupt_id for c in panel.calls] == [calls[2].interrupt_id, calls[1].interrupt_id]
    assert not panel.clear_button.disabled
    panel.clear_button.click()
    assert panel.calls == panel.pending and len(panel.calls) == 1
    assert panel.clear_button.disabled and panel.outcomes == {}


def test_close_stops_the_countdown_and_the_events(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    bank.ask()
    panel = make_panel(manager, tick=0.05)
    assert len(panel.pending) == 1
    ticker = panel._ticker
    panel.close()
    bank.ask("bob")  # a new call after close: the closed panel no longer hears of it
    time.sleep(0.3)
    assert len(panel.pending) == 1
    assert _until(ticker.done) and ticker.cancelled()


def test_parse_arguments_and_time_left() -> None:
    assert parse_arguments('{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    for text, error in (("", "not valid JSON"), ("5", "JSON object"), ("{'a': 1}", "JSON")):
        with pytest.raises(ValueError, match=error):
            parse_arguments(text)
    from datetime import timedelta

    from agcore_lab.ids import utcnow

    now = utcnow()
    call = PendingToolCall(
        interrupt_id="int_x", session_id="s", run_id="r", tool_call_id="c", tool_name="t"
    )
    assert time_left(call, now) == "no expiry"
    for seconds, text in ((5, "expires in 5 s"), (125, "expires in 2 min 5 s"), (0, "expired")):
        timed = call.model_copy(update={"expires_at": now + timedelta(seconds=seconds)})
        assert time_left(timed, now) == text
    later = call.model_copy(update={"expires_at": now + timedelta(hours=2, minutes=3)})
    assert time_left(later, now) == "expires in 2 h 3 min"


def test_approve_from_code_with_edited_arguments(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    panel = make_panel(manager)
    task = panel.approve(call.interrupt_id, {"to": "u9", "amount": 1})
    assert task is not None and task.wait(10) and panel.wait(10)
    assert bank.runs == [("u9", 1)]
    stored = manager.pending_calls(include_resolved=True)[0]
    assert stored.status == "EXECUTED" and stored.decision == {
        "kind": "approve",
        "arguments": {"to": "u9", "amount": 1},
    }


def test_stale_card_shows_the_arguments_that_actually_ran(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    # The stale case of the issue: after an edited approval the card still showed the model's
    # "amount": 22, yet the tool had "sent 2 to u12".
    call = bank.ask(to="u12", amount=22)
    panel = make_panel(manager)
    task = panel.approve_edited(call.interrupt_id, '{"to": "u12", "amount": 2}')
    assert task is not None and task.wait(10) and panel.wait(10)
    assert bank.runs == [("u12", 2)]
    card = panel.card(call.interrupt_id)
    shown = _text(card.args_html.value)
    assert shown.index("ran with (edited)") < shown.index('"amount": 2')
    assert shown.index('"amount": 2') < shown.index("the model asked for (not run)")
    assert shown.index("the model asked for (not run)") < shown.index('"amount": 22')
    assert "sent 2 to u12" in _text(card.outcome_html.value)
    assert card.approve_button.disabled and card.actions.layout.display == "none"


def test_stale_edited_approval_made_elsewhere_shows_what_ran(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    from agcore_lab import Approve

    call = bank.ask(to="u12", amount=22)
    panel = make_panel(manager)
    manager.resume_sync(
        call.session_id,
        call.run_id,
        call.interrupt_id,
        Approve(arguments={"to": "u9", "amount": 3}),
    )
    assert panel.wait(10)
    card = panel.card(call.interrupt_id)
    shown = _text(card.args_html.value)
    assert "ran with (edited)" in shown and '"to": "u9"' in shown
    assert "EXECUTED" in _text(card.head_html.value)
    assert panel.pending == []


def test_a_call_about_to_expire_is_flagged() -> None:
    from datetime import timedelta

    from agcore_lab.ids import utcnow
    from agcore_lab.jupyter.approval._html import render_time_left

    now = utcnow()
    call = PendingToolCall(
        interrupt_id="i1",
        session_id="s",
        run_id="r",
        tool_call_id="c",
        tool_name="transfer",
        expires_at=now + timedelta(seconds=30),
    )
    soon = render_time_left(call, now)
    assert "agc-expiring" in soon and "⚠ expires soon: expires in 30 s" in soon
    later = render_time_left(
        call.model_copy(update={"expires_at": now + timedelta(minutes=5)}), now
    )
    assert "agc-expiring" not in later and "expires in 5 min 0 s" in later
    gone = render_time_left(call.model_copy(update={"expires_at": now - timedelta(seconds=1)}), now)
    assert "agc-expired" in gone and "expires soon" not in gone
    assert render_time_left(call.model_copy(update={"expires_at": None}), now).count("no expiry")

"""ApprovalPanel, second round: in-doubt calls and Settle, compact cards, the turn behind a
call, and approve-all / reject-all for a selection."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import SessionManager, SqliteStore
from agcore_lab.agent.approval import UNKNOWN_OUTCOME
from agcore_lab.jupyter import ApprovalPanel
from agcore_lab.store.pending import PendingToolCall

from .test_approval_panel import XSS, Bank, _text, _until


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


def _in_doubt(manager: SessionManager, call: PendingToolCall) -> None:
    """Approve ``call`` for an executor that then dies (its lease runs out, nobody renews it)."""
    manager.store.decide_pending(
        session_id=call.session_id,
        run_id=call.run_id,
        interrupt_id=call.interrupt_id,
        to_status="APPROVED_EXECUTING",
        decision={"kind": "approve", "arguments": dict(call.tool_args)},
        executor="worker:1:x",
        lease_seconds=0.05,
    )
    time.sleep(0.1)


def test_an_in_doubt_call_is_shown_as_such_with_who_ran_it(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    other = bank.ask("other")
    _in_doubt(manager, call)
    panel = make_panel(manager)
    assert [c.interrupt_id for c in panel.in_doubt] == [call.interrupt_id]
    assert [c.interrupt_id for c in panel.pending] == [other.interrupt_id]
    assert "1 waiting · 1 in doubt · 0 decided" in _text(panel.header_html.value)
    card = panel.card(call.interrupt_id)
    doubt = _text(card.doubt_html.value)
    assert "in doubt: its process stopped while the tool ran" in doubt
    assert "run by worker:1:x" in doubt
    assert "in doubt" in _text(card.head_html.value)
    assert "agc-call-doubt" in card._dom_classes
    # Settle, not Approve/Reject: the call was decided already.
    assert card.settle_box.layout.display != "none" and not card.settle_button.disabled
    assert card.actions.layout.display == "none"
    assert card.select_box.layout.display == "none"
    waiting = panel.card(other.interrupt_id)
    assert waiting.doubt_html.value == "" and waiting.settle_box.layout.display == "none"
    assert "agc-call-doubt" not in waiting._dom_classes


def test_settle_from_the_panel_continues_the_turn_with_what_happened(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    _in_doubt(manager, call)
    panel = make_panel(manager)
    card = panel.card(call.interrupt_id)
    card.settle_text.value = "it did run: sent 100 to u2"
    card.settle_button.click()
    assert panel.task is not None and panel.task.wait(10) and panel.wait(10)
    outcome = panel.outcomes[call.interrupt_id]
    assert outcome.kind == "settled" and outcome.tool_result == "it did run: sent 100 to u2"
    assert outcome.reply == "done: it did run: sent 100 to u2"  # the model saw it
    shown = _text(card.outcome_html.value)
    assert "Settled transfer with what happened" in shown and "done: it did run" in shown
    stored = manager.store.get_pending(call.interrupt_id)
    assert stored is not None and stored.status == "EXECUTED" and not stored.in_doubt
    assert bank.runs == []  # settling never runs the tool
    assert panel.in_doubt == [] and card.settle_box.layout.display == "none"
    assert "0 waiting · 1 decided" in _text(panel.header_html.value)
    assert "agc-call-doubt" not in card._dom_classes


def test_settle_with_an_empty_box_says_the_outcome_is_unknown(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    _in_doubt(manager, call)
    panel = make_panel(manager)
    task = panel.settle(call.interrupt_id)
    assert task is not None and task.wait(10) and panel.wait(10)
    outcome = panel.outcomes[call.interrupt_id]
    assert outcome.kind == "settled" and outcome.tool_result == UNKNOWN_OUTCOME
    assert "as outcome unknown" in outcome.text


def test_settle_that_loses_shows_the_409_inline(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    _in_doubt(manager, call)
    panel = make_panel(manager)
    # Another kernel settles it first; this panel has not reloaded yet.
    other = SessionManager(SqliteStore(manager.store.path))  # type: ignore[attr-defined]
    other.register_agent(manager.get_sync(call.session_id).agent)
    other.settle_sync(call.session_id, call.interrupt_id, result="ran elsewhere")
    task = panel.settle(call.interrupt_id, "it ran")
    assert task is not None and task.wait(10) and panel.wait(10)
    outcome = panel.outcomes[call.interrupt_id]
    assert outcome.kind == "conflict" and outcome.status == 409
    card = panel.card(call.interrupt_id)
    assert "409 Conflict" in _text(card.outcome_html.value)
    assert 'data-kind="conflict"' in card.outcome_html.value
    stored = manager.store.get_pending(call.interrupt_id)
    assert stored is not None and stored.result == "ran elsewhere"  # nothing changed


def test_settle_refuses_a_call_that_is_not_in_doubt(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    panel = make_panel(manager)
    assert panel.settle(call.interrupt_id, "it ran") is None
    assert "is not in doubt; nothing to settle" in _text(panel.error_html.value)
    stored = manager.store.get_pending(call.interrupt_id)
    assert stored is not None and stored.status == "PENDING_APPROVAL"


def test_cards_are_compact(bank: Bank, manager: SessionManager, make_panel: Any) -> None:
    call = bank.ask()
    panel = make_panel(manager)
    card = panel.card(call.interrupt_id)
    top, body = card.children[0], card.children[3]
    # Selection box and head share one line; arguments, time left and buttons the next.
    assert list(top.children) == [card.select_box, card.head_html]
    assert list(body.children) == [card.args_html, card.time_html, card.actions]
    # Short arguments: one line of JSON.
    assert 'class="agc-args agc-args-inline"' in card.args_html.value
    assert "\n" not in _text(card.args_html.value)
    # Parts with nothing to show are hidden, not left as empty lines.
    for part in (card.doubt_html, card.warning_html, card.note_html, card.outcome_html):
        assert part.value == "" and part.layout.display == "none"
    long = bank.ask("long", to="u" * 120)
    assert _until(lambda: len(panel.pending) == 2)
    assert "agc-args-inline" not in panel.card(long.interrupt_id).args_html.value


def test_the_turn_that_led_to_the_call_is_shown_collapsed(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask(to=XSS)
    panel = make_panel(manager)
    turn = panel.card(call.interrupt_id).turn_html.value
    assert turn.startswith('<details class="agc-turn">') and "<details open" not in turn
    text = _text(turn)
    assert "the turn that led to this call (2 messages)" in text
    assert text.index("send the money") < text.index("⚙ transfer")
    assert "<img" not in turn and "&lt;img" in turn  # the model's text is escaped


def test_approve_all_for_a_selection(bank: Bank, manager: SessionManager, make_panel: Any) -> None:
    calls = [bank.ask(f"s{i}", to=f"u{i}", amount=i) for i in range(3)]
    panel = make_panel(manager)
    assert panel.selected == [] and panel.bulk.approve_button.disabled
    first, _, third = (c.interrupt_id for c in calls)
    panel.card(first).select_box.value = True  # ticking a box, as a click does
    panel.select([third])
    assert panel.selected == [first, third]
    assert panel.bulk.approve_button.description == "Approve selected (2)"
    assert not panel.bulk.approve_button.disabled
    panel.bulk.approve_button.click()
    assert panel.task is not None and panel.task.wait(10) and panel.wait(10)
    assert sorted(bank.runs) == [("u0", 0), ("u2", 2)]
    assert panel.outcomes[first].kind == "executed" and panel.outcomes[third].kind == "executed"
    assert [c.interrupt_id for c in panel.pending] == [calls[1].interrupt_id]
    assert "Approved 2 of 2 calls" in _text(panel.status_html.value)
    assert panel.selected == [] and panel.bulk.approve_button.disabled


def test_select_all_then_reject_all_with_one_reason(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    calls = [bank.ask(f"s{i}") for i in range(2)]
    panel = make_panel(manager)
    panel.bulk.select_all.value = True
    assert panel.selected == [c.interrupt_id for c in calls]
    panel.bulk.reject_button.click()
    assert panel.bulk.rejecting and bank.runs == []  # asks for a reason first
    panel.bulk.reason_text.value = "not today"
    panel.bulk.send_reject_button.click()
    assert panel.task is not None and panel.task.wait(10) and panel.wait(10)
    assert bank.runs == []
    for call in calls:
        assert panel.outcomes[call.interrupt_id].kind == "rejected"
        stored = manager.store.get_pending(call.interrupt_id)
        assert stored is not None and stored.status == "REJECTED"
        assert stored.decision is not None and stored.decision["reason"] == "not today"
    assert not panel.bulk.rejecting


def test_approve_all_asks_before_re_running_a_restored_call(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    fresh = bank.ask("fresh", to="u7", amount=7)
    while_pending = manager.checkpointer.list_checkpoints_sync(call.session_id)[0]
    manager.resume_sync(call.session_id, call.run_id, call.interrupt_id, "approve")
    manager.checkpointer.rollback_sync(call.session_id, while_pending.ckpt_id)
    assert bank.runs == [("u2", 100)]
    panel = make_panel(manager)
    restored = next(c for c in panel.pending if c.session_id == call.session_id)
    assert restored.previously_executed
    panel.select()  # every waiting call
    assert panel.approve_all() is None  # asks first, runs nothing
    assert panel.confirm_bar.pending == "rerun" and bank.runs == [("u2", 100)]
    assert "1 selected call already ran once" in _text(panel.confirm_bar.question_html.value)
    task = panel.confirm()
    assert task is not None and task.wait(10) and panel.wait(10)
    assert sorted(bank.runs) == [("u2", 100), ("u2", 100), ("u7", 7)]
    assert panel.outcomes[fresh.interrupt_id].kind == "executed"
    assert panel.outcomes[restored.interrupt_id].kind == "executed"


def test_approve_all_refuses_a_call_that_does_not_wait(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    panel = make_panel(manager)
    assert panel.approve_all([call.interrupt_id, "int_nope"]) is None
    assert "int_nope" in _text(panel.error_html.value) and bank.runs == []
    assert panel.approve_all() is None  # nothing selected
    assert "Nothing selected" in _text(panel.status_html.value)


def test_a_call_that_turns_in_doubt_later_is_found_by_the_countdown(
    bank: Bank, manager: SessionManager, make_panel: Any
) -> None:
    call = bank.ask()
    panel = make_panel(manager, tick=0.05)
    assert [c.interrupt_id for c in panel.pending] == [call.interrupt_id]
    _in_doubt(manager, call)  # straight in the store: no manager event tells the panel
    assert _until(lambda: [c.interrupt_id for c in panel.in_doubt] == [call.interrupt_id])
    assert panel.pending == []
    assert "in doubt" in _text(panel._repr_html_())  # the static fallback says so too

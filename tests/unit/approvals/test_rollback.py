"""Pending calls and time travel. The rule (agcore_lab/agent/approval.py): rolling back to a
checkpoint taken before the call removes it from the pending list; rolling back to one taken
while it was pending brings it back as a new pending interrupt; a rollback never runs a tool;
a restored call whose original already ran says so and runs again only with
``Approve(rerun=True)``. Prune never removes a checkpoint holding a pending call."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from agcore_lab import (
    Approve,
    AssistantMessage,
    ConflictError,
    Reject,
    RunNotFoundError,
    ToolCall,
    ToolMessage,
    UserMessage,
)

Bank = Any  # the conftest's Bank


def transfer_call() -> ToolCall:
    return ToolCall(name="transfer", arguments={"to": "u2", "amount": 100})


@pytest.fixture
def bank(bank_factory: Callable[..., Bank]) -> Bank:
    # Turn 1 is plain; turn 2 asks for the transfer; then whatever follows.
    return bank_factory(["hi there", transfer_call(), "done", "done again", "more"])


def _two_turns(bank: Bank) -> tuple[str, Any, Any, Any]:
    """Turn 1 (checkpoint ``before``), turn 2 interrupted (checkpoint ``during``)."""
    sid = bank.manager.create_sync(bank.agent)
    bank.manager.submit_turn_sync(sid, "hello")
    result = bank.manager.submit_turn_sync(sid, "send 100 to u2")
    assert result.status == "interrupted"
    ckpts = bank.manager.checkpointer.list_checkpoints_sync(sid)
    during, before = ckpts[0], ckpts[1]
    assert during.turn_index == 2 and before.turn_index == 1
    assert during.pending is not None and before.pending is None
    assert during.pending.interrupt_id == result.pending_tool_call.interrupt_id
    return sid, result.pending_tool_call, before, during


def _restored(bank: Bank, sid: str) -> Any:
    (call,) = bank.manager.pending_calls(sid)
    return call


def test_rollback_to_before_the_call_removes_it(bank: Bank) -> None:
    sid, call, before, _ = _two_turns(bank)
    bank.manager.checkpointer.rollback_sync(sid, before.ckpt_id)
    assert bank.manager.pending_calls() == []
    assert bank.manager.get_sync(sid).pending_tool_call() is None
    with pytest.raises(RunNotFoundError):
        bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    turn = bank.manager.submit_turn_sync(sid, "something else")  # no conflict any more
    assert turn.status == "completed" and isinstance(turn.messages[0], UserMessage)
    assert bank.runs == []


def test_rollback_to_before_an_expired_call_leaves_it_out_of_the_history(
    bank_factory: Callable[..., Bank],
) -> None:
    bank = bank_factory(["hi there", transfer_call(), "fine"], approval_timeout=0.05)
    sid, call, before, _ = _two_turns(bank)
    time.sleep(0.1)
    assert [c.status for c in bank.manager.pending_calls(include_resolved=True)] == ["EXPIRED"]
    bank.manager.checkpointer.rollback_sync(sid, before.ckpt_id)
    assert bank.manager.get_sync(sid).pending_tool_call() is None
    turn = bank.manager.submit_turn_sync(sid, "something else")
    # No answer to a call the rolled-back history never made.
    assert [type(m) for m in turn.messages] == [UserMessage, AssistantMessage]
    assert not any(isinstance(m, ToolMessage) for m in bank.stored_messages(sid))


def test_rollback_to_while_pending_restores_a_new_interrupt(bank: Bank) -> None:
    sid, call, _, during = _two_turns(bank)
    bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, Reject(reason="not now"))
    bank.manager.checkpointer.rollback_sync(sid, during.ckpt_id)
    restored = _restored(bank, sid)
    assert restored.interrupt_id != call.interrupt_id
    assert restored.previous_interrupt_id == call.interrupt_id
    assert not restored.previously_executed and restored.status == "PENDING_APPROVAL"
    assert (restored.run_id, restored.tool_call_id) == (call.run_id, call.tool_call_id)
    assert restored.tool_args == call.tool_args and restored.decision is None
    assert bank.manager.store.get_pending(call.interrupt_id).status == "REJECTED"  # history kept
    session = bank.manager.get_sync(sid)
    assert session.pending_tool_call() == restored
    with pytest.raises(ConflictError):  # the turn waits again
        bank.manager.submit_turn_sync(sid, "next")
    assert bank.runs == []
    # The restored call is resumed like any other: the tool runs once, the turn finishes.
    final = bank.manager.resume_sync(sid, restored.run_id, restored.interrupt_id, "approve")
    assert final.reply == "done again" and bank.runs == [{"to": "u2", "amount": 100}]
    assert bank.manager.pending_calls() == []
    history = bank.stored_messages(sid)
    assert [m.content for m in history if isinstance(m, ToolMessage)] == ["sent 100 to u2"]


def test_rollback_while_still_pending_replaces_the_interrupt(bank: Bank) -> None:
    sid, call, _, during = _two_turns(bank)
    bank.manager.checkpointer.rollback_sync(sid, during.ckpt_id)
    restored = _restored(bank, sid)
    assert restored.previous_interrupt_id == call.interrupt_id
    with pytest.raises(RunNotFoundError):  # the old id is gone; the new one answers
        bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    final = bank.manager.resume_sync(sid, restored.run_id, restored.interrupt_id, "approve")
    assert final.reply == "done" and len(bank.runs) == 1


def test_an_executed_call_is_never_rerun_silently(bank: Bank) -> None:
    sid, call, _, during = _two_turns(bank)
    bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert len(bank.runs) == 1
    bank.manager.checkpointer.rollback_sync(sid, during.ckpt_id)
    assert len(bank.runs) == 1  # a rollback never runs the tool
    restored = _restored(bank, sid)
    assert restored.previously_executed and restored.previous_interrupt_id == call.interrupt_id
    assert bank.manager.store.get_pending(call.interrupt_id).status == "EXECUTED"
    with pytest.raises(ConflictError) as caught:
        bank.manager.resume_sync(sid, restored.run_id, restored.interrupt_id, "approve")
    assert caught.value.to_problem()["status"] == 409 and "rerun=True" in caught.value.message
    assert bank.manager.store.get_pending(restored.interrupt_id) == restored  # unchanged
    assert len(bank.runs) == 1
    final = bank.manager.resume_sync(
        sid, restored.run_id, restored.interrupt_id, Approve(rerun=True)
    )
    assert final.reply == "done again" and len(bank.runs) == 2
    assert bank.manager.store.get_pending(restored.interrupt_id).status == "EXECUTED"


def test_a_restored_executed_call_may_be_rejected(bank: Bank) -> None:
    sid, call, _, during = _two_turns(bank)
    bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    bank.manager.checkpointer.rollback_sync(sid, during.ckpt_id)
    restored = _restored(bank, sid)
    final = bank.manager.resume_sync(sid, restored.run_id, restored.interrupt_id, "reject")
    assert final.reply == "done again" and len(bank.runs) == 1


def test_rolling_forward_and_back_never_runs_the_tool(bank: Bank) -> None:
    sid, call, before, during = _two_turns(bank)
    bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    after = bank.manager.checkpointer.list_checkpoints_sync(sid)[0]
    assert after.pending is None
    for target in (before, during, after, during, before, after):
        bank.manager.checkpointer.rollback_sync(sid, target.ckpt_id)
    assert len(bank.runs) == 1
    assert bank.manager.pending_calls() == []  # back at "after": nothing waits
    assert bank.manager.submit_turn_sync(sid, "thanks").status == "completed"


def test_a_fork_while_pending_gets_its_own_interrupt(bank: Bank) -> None:
    sid, call, _, during = _two_turns(bank)
    child = bank.manager.checkpointer.fork_sync(sid, during.ckpt_id)
    (mine,) = bank.manager.pending_calls(child)
    assert mine.session_id == child and mine.previous_interrupt_id == call.interrupt_id
    assert [c.interrupt_id for c in bank.manager.pending_calls(sid)] == [call.interrupt_id]
    final = bank.manager.resume_sync(child, mine.run_id, mine.interrupt_id, "approve")
    assert final.reply == "done" and len(bank.runs) == 1
    assert bank.manager.store.get_pending(call.interrupt_id).status == "PENDING_APPROVAL"
    with pytest.raises(RunNotFoundError):  # each session answers only its own interrupts
        bank.manager.resume_sync(sid, mine.run_id, mine.interrupt_id, "approve")


def test_the_restored_call_gets_a_fresh_lifetime(bank_factory: Callable[..., Bank]) -> None:
    bank = bank_factory(["hi there", transfer_call(), "done"], approval_timeout=3600)
    sid, call, _, during = _two_turns(bank)
    bank.manager.checkpointer.rollback_sync(sid, during.ckpt_id)
    restored = _restored(bank, sid)
    assert restored.expires_at - restored.created_at == call.expires_at - call.created_at
    assert restored.created_at > call.created_at


def test_prune_keeps_checkpoints_that_hold_a_pending_call(bank: Bank) -> None:
    sid, call, _, during = _two_turns(bank)
    also = bank.manager.checkpoint_sync(sid, "while waiting")
    bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    bank.manager.submit_turn_sync(sid, "one more")
    holding = {m.ckpt_id for m in bank.manager.checkpointer.list_checkpoints_sync(sid) if m.pending}
    assert holding == {during.ckpt_id, also}
    report = bank.manager.checkpointer.prune_sync(sid, keep_last=1)
    assert holding <= set(report.kept_protected) and not holding & set(report.removed)
    assert report.removed  # others did go
    left = {m.ckpt_id for m in bank.manager.checkpointer.list_checkpoints_sync(sid)}
    assert holding <= left and len(left) == 1 + len(holding)
    report = bank.manager.checkpointer.prune_sync(keep_last=0)  # every session, all of it
    assert holding <= set(report.kept_protected)
    # And the kept checkpoint still restores the call (as a new interrupt).
    bank.manager.checkpointer.rollback_sync(sid, during.ckpt_id)
    assert _restored(bank, sid).previous_interrupt_id == call.interrupt_id
    assert len(bank.runs) == 1

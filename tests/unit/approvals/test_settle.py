"""Settling in-doubt calls, and the executor lease, with the state made directly in the store
(the crash itself is in tests/integration/test_approval_crash.py)."""

from __future__ import annotations

import time

import pytest

from agcore_lab import ConflictError, RuntimeBundle, SessionManager, SqliteStore
from agcore_lab.agent.approval import UNKNOWN_OUTCOME
from agcore_lab.errors import NotFoundError

from .conftest import Bank


def _approved_elsewhere(bank: Bank, lease_seconds: float) -> tuple[str, str]:
    """A call approved by an executor that then went silent (nobody renews its lease)."""
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    assert call is not None
    bank.manager.store.decide_pending(
        session_id=sid,
        run_id=call.run_id,
        interrupt_id=call.interrupt_id,
        to_status="APPROVED_EXECUTING",
        decision={"kind": "approve", "arguments": dict(call.tool_args)},
        executor="elsewhere:42:abc",
        lease_seconds=lease_seconds,
    )
    time.sleep(min(lease_seconds * 1.5, 0.3))  # a short lease has run out by now
    return sid, call.interrupt_id


def test_a_call_still_run_by_its_executor_is_not_settled(bank: Bank) -> None:
    sid, interrupt_id = _approved_elsewhere(bank, lease_seconds=60)
    stored = bank.manager.store.get_pending(interrupt_id)
    assert stored is not None and stored.executor == "elsewhere:42:abc" and not stored.in_doubt
    assert bank.manager.pending_calls(sid) == []  # neither waiting nor in doubt
    with pytest.raises(ConflictError, match="still being run by elsewhere:42:abc"):
        bank.manager.settle_sync(sid, interrupt_id)
    with pytest.raises(ConflictError, match="being run by elsewhere:42:abc"):
        bank.manager.submit_turn_sync(sid, "next")
    assert bank.runs == []


def test_settle_with_a_result_continues_the_turn_once(bank: Bank) -> None:
    sid, interrupt_id = _approved_elsewhere(bank, lease_seconds=0.1)
    stored = bank.manager.store.get_pending(interrupt_id)
    assert stored is not None and stored.in_doubt
    assert [c.interrupt_id for c in bank.manager.pending_calls(sid)] == [interrupt_id]
    with pytest.raises(ConflictError, match="in doubt"):
        bank.manager.submit_turn_sync(sid, "next")
    result = bank.manager.settle_sync(sid, interrupt_id, result="it did run: sent 100 to u2")
    assert result.reply == "done" and result.turn_index == 1
    assert bank.seen[-1][-1].text == "it did run: sent 100 to u2"  # the model saw it
    again = bank.manager.store.get_pending(interrupt_id)
    assert again is not None and again.status == "EXECUTED" and not again.in_doubt
    with pytest.raises(ConflictError, match="not in doubt") as info:
        bank.manager.settle_sync(sid, interrupt_id)
    assert info.value.to_problem()["status"] == 409
    assert bank.runs == []  # settling never runs the tool
    assert bank.manager.submit_turn_sync(sid, "and again").turn_index == 2  # turns go on


def test_settle_without_a_result_says_the_outcome_is_unknown(bank: Bank) -> None:
    sid, interrupt_id = _approved_elsewhere(bank, lease_seconds=0.1)
    other = SessionManager(SqliteStore(bank.path), agents=[bank.agent])  # another kernel
    result = other.settle_sync(sid, interrupt_id)
    assert result.reply == "done"
    answer = result.tool_results[0]
    assert answer.is_error and answer.text == UNKNOWN_OUTCOME


def test_settle_of_an_unknown_or_waiting_call(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    assert call is not None
    with pytest.raises(NotFoundError):
        bank.manager.settle_sync(sid, "int_nope")
    with pytest.raises(ConflictError, match="PENDING_APPROVAL, not in doubt"):
        bank.manager.settle_sync(sid, call.interrupt_id)


def test_an_approved_tool_renews_its_executor_lease_while_it_runs(bank: Bank) -> None:
    # A short lease and a tool that takes three lifetimes: the call is never in doubt.
    bank.manager = SessionManager(
        bundle=RuntimeBundle(store=SqliteStore(bank.path), lease_seconds=0.2), agents=[bank.agent]
    )
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    assert call is not None
    seen: list[bool] = []
    original = bank._transfer

    def slow(to: str, amount: int) -> str:
        for _ in range(6):
            time.sleep(0.1)
            current = SqliteStore(bank.path).get_pending(call.interrupt_id)
            seen.append(current is not None and current.in_doubt)
        return original(to, amount)

    bank._transfer = slow  # type: ignore[method-assign]
    assert bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve").reply == "done"
    assert seen and not any(seen)

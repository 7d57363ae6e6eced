"""Resuming an interrupted turn: approve, edit, reject, policies, several calls, expiry,
wrong ids, a new turn while waiting, a restart, and the DataFrame."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from agcore_lab import (
    Approve,
    AssistantMessage,
    ConflictError,
    GoneError,
    InvalidInputError,
    ModelError,
    Reject,
    RunNotFoundError,
    SessionNotFoundError,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_lab.ids import utcnow

Bank = Any  # the conftest's Bank (conftest modules are not importable by name)


def _record(bank: Bank, interrupt_id: str) -> Any:
    return bank.manager.store.get_pending(interrupt_id)


def test_approve_runs_the_tool_once_and_continues(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    assert bank.runs == [] and result.reply == ""
    assert bank.manager.get_sync(sid).pending_tool_call() == call
    final = bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert final.reply == "done" and final.status == "completed"
    assert final.pending_tool_call is None
    assert bank.runs == [{"to": "u2", "amount": 100}]
    assert [m.content for m in final.tool_results] == ["sent 100 to u2"]
    assert bank.manager.get_sync(sid).pending_tool_call() is None
    assert _record(bank, call.interrupt_id).status == "EXECUTED"


def test_approve_with_edited_arguments(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    edited = Approve(arguments={"to": "u3", "amount": 40})
    final = bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, edited)
    assert bank.runs == [{"to": "u3", "amount": 40}]
    assert final.messages[0].content == "sent 40 to u3"
    record = _record(bank, call.interrupt_id)
    assert record.status == "EXECUTED" and record.result == "sent 40 to u3"
    assert record.decision == {"kind": "approve", "arguments": {"to": "u3", "amount": 40}}
    assert record.tool_args == {"to": "u2", "amount": 100}  # what the model asked stays


@pytest.mark.parametrize(
    "arguments",
    [{"to": "u3", "amount": "lots"}, {"to": "u3"}, {"to": "u3", "amount": 1, "memo": "x"}],
)
def test_invalid_edited_arguments_change_nothing(bank: Bank, arguments: Any) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    before = _record(bank, call.interrupt_id)
    history = bank.stored_messages(sid)
    with pytest.raises(InvalidInputError, match="transfer"):
        bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, Approve(arguments=arguments))
    assert _record(bank, call.interrupt_id) == before  # still PENDING_APPROVAL, untouched
    assert before.status == "PENDING_APPROVAL" and before.decided_at is None
    assert bank.runs == [] and bank.stored_messages(sid) == history
    # The call can still be decided.
    final = bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert final.reply == "done" and len(bank.runs) == 1


def test_an_unknown_decision_is_invalid_input(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    with pytest.raises(InvalidInputError, match="unknown decision"):
        bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "maybe")
    assert _record(bank, call.interrupt_id).status == "PENDING_APPROVAL"


@pytest.mark.parametrize("decision", [Reject(reason="limit exceeded for u2"), "reject"])
def test_reject_gives_the_model_the_reason(bank: Bank, decision: Any) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    final = bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, decision)
    assert bank.runs == [] and final.reply == "done"
    # The model's next request ends with the rejection, answering its call.
    last = bank.seen[-1][-1]
    assert isinstance(last, ToolMessage) and last.is_error
    assert last.tool_call_id == call.tool_call_id and last.name == "transfer"
    reason = decision.reason if isinstance(decision, Reject) else "no reason given"
    assert reason in (last.content or "") and "not run" in (last.content or "")
    record = _record(bank, call.interrupt_id)
    assert record.status == "REJECTED" and record.result is None
    assert record.decision == {"kind": "reject", "reason": reason if decision != "reject" else ""}


def test_a_policy_decides_per_call(bank_factory: Callable[..., Bank]) -> None:
    def large(call: ToolCall) -> bool:
        return int(call.arguments["amount"]) > 50  # type: ignore[arg-type]

    script = [ToolCall(name="transfer", arguments={"to": "u2", "amount": 10}), "small done"]
    script += [ToolCall(name="transfer", arguments={"to": "u2", "amount": 500}), "large done"]
    bank = bank_factory(script, requires_approval=large)
    sid = bank.manager.create_sync(bank.agent)
    small = bank.manager.submit_turn_sync(sid, "send 10")
    assert small.status == "completed" and small.reply == "small done"
    assert bank.runs == [{"to": "u2", "amount": 10}]
    big = bank.manager.submit_turn_sync(sid, "send 500")
    assert big.status == "interrupted" and big.pending_tool_call.tool_args["amount"] == 500
    assert len(bank.runs) == 1
    call = big.pending_tool_call
    final = bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert final.reply == "large done" and bank.runs[-1] == {"to": "u2", "amount": 500}


def test_several_calls_in_one_answer_wait_behind_the_one_needing_approval(
    bank_factory: Callable[..., Bank],
) -> None:
    calls = [
        ToolCall(name="lookup", arguments={"who": "u2"}),
        ToolCall(name="transfer", arguments={"to": "u2", "amount": 100}),
        ToolCall(name="notify", arguments={"text": "sent"}),
    ]
    bank = bank_factory([calls, "all done"])
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    assert call.tool_name == "transfer"
    assert [c.name for c in call.remaining_calls] == ["notify"]
    assert [m.content for m in result.tool_results] == ["u2 has account 42"]  # 1st ran
    assert bank.runs == [] and bank.notes == []  # 2nd waits, 3rd waits behind it
    final = bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert bank.runs == [{"to": "u2", "amount": 100}] and bank.notes == ["sent"]
    assert final.reply == "all done"
    # The model got every answer, in the order of its calls, before answering again.
    answers = [m for m in bank.seen[-1] if isinstance(m, ToolMessage)]
    assert [m.name for m in answers] == ["lookup", "transfer", "notify"]
    history = bank.stored_messages(sid)
    assert [type(m).__name__ for m in history] == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "ToolMessage",
        "ToolMessage",
        "AssistantMessage",
    ]


def test_a_new_turn_while_a_call_waits_conflicts(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    history = bank.stored_messages(sid)
    with pytest.raises(ConflictError) as caught:
        bank.manager.submit_turn_sync(sid, "and another thing")
    assert caught.value.to_problem()["status"] == 409
    assert caught.value.context["interrupt_id"] == call.interrupt_id
    assert bank.stored_messages(sid) == history and bank.runs == []
    final = bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert final.reply == "done"
    assert bank.manager.submit_turn_sync(sid, "thanks").status == "completed"


def test_an_expired_call_is_gone_and_the_next_turn_answers_it(
    bank_factory: Callable[..., Bank],
) -> None:
    bank = bank_factory(approval_timeout=0.05)
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    assert call.expires_at is not None and call.expires_at > call.created_at
    time.sleep(0.1)
    with pytest.raises(GoneError) as caught:
        bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert caught.value.to_problem()["status"] == 410
    assert bank.runs == []
    assert _record(bank, call.interrupt_id).status == "EXPIRED"
    assert bank.manager.pending_calls() == []
    listed = bank.manager.pending_calls(sid, include_resolved=True)
    assert [(c.interrupt_id, c.status) for c in listed] == [(call.interrupt_id, "EXPIRED")]
    with pytest.raises(GoneError):  # an expired call stays expired, for any decision
        bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "reject")
    assert _record(bank, call.interrupt_id).decision is None
    # The next turn works; the expired call is answered first, so the history stays valid.
    after = bank.manager.submit_turn_sync(sid, "never mind")
    assert after.status == "completed" and after.reply == "done"
    note = after.messages[0]
    assert isinstance(note, ToolMessage) and note.is_error
    assert note.tool_call_id == call.tool_call_id and "expired" in (note.content or "")
    assert isinstance(after.messages[1], UserMessage) and bank.runs == []
    assert bank.seen[-1][-2:] == after.messages[:2]  # the model saw the answer, then the text
    assert bank.manager.submit_turn_sync(sid, "and now?").status == "completed"


def test_listing_reports_an_overdue_call_as_expired(bank_factory: Callable[..., Bank]) -> None:
    bank = bank_factory(approval_timeout=0.5)
    sid, result = bank.interrupted()
    assert [c.status for c in bank.manager.pending_calls()] == ["PENDING_APPROVAL"]
    time.sleep((result.pending_tool_call.expires_at - utcnow()).total_seconds() + 0.02)
    assert bank.manager.pending_calls() == []
    (listed,) = bank.manager.pending_calls(include_resolved=True)
    assert listed.status == "EXPIRED" and listed.decided_at is None
    assert bank.manager.pending_dataframe()["status"].tolist() == ["EXPIRED"]
    call = result.pending_tool_call
    with pytest.raises(GoneError) as caught:  # moved to EXPIRED by the listing: still 410
        bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert caught.value.to_problem()["status"] == 410 and bank.runs == []


def test_a_wrong_run_id_conflicts_and_changes_nothing(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    with pytest.raises(ConflictError) as caught:
        bank.manager.resume_sync(sid, "run_someotherrun", call.interrupt_id, "approve")
    assert caught.value.to_problem()["status"] == 409
    assert "belongs to run" in caught.value.message
    assert _record(bank, call.interrupt_id).status == "PENDING_APPROVAL" and bank.runs == []


def test_unknown_interrupt_and_unknown_session_are_not_found(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    with pytest.raises(RunNotFoundError) as caught:
        bank.manager.resume_sync(sid, call.run_id, "int_nosuchinterrupt", "approve")
    assert caught.value.to_problem()["status"] == 404
    with pytest.raises(SessionNotFoundError) as missing:
        bank.manager.resume_sync("ses_nosuchsession", call.run_id, call.interrupt_id, "approve")
    assert missing.value.to_problem()["status"] == 404
    # An interrupt of another session is not found in this one.
    other, _ = bank_with_second_session(bank)
    with pytest.raises(RunNotFoundError):
        bank.manager.resume_sync(other, call.run_id, call.interrupt_id, "approve")
    assert _record(bank, call.interrupt_id).status == "PENDING_APPROVAL" and bank.runs == []


def bank_with_second_session(bank: Bank) -> tuple[str, Any]:
    sid = bank.manager.create_sync(bank.agent)
    return sid, bank.manager.submit_turn_sync(sid, "hello")


def test_a_pending_call_survives_a_restart(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    bank.manager.store.close()
    # A "new kernel": a new manager on the same file, nothing live.
    manager = bank.new_manager()
    assert manager.live_ids() == []
    (waiting,) = manager.pending_calls()
    assert waiting.interrupt_id == call.interrupt_id and waiting.status == "PENDING_APPROVAL"
    session = manager.recover_sync(sid)
    assert session.pending_tool_call() == waiting
    final = manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert final.reply == "done" and bank.runs == [{"to": "u2", "amount": 100}]
    assert manager.pending_calls() == []
    assert [type(m) for m in manager.get_sync(sid).messages][-2:] == [
        ToolMessage,
        AssistantMessage,
    ]


def test_resume_recovers_a_session_that_is_not_live(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    manager = bank.new_manager()  # no recover() first: resume does it
    final = manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert final.reply == "done" and len(bank.runs) == 1


def test_pending_calls_as_a_dataframe(bank: Bank) -> None:
    first, result = bank.interrupted()
    call = result.pending_tool_call
    frame = bank.manager.pending_dataframe()
    # The columns (session, tool, args, status, expires at, decided at), plus ids,
    # whether an approved call is in doubt and who runs it, the creation time and the result.
    assert list(frame.columns) == [
        "interrupt_id",
        "session_id",
        "run_id",
        "tool_name",
        "tool_args",
        "status",
        "in_doubt",
        "executor",
        "created_at",
        "expires_at",
        "decided_at",
        "result",
    ]
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["session_id"] == first and row["tool_name"] == "transfer"
    assert row["tool_args"] == {"to": "u2", "amount": 100}
    assert row["status"] == "PENDING_APPROVAL" and row["interrupt_id"] == call.interrupt_id
    bank.manager.resume_sync(first, call.run_id, call.interrupt_id, "approve")
    assert bank.manager.pending_dataframe(include_resolved=False).empty
    done = bank.manager.pending_dataframe().iloc[0]
    assert done["status"] == "EXECUTED" and done["decided_at"] is not None
    assert done["result"] == "sent 100 to u2"


def test_a_model_failure_after_the_decision_keeps_the_tool_answer(
    bank_factory: Callable[..., Bank],
) -> None:
    def down(_messages: Any) -> Any:
        raise ModelError("the backend is down")

    transfer = ToolCall(name="transfer", arguments={"to": "u2", "amount": 100})
    bank = bank_factory([transfer, down, "back again"])
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    with pytest.raises(ModelError):
        bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert bank.runs == [{"to": "u2", "amount": 100}]
    assert _record(bank, call.interrupt_id).status == "EXECUTED"
    # The tool ran, so its answer stays in the history: the model's call is never left open.
    last = bank.stored_messages(sid)[-1]
    assert isinstance(last, ToolMessage) and last.tool_call_id == call.tool_call_id
    assert last.content == "sent 100 to u2"
    with pytest.raises(ConflictError):  # decided once; the tool does not run again
        bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    after = bank.manager.submit_turn_sync(sid, "are you back?")
    assert after.reply == "back again" and len(bank.runs) == 1
    assert bank.seen[-1][-2:] == [last, after.messages[0]]


def test_a_cancelled_resume_answers_the_calls_it_did_not_run(
    bank_factory: Callable[..., Bank],
) -> None:
    calls = [
        ToolCall(name="transfer", arguments={"to": "u2", "amount": 100}),
        ToolCall(name="pause", arguments={"seconds": 30}),
    ]
    bank = bank_factory([calls, "later"])
    sid, result = bank.interrupted()
    call = result.pending_tool_call

    async def cancel_while_pausing() -> None:
        task = asyncio.ensure_future(
            bank.manager.resume(sid, call.run_id, call.interrupt_id, "approve")
        )
        for _ in range(1000):  # at most ~10 s
            if bank.paused.is_set() or task.done():
                break
            await asyncio.sleep(0.01)
        assert bank.paused.is_set() and not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_while_pausing())
    assert len(bank.runs) == 1
    answers = [m for m in bank.stored_messages(sid) if isinstance(m, ToolMessage)]
    assert [(m.name, m.is_error) for m in answers] == [("transfer", False), ("pause", True)]
    assert "not executed" in (answers[1].content or "")
    assert bank.manager.submit_turn_sync(sid, "still there?").reply == "later"


def test_a_resumed_turn_can_be_interrupted_again(bank_factory: Callable[..., Bank]) -> None:
    calls = [
        ToolCall(name="transfer", arguments={"to": "u2", "amount": 100}),
        ToolCall(name="transfer", arguments={"to": "u3", "amount": 7}),
    ]
    bank = bank_factory([calls, "both handled"])
    sid, result = bank.interrupted()
    first = result.pending_tool_call
    second = bank.manager.resume_sync(sid, first.run_id, first.interrupt_id, "approve")
    assert second.status == "interrupted" and second.run_id == first.run_id
    waiting = second.pending_tool_call
    assert waiting.tool_args == {"to": "u3", "amount": 7} and waiting.remaining_calls == []
    assert bank.runs == [{"to": "u2", "amount": 100}]
    assert [c.interrupt_id for c in bank.manager.pending_calls()] == [waiting.interrupt_id]
    final = bank.manager.resume_sync(sid, waiting.run_id, waiting.interrupt_id, "reject")
    assert final.reply == "both handled" and len(bank.runs) == 1
    assert final.turn_index == result.turn_index == 1

"""The stored pending state is the version-2 state: written with its version, parsed strictly
on every read, and a corrupted or other-version row is a 422 naming it — never a raw parser
error, never a silent repair, and nothing is written."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from agcore_lab import CorruptRecordError, SessionState, StorageError, UnprocessableError

Bank = Any  # the conftest's Bank

RUN = {"thread_id": "ses_1", "run_id": "run_1"}


def test_version_2_without_or_with_a_wrongly_typed_pending_tool_call_is_422() -> None:
    for state in (
        {"version": 2},
        {"version": 2, "run_context": RUN},
        {"version": 2, "pending_tool_call": None, "run_context": RUN},
        {"version": 2, "pending_tool_call": "transfer", "run_context": RUN},
        {"version": 2, "pending_tool_call": [1, 2], "run_context": RUN},
        {"version": 2, "pending_tool_call": {"interrupt_id": "i"}, "run_context": RUN},
    ):
        with pytest.raises(UnprocessableError) as caught:
            SessionState.parse(json.dumps(state))
        assert caught.value.to_problem()["status"] == 422
        assert "pending_tool_call" in str(caught.value)


def _rows(bank: Bank, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(bank.path) as conn:
        return conn.execute(sql).fetchall()


def _corrupt(bank: Bank, sql: str, *params: Any) -> None:
    with sqlite3.connect(bank.path) as conn:
        conn.execute(sql, params)


def test_calls_and_checkpoints_store_the_versioned_state(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    assert _rows(bank, "SELECT state_version FROM pending_calls") == [(2,)]
    (text,) = _rows(bank, "SELECT pending_json FROM checkpoints WHERE pending_json IS NOT NULL")[0]
    stored = json.loads(text)
    assert stored["version"] == 2
    assert stored["run_context"] == {"thread_id": sid, "run_id": call.run_id}
    assert SessionState.parse({k: v for k, v in stored.items() if k != "detail"}) == call.to_state()


CORRUPTIONS = {
    "another state version": ("UPDATE pending_calls SET state_version = 3", "version 3"),
    "no state version": ("UPDATE pending_calls SET state_version = NULL", "version None"),
    "arguments not JSON": ("UPDATE pending_calls SET tool_args_json = '{oops'", "not valid JSON"),
    "arguments a list": ("UPDATE pending_calls SET tool_args_json = '[1]'", "tool_args"),
    "unknown status": ("UPDATE pending_calls SET status = 'MAYBE'", "status"),
    "bad timestamp": ("UPDATE pending_calls SET updated_at = 'yesterday'", "updated_at"),
    "bad remaining calls": ("UPDATE pending_calls SET remaining_json = '{\"a\": 1}'", "remaining"),
}


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_resume_of_a_corrupted_stored_call_is_422_and_writes_nothing(bank: Bank, case: str) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    sql, what = CORRUPTIONS[case]
    _corrupt(bank, sql)
    before = (
        _rows(bank, "SELECT * FROM pending_calls"),
        _rows(bank, "SELECT * FROM sessions"),
        _rows(bank, "SELECT count(*) FROM messages"),
        _rows(bank, "SELECT count(*) FROM checkpoints"),
    )
    with pytest.raises(CorruptRecordError) as caught:
        bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    error = caught.value
    assert isinstance(error, UnprocessableError) and isinstance(error, StorageError)
    assert what in str(error)
    problem = error.to_problem()
    assert problem["status"] == 422 and problem["type"].endswith("/corrupt-record")
    assert problem["table"] == "pending_calls" and problem["key"] == call.interrupt_id
    assert problem["session_id"] == sid and problem["interrupt_id"] == call.interrupt_id
    assert error.__cause__ is not None  # the parser's error, kept as the cause
    assert bank.runs == []  # the tool never ran
    after = (
        _rows(bank, "SELECT * FROM pending_calls"),
        _rows(bank, "SELECT * FROM sessions"),
        _rows(bank, "SELECT count(*) FROM messages"),
        _rows(bank, "SELECT count(*) FROM checkpoints"),
    )
    assert after == before  # nothing written, nothing repaired


CKPT_CORRUPTIONS = {
    "pending state without pending_tool_call": (
        "UPDATE checkpoints SET pending_json = '{\"version\": 2}' WHERE pending_json IS NOT NULL",
        "pending_tool_call",
    ),
    "pending state of another version": (
        "UPDATE checkpoints SET pending_json = json_set(pending_json, '$.version', 1) "
        "WHERE pending_json IS NOT NULL",
        "version 1",
    ),
    "pending JSON cut short": (
        "UPDATE checkpoints SET pending_json = substr(pending_json, 1, 40) "
        "WHERE pending_json IS NOT NULL",
        "not valid JSON",
    ),
    "slots JSON broken": (
        "UPDATE checkpoints SET slots_json = '{\"main\": 7}' WHERE pending_json IS NOT NULL",
        "slots",
    ),
    "bad timestamp": (
        "UPDATE checkpoints SET created_at = 'last tuesday' WHERE pending_json IS NOT NULL",
        "created_at",
    ),
}


@pytest.mark.parametrize("case", list(CKPT_CORRUPTIONS))
def test_a_corrupted_checkpoint_row_is_422_naming_it(bank: Bank, case: str) -> None:
    sid, _ = bank.interrupted()
    (ckpt_id,) = _rows(bank, "SELECT ckpt_id FROM checkpoints WHERE pending_json IS NOT NULL")[0]
    sql, what = CKPT_CORRUPTIONS[case]
    _corrupt(bank, sql)
    before = _rows(bank, "SELECT * FROM checkpoints ORDER BY ckpt_id")
    version = _rows(bank, "SELECT version FROM sessions")
    for read in (
        lambda: bank.manager.checkpointer.list_checkpoints_sync(sid),
        lambda: bank.manager.checkpointer.rollback_sync(sid, ckpt_id),
    ):
        with pytest.raises(CorruptRecordError) as caught:
            read()
        problem = caught.value.to_problem()
        assert problem["status"] == 422 and problem["table"] == "checkpoints"
        assert problem["key"] == ckpt_id and problem["session_id"] == sid
        assert what in str(caught.value)
    assert _rows(bank, "SELECT * FROM checkpoints ORDER BY ckpt_id") == before
    assert _rows(bank, "SELECT version FROM sessions") == version


def test_a_corrupted_slot_row_is_422_naming_it(bank: Bank) -> None:
    sid, _ = bank.interrupted()
    _corrupt(bank, "UPDATE slots SET created_at = 'soon', pinned_json = '[' WHERE slot_id = 'main'")
    with pytest.raises(CorruptRecordError) as caught:
        bank.manager.store.load_slots(sid)
    assert caught.value.to_problem()["table"] == "slots"
    assert caught.value.to_problem()["key"] == f"{sid}/main"

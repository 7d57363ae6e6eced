"""RFC 7807 problem details of the approval errors (404, 409, 410, 422), and the versioned,
strictly typed ``SessionState`` snapshot."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from agcore_lab import (
    ConflictError,
    GoneError,
    NotFoundError,
    RunNotFoundError,
    SessionSnapshot,
    SessionState,
    UnprocessableError,
)
from agcore_lab.errors import ProblemError

Bank = Any  # the conftest's Bank

BASE = "https://agcore-lab.dev/problems/"
ISSUE_STATE = """
{"version": 2,
 "pending_tool_call": {"interrupt_id": "...", "tool_name": "srv.transfer_funds",
   "tool_args": {"to": "u2", "amount": 100}, "status": "PENDING_APPROVAL",
   "expires_at": "2026-03-03T12:00:00Z", "decision": null, "result": null,
   "updated_at": "2026-03-03T11:59:00Z"},
 "run_context": {"thread_id": "...", "run_id": "..."}}
"""


def _problem(error: ProblemError, status: int, slug: str, title: str) -> dict[str, Any]:
    problem = error.to_problem()
    assert problem["type"] == BASE + slug
    assert problem["title"] == title
    assert problem["status"] == status == error.status
    assert problem["detail"] == str(error) and error.message in problem["detail"]
    json.dumps(problem)  # a service can send it as it is
    return problem


def test_404_for_an_unknown_interrupt(bank: Bank) -> None:
    sid, result = bank.interrupted()
    with pytest.raises(RunNotFoundError) as caught:
        bank.manager.resume_sync(sid, result.run_id, "int_missing", "approve")
    error = caught.value
    assert isinstance(error, NotFoundError)
    problem = _problem(error, 404, "not-found", "Not found")
    assert problem["instance"] == sid
    assert "int_missing" in problem["detail"] and result.run_id in problem["detail"]
    assert set(problem) == {"type", "title", "status", "detail", "instance"}


def test_409_for_a_run_mismatch_and_for_an_already_resolved_call(bank: Bank) -> None:
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    with pytest.raises(ConflictError) as mismatch:
        bank.manager.resume_sync(sid, "run_other", call.interrupt_id, "approve")
    problem = _problem(mismatch.value, 409, "conflict", "Conflict")
    assert problem["instance"] == sid and "run_other" in problem["detail"]
    bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "reject")
    with pytest.raises(ConflictError) as resolved:
        bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    problem = _problem(resolved.value, 409, "conflict", "Conflict")
    assert problem["instance"] == sid
    assert "REJECTED" in problem["detail"] and call.interrupt_id in problem["detail"]
    assert resolved.value.context["interrupt_id"] == call.interrupt_id


def test_410_for_an_expired_call(bank_factory: Callable[..., Bank]) -> None:
    bank = bank_factory(approval_timeout=0.05)
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    time.sleep(0.1)
    with pytest.raises(GoneError) as caught:
        bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    problem = _problem(caught.value, 410, "gone", "Gone")
    assert problem["instance"] == sid
    assert "expired" in problem["detail"] and call.interrupt_id in problem["detail"]
    custom = caught.value.to_problem(instance=f"/sessions/{sid}/interrupts/{call.interrupt_id}")
    assert custom["instance"].endswith(call.interrupt_id)


def _state() -> dict[str, Any]:
    return json.loads(ISSUE_STATE)


def _without(path: str) -> dict[str, Any]:
    data = _state()
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[key]
    del node[last]
    return data


def _with(path: str, value: Any) -> dict[str, Any]:
    data = _state()
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[key]
    node[last] = value
    return data


BAD_STATES = {
    "version 1": _with("version", 1),
    "version '2'": _with("version", "2"),
    "no version": _without("version"),
    "no tool_name": _without("pending_tool_call.tool_name"),
    "no status": _without("pending_tool_call.status"),
    "no updated_at": _without("pending_tool_call.updated_at"),
    "no thread_id": _without("run_context.thread_id"),
    "tool_args a list": _with("pending_tool_call.tool_args", [1, 2]),
    "status unknown": _with("pending_tool_call.status", "MAYBE"),
    "expires_at not a time": _with("pending_tool_call.expires_at", "soon"),
    "run_id a number": _with("run_context.run_id", 7),
    "an extra field": _with("pending_tool_call.owner", "me"),
}


@pytest.mark.parametrize("name", list(BAD_STATES))
def test_422_for_an_invalid_session_state(name: str) -> None:
    data = BAD_STATES[name]
    for given in (data, json.dumps(data), json.dumps(data).encode()):
        with pytest.raises(UnprocessableError) as caught:
            SessionState.parse(copy.deepcopy(given))
        problem = _problem(caught.value, 422, "unprocessable-entity", "Unprocessable entity")
        assert "instance" not in problem  # no id to name: a service passes its own
        assert caught.value.to_problem(instance="/state/upload")["instance"] == "/state/upload"
    if "version" in name:
        assert "version" in str(caught.value)


def test_422_for_state_text_that_is_not_json_or_not_an_object() -> None:
    # Also bytes that are no Unicode at all: a clean 422, never a UnicodeDecodeError.
    for given in ("{not json", "[2]", "null", b"\xff\xfe\xfd", b"\x80"):
        with pytest.raises(UnprocessableError):
            SessionState.parse(given)


def test_422_for_an_invalid_snapshot_and_nothing_is_written(bank: Bank) -> None:
    sid = bank.manager.create_sync(bank.agent)
    bank.manager.submit_turn_sync(sid, "hello")  # the transfer call, now pending
    ckpt = bank.manager.checkpointer.list_checkpoints_sync(sid)[0].ckpt_id
    good = bank.manager.checkpointer.export_snapshot_sync(ckpt).model_dump(mode="json")
    bad = [
        good | {"version": 1},
        {k: v for k, v in good.items() if k != "agent_name"},
        good | {"turn_index": "three"},
        good | {"slots": "main"},
    ]
    sessions = len(bank.manager.store.list_sessions())
    for snapshot in bad:
        with pytest.raises(UnprocessableError) as caught:
            SessionSnapshot.parse(snapshot)
        _problem(caught.value, 422, "unprocessable-entity", "Unprocessable entity")
        with pytest.raises(UnprocessableError):
            bank.manager.checkpointer.import_snapshot_sync(json.dumps(snapshot))
    assert len(bank.manager.store.list_sessions()) == sessions
    assert bank.manager.checkpointer.import_snapshot_sync(good).startswith("ses_")


def test_the_issue_state_json_parses_and_round_trips() -> None:
    state = SessionState.parse(ISSUE_STATE)
    assert state.version == 2
    assert state.pending_tool_call is not None and state.run_context is not None
    assert state.pending_tool_call.tool_name == "srv.transfer_funds"
    assert state.pending_tool_call.expires_at == datetime.fromisoformat("2026-03-03T12:00:00+00:00")
    assert state.model_dump(mode="json") == _state()
    assert SessionState.parse(state.model_dump_json()) == state


def test_the_snapshot_of_a_pending_call_has_exactly_the_issue_shape(
    bank_factory: Callable[..., Bank],
) -> None:
    bank = bank_factory(approval_timeout=3600)
    sid, result = bank.interrupted()
    call = result.pending_tool_call
    state = call.to_state().model_dump(mode="json")
    expected = _state()
    assert set(state) == set(expected)
    assert set(state["pending_tool_call"]) == set(expected["pending_tool_call"])
    assert set(state["run_context"]) == set(expected["run_context"])
    assert state["version"] == 2
    assert state["run_context"] == {"thread_id": sid, "run_id": result.run_id}
    pending = state["pending_tool_call"]
    assert pending["interrupt_id"] == call.interrupt_id and pending["tool_name"] == "transfer"
    assert pending["tool_args"] == {"to": "u2", "amount": 100}
    assert pending["status"] == "PENDING_APPROVAL"
    assert pending["decision"] is None and pending["result"] is None
    for stamp in (pending["expires_at"], pending["updated_at"]):
        assert stamp.endswith("Z")  # UTC, as in the issue
    expires = datetime.fromisoformat(pending["expires_at"])
    assert 3590 < (expires - datetime.fromisoformat(pending["updated_at"])).total_seconds() <= 3600
    assert SessionState.parse(state) == call.to_state()
    # After the decision, the stored record's state carries the decision and the result.
    bank.manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    done = bank.manager.store.get_pending(call.interrupt_id).to_state().model_dump(mode="json")
    assert done["pending_tool_call"]["status"] == "EXECUTED"
    assert done["pending_tool_call"]["result"] == "sent 100 to u2"
    assert done["pending_tool_call"]["decision"]["kind"] == "approve"
    assert set(done["pending_tool_call"]) == set(expected["pending_tool_call"])

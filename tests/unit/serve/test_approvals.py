"""Pending calls and resume over HTTP: the acceptance snippet, edits, rejections, and the
design's statuses — 404, 409, 410 (stored as EXPIRED), 422 (an invalid stored state)."""

from __future__ import annotations

import sqlite3
import time

from fastapi.testclient import TestClient

from agcore_lab import Agent, ConflictError, ScriptedModel
from tests.unit.serve.conftest import Lab, assert_problem, resume_url


def test_the_issue_snippet_in_process(lab: Lab, client: TestClient) -> None:
    sid = client.post("/sessions", json={"agent": "bank"}).json()["session_id"]
    turn = client.post(f"/sessions/{sid}/turns", json={"text": "send 100 to u2"}).json()
    call = turn["pending_tool_call"]
    assert call["status"] == "PENDING_APPROVAL" and turn["status"] == "interrupted"
    url = resume_url(sid, call)
    assert client.post(url, json={"decision": "approve"}).json()["reply"] == "done"
    again = client.post(url, json={"decision": "approve"})
    body = assert_problem(again, 409, "conflict")
    assert "EXECUTED" in body["detail"] and body["instance"] == url
    assert lab.runs == [{"to": "u2", "amount": 100}]


def test_approve_with_edited_arguments_runs_the_tool_with_them(
    lab: Lab, client: TestClient
) -> None:
    sid, call = lab.interrupted(client)
    edited = {"decision": "approve", "arguments": {"to": "u3", "amount": 5}}
    answer = client.post(resume_url(sid, call), json=edited)
    assert answer.status_code == 200, answer.text
    assert answer.json()["reply"] == "done"
    assert lab.runs == [{"to": "u3", "amount": 5}]
    stored = lab.manager.store.get_pending(call["interrupt_id"])
    assert stored is not None and stored.status == "EXECUTED"
    assert stored.decision is not None and stored.decision["arguments"] == {"to": "u3", "amount": 5}


def test_reject_with_a_reason_the_model_sees_and_the_tool_never_runs(
    lab: Lab, client: TestClient
) -> None:
    sid, call = lab.interrupted(client)
    answer = client.post(resume_url(sid, call), json={"decision": "reject", "reason": "too much"})
    assert answer.status_code == 200 and answer.json()["reply"] == "refused"
    assert lab.runs == []
    tool_answers = [m for m in lab.seen[-1] if m.role == "tool"]
    assert "too much" in tool_answers[-1].text
    listed = client.get("/pending", params={"include_resolved": True}).json()["items"]
    assert [item["call"]["status"] for item in listed] == ["REJECTED"]


def test_pending_lists_calls_across_sessions_with_state_and_paging(
    lab: Lab, client: TestClient
) -> None:
    made = [lab.interrupted(client) for _ in range(3)]
    page = client.get("/pending", params={"limit": 2}).json()
    assert page["total"] == 3 and page["limit"] == 2 and len(page["items"]) == 2
    rest = client.get("/pending", params={"limit": 2, "offset": 2}).json()["items"]
    ids = [i["call"]["interrupt_id"] for i in page["items"] + rest]
    assert ids == [call["interrupt_id"] for _, call in made]
    first = page["items"][0]
    assert first["state"]["version"] == 2
    assert first["state"]["run_context"] == {
        "thread_id": made[0][0],
        "run_id": made[0][1]["run_id"],
    }
    assert first["seconds_left"] is None  # the bank's approvals never expire
    one = client.get("/pending", params={"session_id": made[1][0]}).json()
    assert [i["call"]["session_id"] for i in one["items"]] == [made[1][0]]
    sid, call = made[2]
    detail = client.get(resume_url(sid, call).removesuffix("/resume")).json()
    assert detail["call"]["tool_args"] == {"to": "u2", "amount": 100}


def test_404_for_unknown_session_run_or_interrupt(lab: Lab, client: TestClient) -> None:
    sid, call = lab.interrupted(client)
    unknown = dict(call, interrupt_id="int_missing")
    assert_problem(client.post(resume_url(sid, unknown), json={"decision": "approve"}), 404)
    assert_problem(client.post(resume_url("ses_missing", call), json={"decision": "approve"}), 404)
    assert_problem(
        client.get(resume_url(sid, dict(call, run_id="run_x")).removesuffix("/resume")), 404
    )
    assert_problem(client.get("/pending", params={"session_id": "ses_missing"}), 404)
    assert lab.runs == []


def test_409_for_a_run_that_is_not_the_interrupts(lab: Lab, client: TestClient) -> None:
    sid, call = lab.interrupted(client)
    body = assert_problem(
        client.post(resume_url(sid, dict(call, run_id="run_other")), json={"decision": "approve"}),
        409,
        "conflict",
    )
    assert "run_other" in body["detail"]
    assert lab.manager.store.get_pending(call["interrupt_id"]).status == "PENDING_APPROVAL"


def test_410_for_an_expired_call_which_is_then_stored_as_expired(
    lab: Lab, client: TestClient
) -> None:
    sid, call = lab.interrupted(client, agent="quick")
    assert client.get("/pending").json()["items"][0]["seconds_left"] <= 0.2
    time.sleep(0.3)
    body = assert_problem(
        client.post(resume_url(sid, call), json={"decision": "approve"}), 410, "gone"
    )
    assert "expired" in body["detail"]
    detail = client.get(resume_url(sid, call).removesuffix("/resume")).json()
    assert detail["call"]["status"] == "EXPIRED" and detail["seconds_left"] is None
    assert detail["state"]["pending_tool_call"]["status"] == "EXPIRED"
    assert client.get("/pending").json()["total"] == 0
    assert lab.runs == []


def test_422_for_an_invalid_stored_state_and_nothing_changes(lab: Lab, client: TestClient) -> None:
    sid, call = lab.interrupted(client)
    with sqlite3.connect(lab.path) as raw:  # another tool (or a bad migration) broke the row
        raw.execute(
            "UPDATE pending_calls SET tool_args_json = '[1, 2]' WHERE interrupt_id = ?",
            (call["interrupt_id"],),
        )
    answer = client.post(resume_url(sid, call), json={"decision": "approve"})
    body = assert_problem(answer, 422, "corrupt-record")
    assert "tool_args" in body["detail"]
    assert_problem(client.get("/pending"), 422, "corrupt-record")
    with sqlite3.connect(lab.path) as raw:
        status = raw.execute(
            "SELECT status FROM pending_calls WHERE interrupt_id = ?", (call["interrupt_id"],)
        ).fetchone()
    assert status == ("PENDING_APPROVAL",) and lab.runs == []


def test_422_for_stored_json_that_is_not_json(lab: Lab, client: TestClient) -> None:
    sid, call = lab.interrupted(client)
    with sqlite3.connect(lab.path) as raw:
        raw.execute("UPDATE pending_calls SET decision_json = '{broken'")
    body = assert_problem(
        client.post(resume_url(sid, call), json={"decision": "reject"}), 422, "corrupt-record"
    )
    assert "not valid JSON" in body["detail"]
    assert lab.runs == []


def test_400_for_malformed_decisions(lab: Lab, client: TestClient) -> None:
    sid, call = lab.interrupted(client)
    url = resume_url(sid, call)
    for body in (
        {"decision": "maybe"},
        {},
        {"decision": "approve", "reason": "why not"},
        {"decision": "reject", "arguments": {"to": "u9"}},
        {"decision": "approve", "extra": 1},
        {"decision": "reject", "reason": "x" * 2001},
    ):
        assert_problem(client.post(url, json=body), 400, "malformed-request")
    json_type = {"content-type": "application/json"}
    assert_problem(client.post(url, content=b"{not json", headers=json_type), 400)
    for raw in (b"NaN", b"Infinity", b"1e999"):  # Python's json reads them; JSON has no such
        body = b'{"decision": "approve", "arguments": {"to": "u2", "amount": ' + raw + b"}}"
        assert_problem(client.post(url, content=body, headers=json_type), 400, "malformed-request")
    assert lab.manager.store.get_pending(call["interrupt_id"]).status == "PENDING_APPROVAL"


class _SessionBusyError(ConflictError):
    """Stands in for the 409 subclasses the shared-sessions work adds."""


def test_any_problem_error_subclass_maps_with_its_status(lab: Lab) -> None:
    def busy(messages: object) -> str:
        raise _SessionBusyError("another writer holds the turn", session_id="ses_x")

    lab.manager.register_agent(Agent(name="busy", model=ScriptedModel(busy)))
    with lab.client() as client:
        sid = lab.session(client, agent="busy")
        answer = client.post(f"/sessions/{sid}/turns", json={"text": "hi"})
    body = assert_problem(answer, 409, "conflict")
    assert "another writer holds the turn" in body["detail"]
    assert body["instance"] == f"/sessions/{sid}/turns"

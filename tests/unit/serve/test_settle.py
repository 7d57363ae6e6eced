"""In-doubt calls over HTTP: listed, settled once (409 after), shown with a Settle button."""

from __future__ import annotations

import time
from typing import Any

from fastapi.testclient import TestClient

from tests.unit.serve.conftest import Lab, assert_problem, resume_url


def _in_doubt(lab: Lab, client: TestClient) -> tuple[str, dict[str, Any]]:
    """A call approved by an executor that died (nobody renews its lease)."""
    sid, call = lab.interrupted(client)
    lab.manager.store.decide_pending(
        session_id=sid,
        run_id=call["run_id"],
        interrupt_id=call["interrupt_id"],
        to_status="APPROVED_EXECUTING",
        decision={"kind": "approve", "arguments": call["tool_args"]},
        executor="worker-7:4242:abc",
        lease_seconds=0.05,
    )
    time.sleep(0.1)
    return sid, call


def _settle_url(sid: str, call: dict[str, Any]) -> str:
    return resume_url(sid, call).removesuffix("/resume") + "/settle"


def test_an_in_doubt_call_is_listed_and_settled_once(lab: Lab, client: TestClient) -> None:
    sid, call = _in_doubt(lab, client)
    listed = client.get("/pending", params={"in_doubt": True}).json()
    assert [i["call"]["interrupt_id"] for i in listed["items"]] == [call["interrupt_id"]]
    assert listed["items"][0]["in_doubt"] is True
    assert listed["items"][0]["call"]["executor"] == "worker-7:4242:abc"
    # A resume of it is a 409: it is no longer waiting for a decision.
    assert_problem(client.post(resume_url(sid, call), json={"decision": "approve"}), 409)
    answer = client.post(_settle_url(sid, call), json={"result": "it did run: sent 100 to u2"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["reply"] == "done"
    assert lab.runs == []  # settling never runs the tool
    assert "it did run" in [m for m in lab.seen[-1] if m.role == "tool"][-1].text
    again = assert_problem(client.post(_settle_url(sid, call), json={}), 409, "conflict")
    assert "not in doubt" in again["detail"]
    assert client.get("/pending", params={"in_doubt": True}).json()["items"] == []


def test_settle_without_a_result_and_the_errors(lab: Lab, client: TestClient) -> None:
    sid, call = lab.interrupted(client)
    # Waiting for a decision, not in doubt: 409.
    assert_problem(client.post(_settle_url(sid, call), json={}), 409, "conflict")
    wrong = {**call, "run_id": "run_nope"}
    assert_problem(client.post(_settle_url(sid, wrong), json={}), 404)
    assert_problem(client.post(_settle_url(sid, call), json={"result": 3}), 400)
    sid, call = _in_doubt(lab, client)
    answer = client.post(_settle_url(sid, call), json={})
    assert answer.status_code == 200, answer.text
    tool = [m for m in lab.seen[-1] if m.role == "tool"][-1]
    assert "outcome of this call is unknown" in tool.text


def test_the_page_shows_an_in_doubt_call_with_a_settle_button(lab: Lab, client: TestClient) -> None:
    _, call = _in_doubt(lab, client)
    page = client.get("/approve/rows").text
    assert call["interrupt_id"] in page and 'data-action="settle"' in page
    assert "in doubt" in page and "worker-7:4242:abc" in page
    assert 'data-action="approve"' not in page

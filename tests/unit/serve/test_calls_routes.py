"""The model-call log over HTTP: a session's calls and one call by id."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.unit.serve.conftest import Lab, assert_problem


def test_calls_of_a_session_and_one_call(lab: Lab, client: TestClient) -> None:
    sid, call = lab.interrupted(client)  # one model request so far (the tool call)
    page = client.get(f"/sessions/{sid}/calls").json()
    assert page["total"] == 1
    first = page["items"][0]
    assert first["session_id"] == sid and first["kind"] == "turn"
    assert first["response"]["tool_calls"][0]["name"] == "transfer"
    assert first["request_messages"][-1]["role"] == "user"
    client.post(
        f"/sessions/{sid}/runs/{call['run_id']}/interrupts/{call['interrupt_id']}/resume",
        json={"decision": "approve"},
    )
    assert client.get(f"/sessions/{sid}/calls", params={"last": 1}).json()["total"] == 1
    assert client.get(f"/sessions/{sid}/calls").json()["total"] == 2
    one = client.get(f"/calls/{first['call_id']}").json()
    assert one["call_id"] == first["call_id"] and one["request_hash"] == first["request_hash"]
    assert_problem(client.get("/calls/call_nope"), 404)
    assert_problem(client.get("/sessions/ses_nope/calls"), 404)
    assert_problem(client.get(f"/sessions/{sid}/calls", params={"last": 0}), 400)

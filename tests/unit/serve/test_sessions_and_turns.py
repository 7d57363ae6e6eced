"""Sessions (create, list, get, tree, children, destroy) and turns, as JSON and as SSE."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from agcore_lab import Agent, ConflictError, ScriptedModel
from agcore_lab.serve import Limits
from tests.unit.serve.conftest import Lab, assert_problem, resume_url


def _events(text: str) -> list[tuple[str, Any]]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_create_get_list_tree_children_destroy(lab: Lab, client: TestClient) -> None:
    root = lab.session(client)
    child = client.post("/sessions", json={"agent": "bank", "parent_id": root})
    assert child.status_code == 201 and child.json()["parent_id"] == root
    kid = child.json()["session_id"]
    info = client.get(f"/sessions/{root}").json()
    assert info["agent_name"] == "bank" and info["turn_index"] == 0 and info["live"] is True
    assert client.get(f"/sessions/{root}/children").json() == [kid]
    tree = client.get(f"/sessions/{root}/tree").json()
    assert tree["session_id"] == root and [c["session_id"] for c in tree["children"]] == [kid]
    listed = client.get("/sessions", params={"limit": 1}).json()
    assert listed["total"] == 2 and [s["session_id"] for s in listed["items"]] == [root]
    assert client.delete(f"/sessions/{kid}").status_code == 204
    assert_problem(client.get(f"/sessions/{kid}"), 404, "not-found")
    assert lab.manager.store.get_session(kid) is None
    assert_problem(client.delete(f"/sessions/{kid}"), 404)


def test_unknown_agent_or_parent_is_404_and_creates_nothing(lab: Lab, client: TestClient) -> None:
    body = assert_problem(client.post("/sessions", json={"agent": "nobody"}), 404)
    assert "bank" in body["detail"]  # names the agents that exist
    assert_problem(client.post("/sessions", json={"agent": "bank", "parent_id": "ses_x"}), 404)
    assert lab.manager.store.list_sessions() == []


def test_malformed_session_requests_are_400(client: TestClient) -> None:
    for body in ({}, {"agent": ""}, {"agent": "a b"}, {"agent": "bank", "colour": "red"}, [1]):
        assert_problem(client.post("/sessions", json=body), 400, "malformed-request")
    for params in ({"limit": 0}, {"limit": 501}, {"offset": -1}, {"limit": "many"}):
        assert_problem(client.get("/sessions", params=params), 400)


def test_a_turn_as_json(lab: Lab, client: TestClient) -> None:
    sid = lab.session(client)
    turn = client.post(f"/sessions/{sid}/turns", json={"text": "send 100 to u2"}).json()
    assert turn["session_id"] == sid and turn["turn_index"] == 1
    assert turn["tool_calls"][0]["name"] == "transfer"
    assert client.get(f"/sessions/{sid}").json()["pending"][0]["tool_name"] == "transfer"


def test_a_turn_as_server_sent_events_ends_with_the_committed_result(
    lab: Lab, client: TestClient
) -> None:
    sid = lab.session(client)
    with client.stream(
        "POST",
        f"/sessions/{sid}/turns",
        json={"text": "send 100 to u2"},
        headers={"Accept": "text/event-stream"},
    ) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        events = _events(stream.read().decode())
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "turn_done" and "tool_call_delta" in kinds
    arguments = "".join(d["arguments"] for k, d in events if k == "tool_call_delta")
    assert json.loads(arguments) == {"to": "u2", "amount": 100}
    result = events[-1][1]["result"]
    assert result["status"] == "interrupted"
    call = result["pending_tool_call"]
    assert lab.manager.store.get_pending(call["interrupt_id"]) is not None  # committed
    assert (
        client.post(resume_url(sid, call), json={"decision": "approve"}).json()["reply"] == "done"
    )


def test_streaming_an_unknown_session_is_a_plain_404(client: TestClient) -> None:
    answer = client.post(
        "/sessions/ses_nope/turns", json={"text": "hi"}, headers={"Accept": "text/event-stream"}
    )
    assert_problem(answer, 404, "not-found")


def test_turn_text_is_bounded(lab: Lab) -> None:
    with lab.client(lab.app(limits=Limits(max_text_chars=10))) as client:
        sid = lab.session(client)
        body = assert_problem(client.post(f"/sessions/{sid}/turns", json={"text": "x" * 11}), 400)
        assert "10" in body["detail"]
        assert_problem(client.post(f"/sessions/{sid}/turns", json={"text": ""}), 400)
        assert client.get(f"/sessions/{sid}").json()["turn_index"] == 0


def test_the_app_loop_placement_serves_turns_too(lab: Lab) -> None:
    with lab.client(lab.app(engine_loop="app")) as client:
        sid, call = lab.interrupted(client)
        assert (
            client.post(resume_url(sid, call), json={"decision": "approve"}).json()["reply"]
            == "done"
        )
    assert lab.runs == [{"to": "u2", "amount": 100}]


def test_a_failure_after_the_stream_started_is_an_error_event(lab: Lab) -> None:
    def broken(messages: object) -> str:
        raise ConflictError("someone else moved the session on", session_id="ses_x")

    lab.manager.register_agent(Agent(name="broken", model=ScriptedModel(broken)))
    with lab.client() as client:
        sid = lab.session(client, agent="broken")
        with client.stream(
            "POST",
            f"/sessions/{sid}/turns",
            json={"text": "hi"},
            headers={"Accept": "text/event-stream"},
        ) as stream:
            assert stream.status_code == 200
            events = _events(stream.read().decode())
        assert [kind for kind, _ in events] == ["error"]
        problem = events[0][1]
        assert problem["status"] == 409 and "moved the session on" in problem["detail"]
        assert client.get(f"/sessions/{sid}").json()["turn_index"] == 0  # nothing committed

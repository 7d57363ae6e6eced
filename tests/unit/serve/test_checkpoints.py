"""Checkpoints over HTTP: list, get, take, rollback, fork, export a snapshot, import it; an
invalid snapshot is 422 and writes nothing."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.unit.serve.conftest import Lab, assert_problem, resume_url


def _finished(lab: Lab, client: TestClient) -> str:
    sid, call = lab.interrupted(client)
    assert client.post(resume_url(sid, call), json={"decision": "approve"}).status_code == 200
    return sid


def test_list_take_get_and_rollback(lab: Lab, client: TestClient) -> None:
    sid = _finished(lab, client)
    listed = client.get(f"/sessions/{sid}/checkpoints").json()
    assert listed["total"] >= 2
    first = listed["items"][-1]  # newest first: the last is the start
    assert first["turn_index"] == 0
    taken = client.post(f"/sessions/{sid}/checkpoints", json={"label": "before"})
    assert taken.status_code == 201 and taken.json()["label"] == "before"
    got = client.get(f"/sessions/{sid}/checkpoints/{taken.json()['ckpt_id']}").json()
    assert got["ckpt_id"] == taken.json()["ckpt_id"] and got["turn_index"] == 1
    marker = client.post(f"/sessions/{sid}/checkpoints/{first['ckpt_id']}/rollback").json()
    assert marker["source"] == "rollback" and marker["parent_ckpt_id"] == first["ckpt_id"]
    assert client.get(f"/sessions/{sid}").json()["turn_index"] == 0
    assert lab.runs == [{"to": "u2", "amount": 100}]  # a rollback never runs a tool


def test_fork_export_and_import(lab: Lab, client: TestClient) -> None:
    sid = _finished(lab, client)
    ckpt = client.get(f"/sessions/{sid}/checkpoints").json()["items"][0]["ckpt_id"]
    fork = client.post(f"/sessions/{sid}/checkpoints/{ckpt}/fork")
    assert fork.status_code == 201 and fork.json()["parent_id"] == sid
    assert client.get(f"/sessions/{sid}/children").json() == [fork.json()["session_id"]]
    snapshot = client.get(f"/sessions/{sid}/checkpoints/{ckpt}/snapshot").json()
    assert snapshot["version"] == 2 and snapshot["session_id"] == sid
    imported = client.post("/snapshots", json=snapshot)
    assert imported.status_code == 201, imported.text
    new = imported.json()["session_id"]
    assert new != sid and client.get(f"/sessions/{new}").json()["turn_index"] == 1


def test_invalid_snapshots_are_422_and_write_nothing(lab: Lab, client: TestClient) -> None:
    sid = _finished(lab, client)
    ckpt = client.get(f"/sessions/{sid}/checkpoints").json()["items"][0]["ckpt_id"]
    good = client.get(f"/sessions/{sid}/checkpoints/{ckpt}/snapshot").json()
    sessions = len(lab.manager.store.list_sessions())
    bad = [
        good | {"version": 1},
        {k: v for k, v in good.items() if k != "agent_name"},
        good | {"turn_index": "three"},
        good | {"current_slot_id": "nowhere"},
        {},
    ]
    for snapshot in bad:
        assert_problem(client.post("/snapshots", json=snapshot), 422, "unprocessable-entity")
    assert_problem(client.post("/snapshots", json=[1, 2]), 400, "malformed-request")
    assert len(lab.manager.store.list_sessions()) == sessions


def test_unknown_checkpoints_are_404_and_another_sessions_400(lab: Lab, client: TestClient) -> None:
    a, b = lab.session(client), lab.session(client)
    theirs = client.get(f"/sessions/{b}/checkpoints").json()["items"][0]["ckpt_id"]
    for path in ("", "/rollback", "/fork", "/snapshot"):
        method = client.get if path in ("", "/snapshot") else client.post
        assert_problem(method(f"/sessions/{a}/checkpoints/ckpt_missing{path}"), 404)
        assert_problem(method(f"/sessions/{a}/checkpoints/{theirs}{path}"), 400, "invalid-input")
    assert_problem(client.get("/sessions/ses_missing/checkpoints"), 404)


def test_list_pages_back_with_before(lab: Lab, client: TestClient) -> None:
    sid = _finished(lab, client)
    for label in ("a", "b", "c"):
        assert client.post(f"/sessions/{sid}/checkpoints", json={"label": label}).status_code == 201
    full = client.get(f"/sessions/{sid}/checkpoints").json()["items"]
    first = client.get(f"/sessions/{sid}/checkpoints", params={"limit": 2}).json()
    assert [c["ckpt_id"] for c in first["items"]] == [c["ckpt_id"] for c in full[:2]]
    cursor = first["items"][-1]["ckpt_id"]
    older = client.get(f"/sessions/{sid}/checkpoints", params={"before": cursor}).json()
    assert [c["ckpt_id"] for c in older["items"]] == [c["ckpt_id"] for c in full[2:]]
    assert older["total"] == len(full) - 2
    bad = client.get(f"/sessions/{sid}/checkpoints", params={"before": "no spaces allowed"})
    assert bad.status_code in (400, 422)

"""The issue's snippet, expiry (410) and an invalid stored state (422) against a real
``agcore-lab serve`` process."""

from __future__ import annotations

import json
import sqlite3
import time

import httpx

from tests.integration.serve.conftest import TOKEN, Served


def test_the_acceptance_snippet_as_written(served: Served) -> None:
    h = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.base_url, headers=h) as c:
        sid = c.post("/sessions", json={"agent": "bank"}).json()["session_id"]
        turn = c.post(f"/sessions/{sid}/turns", json={"text": "send 100 to u2"}).json()
        call = turn["pending_tool_call"]  # status "PENDING_APPROVAL"
        url = f"/sessions/{sid}/runs/{call['run_id']}/interrupts/{call['interrupt_id']}/resume"
        assert c.post(url, json={"decision": "approve"}).json()["reply"] == "done"
        again = c.post(url, json={"decision": "approve"})
        assert again.status_code == 409
        assert again.headers["content-type"].startswith("application/problem+json")
    assert call["status"] == "PENDING_APPROVAL"
    assert served.tool_runs() == ["u2 100"]
    # The state is in the file the command named: another reader sees the executed call.
    with sqlite3.connect(served.db) as raw:
        rows = raw.execute("SELECT status, result_json FROM pending_calls").fetchall()
    assert rows == [("EXECUTED", '"sent 100 to u2"')]
    assert httpx.get(served.base_url + "/sessions").status_code == 401


def test_an_expired_call_is_410_and_stored_as_expired(served: Served) -> None:
    with served.client() as c:
        sid = c.post("/sessions", json={"agent": "quick"}).json()["session_id"]
        call = c.post(f"/sessions/{sid}/turns", json={"text": "send 100 to u4"}).json()[
            "pending_tool_call"
        ]
        base = f"/sessions/{sid}/runs/{call['run_id']}/interrupts/{call['interrupt_id']}"
        time.sleep(0.7)
        gone = c.post(base + "/resume", json={"decision": "approve"})
        assert gone.status_code == 410
        assert gone.headers["content-type"].startswith("application/problem+json")
        assert gone.json()["type"].endswith("/gone") and "expired" in gone.json()["detail"]
        assert c.get(base).json()["call"]["status"] == "EXPIRED"
        assert c.post(base + "/resume", json={"decision": "reject"}).status_code == 410
    with sqlite3.connect(served.db) as raw:
        assert raw.execute("SELECT status FROM pending_calls").fetchall() == [("EXPIRED",)]
    assert served.tool_runs() == []


def test_an_invalid_stored_state_is_422_and_the_server_keeps_serving(served: Served) -> None:
    with served.client() as c:
        sid = c.post("/sessions", json={"agent": "bank"}).json()["session_id"]
        call = c.post(f"/sessions/{sid}/turns", json={"text": "send 100 to u5"}).json()[
            "pending_tool_call"
        ]
        with sqlite3.connect(served.db) as raw:  # another program breaks the stored call
            raw.execute("UPDATE pending_calls SET status = 'MAYBE'")
        url = f"/sessions/{sid}/runs/{call['run_id']}/interrupts/{call['interrupt_id']}/resume"
        broken = c.post(url, json={"decision": "approve"})
        assert broken.status_code == 422
        assert broken.headers["content-type"].startswith("application/problem+json")
        assert broken.json()["type"].endswith("/corrupt-record")
        assert "status" in broken.json()["detail"]
        assert c.get("/health").json() == {"status": "ok"}
        assert c.post("/sessions", json={"agent": "bank"}).status_code == 201
    with sqlite3.connect(served.db) as raw:
        assert raw.execute("SELECT status FROM pending_calls").fetchall() == [("MAYBE",)]
    assert served.tool_runs() == []


def test_a_streamed_turn_from_the_real_server(served: Served) -> None:
    with served.client() as c:
        sid = c.post("/sessions", json={"agent": "bank"}).json()["session_id"]
        events = []
        with c.stream(
            "POST",
            f"/sessions/{sid}/turns",
            json={"text": "send 100 to u6"},
            headers={"Accept": "text/event-stream"},
        ) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    events.append(line.removeprefix("event: "))
                elif line.startswith("data: ") and events[-1] == "turn_done":
                    done = json.loads(line.removeprefix("data: "))
        assert events[0] == "tool_call_delta" and events[-1] == "turn_done"
        call = done["result"]["pending_tool_call"]
        assert call["tool_args"] == {"to": "u6", "amount": 100}
        url = f"/sessions/{sid}/runs/{call['run_id']}/interrupts/{call['interrupt_id']}/resume"
        assert c.post(url, json={"decision": "approve"}).json()["reply"] == "done"
    assert served.tool_runs() == ["u6 100"]

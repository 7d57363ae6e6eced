"""16 client processes resume one call at the same moment over HTTP, 30 rounds: each round
exactly one 200 and fifteen 409 problem documents, and the tool body runs exactly once."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.integration.serve.conftest import TOKEN, Served

CLIENTS = 16
ROUNDS = 30
HERE = Path(__file__).parent


@pytest.fixture
def race_clients(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(HERE))  # spawned children import the module by name
    import _race_clients

    return _race_clients


@pytest.mark.slow
def test_sixteen_processes_resume_one_call_thirty_times(served: Served, race_clients: Any) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(CLIENTS), ctx.Queue()
    inboxes = [ctx.Queue() for _ in range(CLIENTS)]
    processes = [
        ctx.Process(
            target=race_clients.resume_rounds,
            args=(served.base_url, TOKEN, n, inboxes[n], barrier, out),
            daemon=True,
        )
        for n in range(CLIENTS)
    ]
    for process in processes:
        process.start()
    try:
        with served.client() as c:
            for round_no in range(ROUNDS):
                sid = c.post("/sessions", json={"agent": "bank"}).json()["session_id"]
                turn = c.post(f"/sessions/{sid}/turns", json={"text": f"send 100 to r{round_no}"})
                call = turn.json()["pending_tool_call"]
                url = (
                    f"/sessions/{sid}/runs/{call['run_id']}/interrupts/"
                    f"{call['interrupt_id']}/resume"
                )
                for inbox in inboxes:
                    inbox.put((round_no, url))
                reports = [out.get(timeout=60) for _ in range(CLIENTS)]
                assert {r[0] for r in reports} == {round_no}
                statuses = Counter(r[2] for r in reports)
                assert statuses == {200: 1, 409: CLIENTS - 1}, (round_no, reports)
                for _, _, status, content_type in reports:
                    expected = "application/json" if status == 200 else "application/problem+json"
                    assert content_type.startswith(expected)
                ran = [line for line in served.tool_runs() if line.split()[0] == f"r{round_no}"]
                assert ran == [f"r{round_no} 100"], (round_no, ran)
                stored = c.get(url.removesuffix("/resume")).json()["call"]
                assert (
                    stored["status"] == "EXECUTED"
                    and stored["result"] == f"sent 100 to r{round_no}"
                )
        assert len(served.tool_runs()) == ROUNDS
    finally:
        for inbox in inboxes:
            inbox.put(None)
        for process in processes:
            process.join(20)
            if process.is_alive():
                process.terminate()

"""Separate processes race to resume the same interrupt on one SQLite file.

Each round makes a fresh pending call; ``PROCESSES`` spawned workers (each its own manager
and connection, recovering the session from the file as a restarted kernel would) pass a
barrier together and resume it. Exactly one wins, the others get a 409 conflict, and the
tool body — which appends a line to a file — runs exactly once (or not at all when the
winner rejected). The stored session ends in the winner's state.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import AgentSession, SessionManager, SqliteStore, ToolMessage, open_store

HERE = Path(__file__).parent
PROCESSES = 8
ROUNDS = 25


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Any:
    # Spawned children inherit sys.path, so they can import the worker module by name.
    monkeypatch.syspath_prepend(str(HERE))
    import _approval_workers

    return _approval_workers


def _check_round(
    number: int, reports: list[tuple[Any, ...]], log: list[str], rejecting: bool
) -> str:
    errors = [r[3] for r in reports if r[2] == "error"]
    assert not errors, errors[0]
    outcomes = Counter(r[2] for r in reports)
    assert outcomes == {"won": 1, "conflict": PROCESSES - 1}, (number, outcomes)
    assert {r[3] for r in reports if r[2] == "conflict"} == {409}
    (winner,) = [r for r in reports if r[2] == "won"]
    kind, reply = winner[3]
    assert reply == "done"
    ran = sum(1 for line in log if line.split()[0] == f"round-{number}")
    assert ran == (1 if kind == "approve" else 0), (number, kind, ran)
    assert rejecting or kind == "approve"
    return str(kind)


def _check_stored(store: SqliteStore, agent: Any, sid: str, kind: str) -> None:
    records = store.list_pending(sid, include_resolved=True)
    status = "EXECUTED" if kind == "approve" else "REJECTED"
    assert [r.status for r in records] == [status]
    messages = AgentSession.load(sid, agent, store=store).messages
    assert messages[-1].text == "done"
    answers = [m for m in messages if isinstance(m, ToolMessage)]
    assert len(answers) == 1 and answers[0].is_error == (kind == "reject")


@pytest.fixture(params=["sqlite", "postgresql"])
def race_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the race runs: a SQLite file, or a fresh schema on the PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "race.db")
    url: str = request.getfixturevalue("postgres_url")
    return f"{url}?schema=race_{tmp_path.name[-8:].replace('-', '_').lower()}"


def test_processes_racing_to_resume_one_interrupt(
    tmp_path: Path, workers: Any, race_store: str
) -> None:
    path, log_path = race_store, tmp_path / "tool-runs.log"
    log_path.touch()
    agent = workers.make_agent(str(log_path))
    manager = SessionManager(open_store(path), agents=[agent])
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(PROCESSES), ctx.Queue()
    inboxes = [ctx.Queue() for _ in range(PROCESSES)]
    processes = [
        ctx.Process(
            target=workers.race_resumes,
            args=(path, str(log_path), n, inboxes[n], barrier, out),
            daemon=True,
        )
        for n in range(PROCESSES)
    ]
    started = time.monotonic()
    for process in processes:
        process.start()
    try:
        winners: Counter[int] = Counter()
        decisions: Counter[str] = Counter()
        for number in range(ROUNDS):
            sid = manager.create_sync(agent)
            result = manager.submit_turn_sync(sid, f"round-{number}")
            call = result.pending_tool_call
            assert result.status == "interrupted" and call is not None
            # Every third round, half the workers reject: still exactly one decision wins.
            rejecting = number % 3 == 2
            for n, inbox in enumerate(inboxes):
                inbox.put((number, sid, call.run_id, call.interrupt_id, rejecting and n % 2 == 1))
            reports = [out.get(timeout=60) for _ in range(PROCESSES)]
            assert {r[0] for r in reports} == {number}
            kind = _check_round(number, reports, log_path.read_text().splitlines(), rejecting)
            _check_stored(manager.store, agent, sid, kind)  # type: ignore[arg-type]
            winners[next(r[1] for r in reports if r[2] == "won")] += 1
            decisions[kind] += 1
    finally:
        for inbox in inboxes:
            inbox.put(None)
        for process in processes:
            process.join(timeout=60)
    assert all(p.exitcode == 0 for p in processes)
    runs = log_path.read_text().splitlines()
    assert len(runs) == decisions["approve"]
    assert len({line.split()[0] for line in runs}) == len(runs)  # never twice in one round
    assert manager.pending_calls() == []
    manager.store.close()
    elapsed = time.monotonic() - started
    print(
        f"\napproval race: {ROUNDS} rounds x {PROCESSES} processes in {elapsed:.1f}s; "
        f"winners by worker {dict(sorted(winners.items()))}; decisions {dict(decisions)}"
    )
    assert elapsed < 60

"""Many processes on one PostgreSQL server: the row locks under real contention.

Real spawned processes, each with its own manager and connection pool, on the test server:

- 16 processes race to resume one pending call, 30 rounds: exactly one wins each round, the
  others get a 409, the tool body runs once (none when the winner rejected);
- 8 processes x 60 turns on 8 sessions, the writers rotating over the sessions: every turn is
  kept exactly once in the session it was sent to, chats stay valid, versions add up;
- a writer killed (``kill -9``) in the middle of a turn's commit: nothing of that transaction
  is stored, its locks are gone at once and another process carries on with the session.

(The 4-process race on one session is in tests/integration/test_shared_sessions.py.)
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    AssistantMessage,
    SessionManager,
    ToolMessage,
    open_store,
)
from agcore_lab.store.postgres import PostgresStore

HERE = Path(__file__).resolve().parents[1]
RACERS = 16
ROUNDS = 30
WRITERS = 8
TURNS = 60

pytestmark = pytest.mark.slow


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Any:
    # Spawned children inherit sys.path, so they can import the worker modules by name.
    monkeypatch.syspath_prepend(str(HERE))
    import _approval_workers
    import _pg_workers

    return _approval_workers, _pg_workers


@pytest.fixture
def url(postgres_url: str) -> str:
    """A fresh schema on the test server."""
    return f"{postgres_url}?schema=procs_{uuid.uuid4().hex[:10]}"


def _assert_valid_chat(messages: list[Any]) -> None:
    """Every tool call is answered by a tool message before the next user message."""
    waiting: set[str] = set()
    for message in messages:
        if message.role == "user":
            assert not waiting, f"unanswered tool calls {waiting}"
        if isinstance(message, AssistantMessage):
            waiting |= {call.id for call in message.tool_calls}
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in waiting, "a tool answer to no call"
            waiting.discard(message.tool_call_id)
    assert not waiting, f"unanswered tool calls {waiting}"


def test_sixteen_processes_racing_one_resume_thirty_rounds(
    tmp_path: Path, workers: Any, url: str
) -> None:
    approval, _ = workers
    log_path = tmp_path / "tool-runs.log"
    log_path.touch()
    agent = approval.make_agent(str(log_path))
    manager = SessionManager(open_store(url), agents=[agent], watch_interval=None)
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(RACERS), ctx.Queue()
    inboxes = [ctx.Queue() for _ in range(RACERS)]
    processes = [
        ctx.Process(
            target=approval.race_resumes,
            args=(url, str(log_path), n, inboxes[n], barrier, out),
            daemon=True,
        )
        for n in range(RACERS)
    ]
    for process in processes:
        process.start()
    decisions: Counter[str] = Counter()
    try:
        for number in range(ROUNDS):
            sid = manager.create_sync(agent)
            call = manager.submit_turn_sync(sid, f"round-{number}").pending_tool_call
            assert call is not None
            rejecting = number % 3 == 2  # half the racers reject: still one decision wins
            for n, inbox in enumerate(inboxes):
                inbox.put((number, sid, call.run_id, call.interrupt_id, rejecting and n % 2 == 1))
            reports = [out.get(timeout=120) for _ in range(RACERS)]
            errors = [r[3] for r in reports if r[2] == "error"]
            assert not errors, errors[0]
            outcomes = Counter(r[2] for r in reports)
            assert outcomes == {"won": 1, "conflict": RACERS - 1}, (number, outcomes)
            assert {r[3] for r in reports if r[2] == "conflict"} == {409}
            ((kind, reply),) = [r[3] for r in reports if r[2] == "won"]
            assert reply == "done"
            runs = [line for line in log_path.read_text().splitlines()
                    if line.split()[0] == f"round-{number}"]  # fmt: skip
            assert len(runs) == (1 if kind == "approve" else 0), (number, kind, runs)
            stored = manager.store.list_pending(sid, include_resolved=True)
            assert [c.status for c in stored] == ["EXECUTED" if kind == "approve" else "REJECTED"]
            decisions[kind] += 1
    finally:
        for inbox in inboxes:
            inbox.put(None)
        for process in processes:
            process.join(timeout=60)
    assert all(p.exitcode == 0 for p in processes)
    assert decisions["approve"] == len(log_path.read_text().splitlines()) >= ROUNDS // 2
    manager.store.close()  # type: ignore[attr-defined]


def _version_step(url: str, agent: Agent, text: str) -> int:
    """How much one turn with ``text`` moves a fresh session's version (one writer)."""
    manager = SessionManager(open_store(url), agents=[agent], watch_interval=None)
    sid = manager.create_sync(agent)
    before = manager.store.session_version(sid)
    manager.submit_turn_sync(sid, text)
    after = manager.store.session_version(sid)
    manager.store.close()  # type: ignore[attr-defined]
    assert before is not None and after is not None
    return after - before


def test_eight_processes_sixty_turns_each_on_eight_sessions(
    tmp_path: Path, workers: Any, url: str
) -> None:
    _, pg = workers
    asked = tmp_path / "asked.txt"
    shared = pytest.importorskip("_shared_workers")
    agent = shared.logging_agent(str(tmp_path / "calibration.txt"))
    plain_step, tool_step = _version_step(url, agent, "x"), _version_step(url, agent, "x+tool")
    manager = SessionManager(open_store(url), agents=[agent], watch_interval=None)
    sids = [manager.create_sync(agent) for _ in range(WRITERS)]
    base = {sid: manager.store.session_version(sid) for sid in sids}
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=pg.rotate_turns, args=(url, sids, w, TURNS, str(asked), start, out))
        for w in range(WRITERS)
    ]
    for proc in procs:
        proc.start()
    start.set()
    results, done = [], 0
    try:
        while done < WRITERS:
            worker, sid, text, outcome = out.get(timeout=240)
            if outcome == "done":
                done += 1
                continue
            assert text is not None, outcome  # a traceback
            results.append((sid, text, outcome))
    finally:
        for proc in procs:
            proc.join(60)
    assert [r for r in results if r[2] != "ok"] == []  # every writer waited its turn
    assert len(results) == WRITERS * TURNS
    assert Counter(asked.read_text().split()) == Counter(text for _, text, _ in results)
    reader = open_store(url)
    for sid in sids:
        sent = [text for s, text, _ in results if s == sid]
        session = AgentSession.load(sid, Agent(name="echo"), store=reader)
        kept = [m.text for m in session.messages if m.role == "user"]
        assert Counter(kept) == Counter(sent)  # every turn kept exactly once, here
        _assert_valid_chat(session.messages)
        tools = sum(text.endswith("+tool") for text in sent)
        expected = base[sid] + (len(sent) - tools) * plain_step + tools * tool_step  # type: ignore[operator]
        assert session.version == reader.session_version(sid) == expected
        assert session.turn_index == len(sent)
        # One checkpoint per turn (and the start); a manager that recovered the session while
        # another writer was between its commit and its checkpoint adds a "recovered" one.
        ckpts = reader.list_checkpoints(sid)
        assert ckpts[0].turn_index == len(sent)
        assert sorted({c.turn_index for c in ckpts}) == list(range(len(sent) + 1))
        assert len([c for c in ckpts if c.label != "recovered"]) == len(sent) + 1
    reader.close()  # type: ignore[attr-defined]
    manager.store.close()  # type: ignore[attr-defined]


def _row_is_locked(store: PostgresStore, session_id: str) -> bool:
    import psycopg

    with psycopg.connect(store.url, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{store.schema}"')
        try:
            with conn.transaction():
                conn.execute(
                    "SELECT 1 FROM sessions WHERE session_id = %s FOR UPDATE NOWAIT",
                    (session_id,),
                )
        except psycopg.errors.LockNotAvailable:
            return True
    return False


def test_a_writer_killed_mid_commit_leaves_nothing_half_written(
    tmp_path: Path, workers: Any, url: str
) -> None:
    _, pg = workers
    shared = pytest.importorskip("_shared_workers")
    asked, marker = tmp_path / "asked.txt", tmp_path / "in-commit"
    manager = shared.manager_for(url, shared.logging_agent(str(asked)))
    sid = manager.create_sync(manager.agents["echo"])
    manager.submit_turn_sync(sid, "before")
    store: PostgresStore = manager.store
    version, seq = store.session_version(sid), store.latest_change()
    ckpts = len(store.list_checkpoints(sid))

    def count(sql: str) -> int:
        return int(store.read_dataframe(sql, (sid,)).iloc[0, 0])

    messages = count("SELECT count(*) FROM messages WHERE session_id = ?")
    ctx = multiprocessing.get_context("spawn")
    victim = ctx.Process(
        target=pg.die_mid_commit, args=(url, sid, str(marker), str(asked)), daemon=True
    )
    victim.start()
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert marker.exists(), "the writer never reached its commit"
    # Mid-transaction: the session row is locked, the new rows are invisible to others.
    assert _row_is_locked(store, sid)
    assert count("SELECT count(*) FROM messages WHERE session_id = ?") == messages
    os.kill(victim.pid, signal.SIGKILL)  # type: ignore[arg-type]
    victim.join(10)
    assert victim.exitcode == -signal.SIGKILL
    # The server rolls the dead writer's transaction back as soon as its connection drops.
    deadline = time.monotonic() + 5
    while _row_is_locked(store, sid):
        assert time.monotonic() < deadline, "the dead writer's row lock was never released"
        time.sleep(0.05)
    assert store.session_version(sid) == version
    assert store.latest_change() == seq
    assert len(store.list_checkpoints(sid)) == ckpts
    assert count("SELECT count(*) FROM messages WHERE session_id = ?") == messages
    assert count("SELECT count(*) FROM messages WHERE content LIKE '%doomed%' AND "
                 "session_id = ?") == 0  # fmt: skip
    # Readable and writable by others: a new manager (another kernel) takes the next turn as
    # soon as the dead writer's turn lease runs out.
    other = shared.manager_for(url, shared.logging_agent(str(asked)))
    started = time.monotonic()
    other.submit_turn_sync(sid, "after", wait=30)
    assert time.monotonic() - started < 10
    final = AgentSession.load(sid, Agent(name="echo"), store=store)
    assert [m.text for m in final.messages if m.role == "user"] == ["before", "after"]
    assert final.turn_index == 2
    _assert_valid_chat(final.messages)
    other.store.close()
    store.close()

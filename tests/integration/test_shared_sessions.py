"""One truth for shared sessions: versions, turn leases and refresh on a real SQLite file.

Several store objects on one file stand in for several kernels; the multi-process tests run
real processes.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    AssistantMessage,
    RuntimeBundle,
    ScriptedModel,
    SessionBusyError,
    SessionManager,
    SqliteStore,
    StaleSessionError,
    ToolMessage,
    open_store,
)

HERE = Path(__file__).parent


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(HERE))
    import _shared_workers

    return _shared_workers


def _users(session: AgentSession) -> list[str]:
    return [m.text for m in session.messages if m.role == "user"]


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


def test_two_kernels_taking_turns_both_land(tmp_path: Path) -> None:
    # The example of the issue: it used to keep only B's turn, silently.
    path = tmp_path / "lab.db"
    a = AgentSession(Agent(name="echo"), store=SqliteStore(path))  # kernel 1
    b = AgentSession.load(a.session_id, Agent(name="echo"), store=SqliteStore(path))  # kernel 2
    a.submit_turn_sync("from A")
    b.submit_turn_sync("from B")  # B sees A's turn first, then adds its own
    c = AgentSession.load(a.session_id, Agent(name="echo"), store=SqliteStore(path))
    assert c.turn_index == 2
    assert _users(c) == ["from A", "from B"]
    assert _users(b) == ["from A", "from B"]
    assert a.is_stale() and not b.is_stale()
    assert a.refresh_sync() is True and _users(a) == ["from A", "from B"]
    assert a.refresh_sync() is False  # nothing new


def test_a_write_based_on_an_old_version_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    a = AgentSession(Agent(name="echo"), store=SqliteStore(path))
    b = AgentSession.load(a.session_id, Agent(name="echo"), store=SqliteStore(path))
    a.submit_turn_sync("moves it on")
    stored = a.store.get_session(a.session_id)
    with pytest.raises(StaleSessionError) as info:
        b.fork_slot_sync("what-if")
    problem = info.value.to_problem()
    assert problem["status"] == 409
    assert (problem["expected_version"], problem["stored_version"]) == (0, 1)
    assert problem["session_id"] == a.session_id
    assert "refresh()" in problem["detail"]
    assert a.store.get_session(a.session_id) == stored
    assert [s.slot_id for s in a.store.load_slots(a.session_id)] == ["main"]
    assert "what-if" not in b.slots  # the live object did not change either
    b.refresh_sync()
    b.fork_slot_sync("what-if")
    assert [s.slot_id for s in a.store.load_slots(a.session_id)] == ["main", "what-if"]


def test_a_stale_rollback_and_destroy_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    one = SessionManager(SqliteStore(path), agents=[Agent(name="echo")], watch_interval=None)
    two = SessionManager(SqliteStore(path), agents=[Agent(name="echo")], watch_interval=None)
    sid = one.create_sync(one.agents["echo"])
    one.submit_turn_sync(sid, "first")
    two.recover_sync(sid)
    one.submit_turn_sync(sid, "second")
    oldest = two.checkpointer.list_checkpoints_sync(sid)[-1]
    with pytest.raises(StaleSessionError):
        two.checkpointer.rollback_sync(sid, oldest.ckpt_id)
    with pytest.raises(StaleSessionError):
        two.destroy_sync(sid)
    assert one.store.get_session(sid).turn_index == 2  # type: ignore[union-attr]
    assert two.refresh_sync(sid) is True
    two.checkpointer.rollback_sync(sid, oldest.ckpt_id)
    assert two.get_sync(sid).turn_index == 0


def test_a_turn_while_another_writer_holds_the_lease_never_reaches_the_model(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lab.db"
    model = ScriptedModel()
    session = AgentSession(Agent(name="echo", model=model), store=SqliteStore(path))
    other = SqliteStore(path)  # another kernel, in the middle of a turn
    other.acquire_lease(session.session_id, "elsewhere:1:abc", ttl=30)
    with pytest.raises(SessionBusyError) as info:
        session.submit_turn_sync("refused")
    assert info.value.to_problem()["status"] == 409
    assert "elsewhere:1:abc" in str(info.value) and "wait" in str(info.value)
    assert model.calls == 0 and session.turn_index == 0
    assert session.store.get_session(session.session_id).turn_index == 0  # type: ignore[union-attr]

    # With wait=, the turn runs as soon as the other writer is done.
    threading.Timer(0.3, other.release_lease, args=(session.session_id, "elsewhere:1:abc")).start()
    started = time.monotonic()
    assert session.submit_turn_sync("waited", wait=5).turn_index == 1
    assert time.monotonic() - started >= 0.25
    assert model.calls == 1


def test_a_crashed_holders_lease_runs_out(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    bundle = RuntimeBundle(store=SqliteStore(path), lease_seconds=0.5)
    session = AgentSession(Agent(name="echo"), bundle=bundle)
    SqliteStore(path).acquire_lease(session.session_id, "dead:1:abc", ttl=0.5)
    with pytest.raises(SessionBusyError):
        session.submit_turn_sync("too early")
    assert session.submit_turn_sync("after it ran out", wait=2).turn_index == 1


def test_a_long_turn_keeps_its_lease_alive(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    bundle = RuntimeBundle(store=SqliteStore(path), lease_seconds=0.3)
    slow = AgentSession(Agent(name="echo", model=ScriptedModel(latency=1.0)), bundle=bundle)
    other = AgentSession.load(slow.session_id, Agent(name="echo"), store=SqliteStore(path))
    thread = threading.Thread(target=slow.submit_turn_sync, args=("slow turn",))
    thread.start()
    time.sleep(0.6)  # twice the lease's lifetime: only renewals keep it
    with pytest.raises(SessionBusyError):
        other.submit_turn_sync("while the slow one runs")
    thread.join()
    assert other.submit_turn_sync("after it", wait=1).turn_index == 2
    assert _users(other) == ["slow turn", "after it"]


def test_memory_writes_of_two_kernels_both_survive(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    a = AgentSession(Agent(name="echo"), store=SqliteStore(path))
    b = AgentSession.load(a.session_id, Agent(name="echo"), store=SqliteStore(path))
    a.session_memory.set("from_a", 1)
    b.session_memory.set("from_b", 2)
    assert a.session_memory.to_dict() == {"from_a": 1, "from_b": 2}
    assert b.session_memory.to_dict() == {"from_a": 1, "from_b": 2}
    a.session_memory.set("same", "A")
    b.session_memory.set("same", "B")  # the same key: the last writer wins
    assert a.session_memory.get("same") == "B" and b.session_memory.get("same") == "B"
    assert a.session_memory.get_entry("same").version == 4  # type: ignore[union-attr]


def _collect(out: Any, workers: int, timeout: float = 120) -> list[tuple[int, str, str]]:
    results, done = [], 0
    while done < workers:
        worker, text, outcome = out.get(timeout=timeout)
        if outcome == "done":
            done += 1
            continue
        assert text is not None, outcome  # a traceback
        results.append((worker, text, outcome))
    return results


def _run_workers(
    workers: Any, path: Path | str, sid: str, count: int, turns: int, wait: float, tmp_path: Path
) -> tuple[list[tuple[int, str, str]], list[str]]:
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    asked = tmp_path / "asked.txt"
    procs = [
        ctx.Process(
            target=workers.take_turns,
            args=(str(path), sid, w, turns, wait, str(asked), start, out),
        )
        for w in range(count)
    ]
    for proc in procs:
        proc.start()
    time.sleep(0.5)
    start.set()
    try:
        results = _collect(out, count)
    finally:
        for proc in procs:
            proc.join(60)
    return results, asked.read_text().split() if asked.exists() else []


def _check_outcomes(
    path: Path | str, sid: str, results: list[tuple[int, str, str]], asked: list[str]
) -> AgentSession:
    if isinstance(path, Path):
        with sqlite3.connect(path) as raw:
            assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    final = AgentSession.load(sid, Agent(name="echo"), store=open_store(path))
    kept = _users(final)
    landed = [text for _, text, outcome in results if outcome == "ok"]
    refused = [text for _, text, outcome in results if outcome != "ok"]
    # Every attempted turn is in the history exactly once, or was refused before any model
    # call: nothing is lost silently.
    assert Counter(kept) == Counter(landed)
    assert Counter(asked) == Counter(landed)
    assert not set(refused) & set(asked)
    assert final.turn_index == len(landed)
    _assert_valid_chat(final.messages)
    return final


@pytest.mark.slow
def test_four_processes_racing_on_one_session_lose_nothing(tmp_path: Path, workers: Any) -> None:
    path = tmp_path / "lab.db"
    manager = SessionManager(SqliteStore(path), agents=[Agent(name="echo")], watch_interval=None)
    sid = manager.create_sync(manager.agents["echo"])
    results, asked = _run_workers(workers, path, sid, 4, 60, 0.0, tmp_path)
    assert len(results) == 240
    _check_outcomes(path, sid, results, asked)
    outcomes = Counter(outcome for _, _, outcome in results)
    assert outcomes["ok"] > 0 and set(outcomes) <= {"ok", "busy", "stale"}


@pytest.mark.slow
def test_four_processes_racing_on_one_postgres_session_lose_nothing(
    tmp_path: Path, workers: Any, postgres_url: str
) -> None:
    url = f"{postgres_url}?schema=race_{tmp_path.name[-8:].replace('-', '_').lower()}"
    manager = SessionManager(open_store(url), agents=[Agent(name="echo")], watch_interval=None)
    sid = manager.create_sync(manager.agents["echo"])
    results, asked = _run_workers(workers, url, sid, 4, 60, 0.0, tmp_path)
    assert len(results) == 240
    final = _check_outcomes(url, sid, results, asked)
    final.store.close()
    manager.store.close()


@pytest.mark.slow
def test_two_processes_that_wait_for_each_other_keep_every_turn(
    tmp_path: Path, workers: Any
) -> None:
    path = tmp_path / "lab.db"
    manager = SessionManager(SqliteStore(path), agents=[Agent(name="echo")], watch_interval=None)
    sid = manager.create_sync(manager.agents["echo"])
    results, asked = _run_workers(workers, path, sid, 2, 30, 10.0, tmp_path)
    assert [outcome for _, _, outcome in results] == ["ok"] * 60
    final = _check_outcomes(path, sid, results, asked)
    assert final.turn_index == 60


def test_threads_with_their_own_managers_lose_nothing(tmp_path: Path, workers: Any) -> None:
    path = tmp_path / "lab.db"
    asked = tmp_path / "asked.txt"
    first = workers.manager_for(str(path), workers.logging_agent(str(asked)))
    sid = first.create_sync(first.agents["echo"])
    results: list[tuple[int, str, str]] = []
    lock = threading.Lock()

    def work(index: int, wait: float) -> None:
        manager = workers.manager_for(str(path), workers.logging_agent(str(asked)))
        manager.recover_sync(sid)
        for n in range(40):
            text = f"t{index}-{wait}-{n}" + ("+tool" if n % 7 == 0 else "")
            try:
                manager.submit_turn_sync(sid, text, wait=wait)
                outcome = "ok"
            except (SessionBusyError, StaleSessionError) as exc:
                outcome = type(exc).__name__
            with lock:
                results.append((index, text, outcome))

    for wait in (0.0, 5.0):
        threads = [threading.Thread(target=work, args=(i, wait)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    _check_outcomes(path, sid, results, asked.read_text().split())
    assert all(outcome == "ok" for _, text, outcome in results if "-5.0-" in text)


def test_changes_made_elsewhere_reach_the_listeners(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    watcher = SessionManager(SqliteStore(path), agents=[Agent(name="echo")], watch_interval=0.05)
    writer = SessionManager(SqliteStore(path), agents=[Agent(name="echo")], watch_interval=None)
    sid = writer.create_sync(writer.agents["echo"])
    live = watcher.recover_sync(sid)
    events: list[Any] = []
    unsubscribe = watcher.add_listener(events.append)

    def seen(kind: str) -> bool:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if any(e.kind == kind and e.remote for e in events):
                return True
            time.sleep(0.02)
        return False

    writer.submit_turn_sync(sid, "from the other kernel")
    assert seen("turn") and seen("checkpoint")
    assert live.turn_index == 1 and _users(live) == ["from the other kernel"]  # refreshed
    ckpt = writer.checkpointer.list_checkpoints_sync(sid)[-1].ckpt_id
    writer.checkpointer.rollback_sync(sid, ckpt)
    assert seen("rollback")
    child = writer.checkpointer.fork_sync(sid, ckpt)
    assert seen("fork")
    assert any(e.kind == "fork" and e.new_session_id == child for e in events)
    writer.destroy_sync(child)
    assert seen("destroyed")
    own = len(events)
    watcher.submit_turn_sync(sid, "my own turn")  # its own changes are not echoed as remote
    time.sleep(0.3)
    assert not any(e.remote and e.kind == "turn" for e in events[own:])
    unsubscribe()

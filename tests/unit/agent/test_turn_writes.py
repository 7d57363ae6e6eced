"""What a turn writes: its lease and its commit, and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from agcore_lab import Agent, AgentSession, ScriptedModel, SqliteStore
from agcore_lab.errors import SessionBusyError


def _count_writes(store: SqliteStore) -> list[str]:
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    return statements


def test_a_turn_is_two_write_transactions_and_leaves_the_lease_free(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    session = AgentSession(Agent(name="a", model=ScriptedModel(["one", "two"])), store=store)
    statements = _count_writes(store)
    session.submit_turn_sync("hi")
    begins = [s for s in statements if s.startswith("BEGIN IMMEDIATE")]
    # Taking the lease, then the commit that also gives it up: no write of its own for that.
    assert len(begins) == 2, statements
    assert any("lease_holder = NULL" in s for s in statements)
    row = store.connection.execute(
        "SELECT lease_holder, lease_expires_at, version FROM sessions"
    ).fetchone()
    assert row == (None, None, 1)
    # Another writer may take the session at once.
    assert SqliteStore(tmp_path / "s.db").acquire_lease(session.session_id, "x:1:y", ttl=5) == 1


def test_a_session_with_turn_end_hooks_releases_after_them(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    session = AgentSession(Agent(name="a", model=ScriptedModel(["one"])), store=store)
    seen: list[object] = []

    def hook(s: AgentSession, result: object) -> None:
        # The turn is committed and the lease is still held while hooks run.
        other = SqliteStore(tmp_path / "s.db")
        with pytest.raises(SessionBusyError):
            other.acquire_lease(s.session_id, "x:1:y", ttl=5)
        seen.append(result)

    session.add_turn_end_hook(hook)
    session.submit_turn_sync("hi")
    assert len(seen) == 1
    assert store.connection.execute("SELECT lease_holder FROM sessions").fetchone() == (None,)


def test_a_stale_commit_keeps_nothing_and_frees_the_lease(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    session = AgentSession(Agent(name="a", model=ScriptedModel(["one", "two"])), store=store)
    other = AgentSession.load(session.session_id, session.agent, store=SqliteStore(store.path))
    other.submit_turn_sync("first elsewhere")  # the store moves on to version 1
    session.version = 0  # a stale cache that did not see it

    async def stale_turn() -> None:
        # Skip the refresh a turn makes after taking its lease, so the commit is stale.
        async def no_refresh(stored: int | None = None) -> bool:
            return False

        session._areload_if_stale = no_refresh  # type: ignore[method-assign]
        await session.submit_turn("mine")

    from agcore_lab.aio import run_sync
    from agcore_lab.errors import StaleSessionError

    with pytest.raises(StaleSessionError):
        run_sync(stale_turn())
    stored = store.connection.execute("SELECT lease_holder, version FROM sessions").fetchone()
    assert stored == (None, 1)
    assert store.connection.execute("SELECT count(*) FROM messages").fetchone()[0] == 2


def test_a_failed_turn_leaves_the_history_and_earlier_requests_as_they_were(
    tmp_path: Path,
) -> None:
    from agcore_lab import RuntimeBundle
    from agcore_lab.errors import ModelError
    from agcore_lab.llm.call_record import ModelCall

    seen: list[ModelCall] = []
    calls = {"n": 0}

    def script(messages: object) -> str:
        calls["n"] += 1
        if calls["n"] == 3:
            raise ModelError("the model is down")
        return f"answer {calls['n']}"

    store = SqliteStore(tmp_path / "s.db")
    session = AgentSession(
        Agent(name="a", system_prompt="be kind", model=ScriptedModel(script)),
        bundle=RuntimeBundle(store=store, call_listeners=[seen.append]),
    )
    session.submit_turn_sync("one")
    session.submit_turn_sync("two")
    before = list(session.messages)
    first_request = list(seen[0].request_messages)
    with pytest.raises(ModelError):
        session.submit_turn_sync("three")
    assert session.messages == before  # the failed turn's user message is gone again
    session.submit_turn_sync("four")
    assert [m.text for m in session.messages] == [
        "one",
        "answer 1",
        "two",
        "answer 2",
        "four",
        "answer 4",
    ]
    # Requests recorded earlier still hold what was sent then (they are not copies of the
    # history, and the history list is never cut in place).
    assert list(seen[0].request_messages) == first_request
    assert [m.text for m in seen[2].request_messages] == [
        "be kind",
        *[m.text for m in before],
        "three",
    ]
    assert [m.text for m in seen[-1].request_messages][-1] == "four"
    stored = store.list_calls(session.session_id)
    assert [c.status for c in stored] == ["ok", "ok", "error", "ok"]


def test_every_lease_has_a_holder_name_of_its_own() -> None:
    import os
    import socket

    from agcore_lab.agent.lease import new_holder

    holders = [new_holder() for _ in range(2000)]
    assert len(set(holders)) == len(holders)
    host, pid, token = holders[0].rsplit(":", 2)
    assert (host, pid) == (socket.gethostname(), str(os.getpid()))
    assert len(token) == 8 and int(token, 16) >= 0

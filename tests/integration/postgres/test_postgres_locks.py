"""PostgresStore's row locks, seen from outside: what waits for what on a real server.

- a writer holding one session's row lock does not hold up writers of other sessions, and a
  write of the locked session waits (then fails after the store's timeout, writing nothing);
- change-feed rows commit in ``seq`` order even when writers of different sessions overlap;
- two processes creating the same session id at once: one wins, the other gets a 409;
- memory writes of many writers to one session all land, with versions 1..n.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import agcore_lab.store.sqlite as sqlite_module
from agcore_lab import Agent, ConflictError, ScriptedModel, SessionManager, StorageError
from agcore_lab.store.base import SessionRecord
from agcore_lab.store.postgres import PostgresStore


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(postgres_url, schema="locks_" + uuid.uuid4().hex[:10], timeout=1.0)
    yield opened
    opened.drop_schema()
    opened.close()


def _raw(store: PostgresStore) -> Any:
    import psycopg

    conn = psycopg.connect(store.url)  # not autocommit: statements open a transaction
    conn.execute(f'SET search_path TO "{store.schema}"')
    return conn


def _manager(store: PostgresStore) -> SessionManager:
    agent = Agent(name="echo", model=ScriptedModel(lambda messages: "ok"))
    return SessionManager(store, agents=[agent], watch_interval=None)


def test_a_locked_session_holds_up_only_its_own_writers(store: PostgresStore) -> None:
    manager = _manager(store)
    locked, free = (manager.create_sync(manager.agents["echo"]) for _ in range(2))
    version = store.session_version(locked)
    raw = _raw(store)
    try:
        raw.execute("SELECT 1 FROM sessions WHERE session_id = %s FOR UPDATE", (locked,))
        started = time.monotonic()
        manager.submit_turn_sync(free, "hello")  # another session: no wait at all
        assert time.monotonic() - started < 0.9
        assert store.get_session(free).turn_index == 1  # type: ignore[union-attr]
        with pytest.raises(StorageError, match="held a lock"):
            store.acquire_lease(locked, "someone", ttl=5)
        assert time.monotonic() - started >= 1.0  # it waited the store's timeout
    finally:
        raw.rollback()
        raw.close()
    assert store.session_version(locked) == version
    assert store.get_session(locked).turn_index == 0  # type: ignore[union-attr]
    manager.submit_turn_sync(locked, "now")  # the lock is gone: the session is writable
    assert store.get_session(locked).turn_index == 1  # type: ignore[union-attr]


def test_change_rows_commit_in_seq_order_when_writers_overlap(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_manager, second_manager = _manager(store), _manager(store)
    first = first_manager.create_sync(first_manager.agents["echo"])
    second = second_manager.create_sync(second_manager.agents["echo"])
    start = store.latest_change()
    logged, release = threading.Event(), threading.Event()
    real_log_change = sqlite_module.log_change

    def log_change_then_wait(conn: Any, session_id: str, kind: str, *args: Any, **kw: Any) -> None:
        real_log_change(conn, session_id, kind, *args, **kw)
        if session_id == first and kind == "turn" and not logged.is_set():
            logged.set()
            assert release.wait(30)  # the first turn's commit waits here, its change row in

    monkeypatch.setattr(sqlite_module, "log_change", log_change_then_wait)
    threads = [
        threading.Thread(target=first_manager.submit_turn_sync, args=(first, "one")),
        threading.Thread(target=second_manager.submit_turn_sync, args=(second, "two")),
    ]
    threads[0].start()
    assert logged.wait(30)
    threads[1].start()
    time.sleep(0.5)
    # The second turn did its work beside the first, but its change row waits for the first
    # commit: a reader never sees a later seq before an earlier one.
    assert threads[1].is_alive()
    assert store.latest_change() == start
    assert store.get_session(second).turn_index == 0  # type: ignore[union-attr]
    release.set()
    for thread in threads:
        thread.join(30)
    changes = [c for c in store.changes_since(start) if c.kind == "turn"]
    assert [c.session_id for c in changes] == [first, second]
    seqs = [c.seq for c in store.changes_since(start)]
    assert seqs == sorted(seqs)


def test_two_writers_creating_one_session_id_at_once_one_gets_a_conflict(
    store: PostgresStore,
) -> None:
    record = SessionRecord(session_id="ses_same", agent_name="echo")
    raw = _raw(store)
    outcome: list[BaseException | None] = []
    try:
        # Another writer's insert of the same id, not committed yet.
        raw.execute(
            "INSERT INTO sessions (session_id, agent_name, created_at, updated_at, "
            "current_slot_id) VALUES ('ses_same', 'other', '2026-01-01T00:00:00+00:00', "
            "'2026-01-01T00:00:00+00:00', 'main')"
        )

        def create() -> None:
            try:
                store.create_session(record)
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=create)
        thread.start()
        time.sleep(0.3)
        assert thread.is_alive()  # waiting on the other insert
        raw.commit()
        thread.join(10)
    finally:
        raw.close()
    assert len(outcome) == 1 and isinstance(outcome[0], ConflictError)
    assert outcome[0].to_problem()["status"] == 409
    assert store.get_session("ses_same").agent_name == "other"  # type: ignore[union-attr]


def test_memory_writes_of_many_writers_to_one_session_all_land(postgres_url: str) -> None:
    schema = "mem_" + uuid.uuid4().hex[:10]
    stores = [PostgresStore(postgres_url, schema=schema) for _ in range(4)]
    errors: list[BaseException] = []

    def write(index: int) -> None:
        try:
            for n in range(25):
                stores[index].memory_set("ses_shared", f"k{index}-{n}", n, {})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    entries = stores[0].memory_entries("ses_shared")
    assert len(entries) == 100
    assert sorted(e.version for e in entries) == list(range(1, 101))
    assert stores[0].memory_version("ses_shared") == 100
    stores[0].drop_schema()
    for opened in stores:
        opened.close()

"""Group commit: commits asked for in one event-loop iteration share one transaction, and
each is still kept or refused alone (``SqliteStore.commit_many``, ``CommitGroup``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agcore_lab.errors import InvalidInputError, StaleSessionError
from agcore_lab.llm.messages import UserMessage
from agcore_lab.store._commit_group import grouped_commits
from agcore_lab.store.sqlite import SqliteStore
from agcore_lab.store.threaded import as_async
from agcore_lab.testing._support import chain_links, chain_messages, session_record


def _store(tmp_path: Path, *sids: str) -> SqliteStore:
    store = SqliteStore(tmp_path / "g.db")
    for sid in sids:
        store.create_session(session_record(sid))
    return store


def _begins(store: SqliteStore) -> list[str]:
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    return statements


def test_commits_of_one_iteration_share_a_transaction_and_fail_alone(tmp_path: Path) -> None:
    store = _store(tmp_path, "a", "b", "c")
    store.commit(session_record("b", turn_index=1))  # b is at version 1 now
    adapter = as_async(store)
    message = UserMessage(content="from b, based on version 0")
    statements = _begins(store)

    async def together() -> list[object]:
        grouped_commits()  # as a dispatch's children do; the tasks below inherit it
        return await asyncio.gather(
            adapter.acommit(session_record("a", turn_index=1)),
            adapter.acommit(
                session_record("b", turn_index=9),
                messages=[message],
                links=chain_links([message], "n"),
            ),
            adapter.acommit(session_record("c", turn_index=1)),
            return_exceptions=True,
        )

    a, b, c = asyncio.run(together())
    store.connection.set_trace_callback(None)
    assert (a, c) == (1, 1)
    assert isinstance(b, StaleSessionError) and b.context["stored_version"] == 1
    assert sum(s.startswith("BEGIN IMMEDIATE") for s in statements) == 1
    # The refused one wrote nothing (not its message); the others are stored.
    assert chain_messages(store, "n0") == []
    record = store.get_session("b")
    assert record is not None and record.turn_index == 1 and record.version == 1
    assert [store.session_version(s) for s in ("a", "c")] == [1, 1]
    changes = [(ch.session_id, ch.kind) for ch in store.changes_since(0)]
    assert changes[-2:] == [("a", "turn"), ("c", "turn")]


def test_commit_many_returns_each_outcome_in_its_place(tmp_path: Path) -> None:
    store = _store(tmp_path, "a", "b")
    outcomes = store.commit_many(
        [
            (session_record("a", turn_index=1), {}),
            (session_record("b"), {"memory": [("k", {1, 2}, {})]}),  # not JSON
            (session_record("b", turn_index=2), {"memory": [("k", "v", {})]}),
        ]
    )
    assert outcomes[0] == 1 and outcomes[2] == 1
    assert isinstance(outcomes[1], InvalidInputError)
    assert [(e.key, e.value) for e in store.memory_entries("b")] == [("k", "v")]
    record = store.get_session("b")
    assert record is not None and record.turn_index == 2


def test_a_commit_whose_caller_was_cancelled_before_its_group_writes_nothing(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, "a", "b")
    adapter = as_async(store)

    async def cancelled_one() -> object:
        grouped_commits()
        kept = asyncio.ensure_future(adapter.acommit(session_record("a", turn_index=1)))
        dropped = asyncio.ensure_future(adapter.acommit(session_record("b", turn_index=1)))
        await asyncio.sleep(0)  # both are waiting for their group now
        dropped.cancel()
        with pytest.raises(asyncio.CancelledError):
            await dropped
        return await kept

    assert asyncio.run(cancelled_one()) == 1
    assert store.session_version("b") == 0
    assert [ch.session_id for ch in store.changes_since(0) if ch.kind == "turn"] == ["a"]


def test_a_commit_alone_is_written_as_before(tmp_path: Path) -> None:
    store = _store(tmp_path, "a")
    statements = _begins(store)
    assert asyncio.run(as_async(store).acommit(session_record("a", turn_index=1))) == 1
    assert not [s for s in statements if "SAVEPOINT" in s]
    with pytest.raises(StaleSessionError):
        asyncio.run(as_async(store).acommit(session_record("a", turn_index=2)))


def test_commits_of_tasks_that_did_not_ask_are_written_at_once(tmp_path: Path) -> None:
    # A lone session's turn does not wait a loop iteration for a group it would not get.
    store = _store(tmp_path, "a", "b")
    adapter = as_async(store)
    statements = _begins(store)

    async def apart() -> list[int]:
        return await asyncio.gather(
            adapter.acommit(session_record("a", turn_index=1)),
            adapter.acommit(session_record("b", turn_index=1)),
        )

    assert asyncio.run(apart()) == [1, 1]
    assert sum(s.startswith("BEGIN IMMEDIATE") for s in statements) == 2

"""``SqliteStore`` passes the store conformance suite, in memory and on a file."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import pytest

from agcore_lab.errors import StorageError
from agcore_lab.llm.messages import AssistantMessage, Message, UserMessage
from agcore_lab.store.base import LinkRecord, SessionRecord, Store
from agcore_lab.store.sqlite import SqliteStore
from agcore_lab.testing import (
    CONFORMANCE_CHECKS,
    ConformanceFailure,
    StoreConformance,
    run_store_conformance,
)


class TestSqliteMemoryStore(StoreConformance):
    def make_store(self) -> Store:
        return SqliteStore(":memory:")


class TestSqliteFileStore(StoreConformance):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path
        self.counter = itertools.count()

    def make_store(self) -> Store:
        return SqliteStore(self.directory / f"store-{next(self.counter)}.db")


def test_every_check_has_a_test_method() -> None:
    methods = {name.removeprefix("test_") for name in dir(TestSqliteMemoryStore)}
    assert set(CONFORMANCE_CHECKS) <= methods


def test_run_store_conformance_passes_for_sqlite() -> None:
    run_store_conformance(lambda: SqliteStore(":memory:"))


class _ForgetfulStore(SqliteStore):
    """A broken backend: it drops memory metadata."""

    def memory_set(self, session_id, key, value, metadata):  # type: ignore[no-untyped-def]
        return super().memory_set(session_id, key, value, {})


def test_run_store_conformance_names_failing_checks() -> None:
    with pytest.raises(ConformanceFailure) as info:
        run_store_conformance(lambda: _ForgetfulStore(":memory:"))
    assert "memory_set_get_delete" in str(info.value)
    assert "chain_round_trip" not in str(info.value)


def test_run_store_conformance_only_runs_named_checks() -> None:
    run_store_conformance(lambda: _ForgetfulStore(":memory:"), only=["chain_round_trip"])


def test_a_message_linked_twice_is_one_row() -> None:
    store = SqliteStore(":memory:")
    store.create_session(SessionRecord(session_id="s", agent_name="a"))
    message: Message = UserMessage(content="once")
    reply: Message = AssistantMessage(content="reply")
    first = LinkRecord(node_id="a0", parent_node_id=None, message_id=message.id, depth=0)
    store.commit(SessionRecord(session_id="s", agent_name="a"), messages=[message], links=[first])
    # Committed again, and linked from a second chain (as a fork or merge would).
    second = LinkRecord(node_id="b0", parent_node_id=None, message_id=message.id, depth=0)
    tail = LinkRecord(node_id="b1", parent_node_id="b0", message_id=reply.id, depth=1)
    store.commit(
        SessionRecord(session_id="s", agent_name="a", version=1),
        messages=[message, reply],
        links=[second, tail],
    )
    count = store.connection.execute(
        "SELECT count(*) FROM messages WHERE message_id = ?", (message.id,)
    ).fetchone()[0]
    assert count == 1
    assert [m.content for _, m in store.load_chain("b1")] == ["once", "reply"]


def test_a_failed_commit_wraps_the_driver_error() -> None:
    store = SqliteStore(":memory:")
    store.create_session(SessionRecord(session_id="s", agent_name="a"))
    message = UserMessage(content="x")
    link = LinkRecord(node_id="n", parent_node_id=None, message_id=message.id, depth=0)
    record = SessionRecord(session_id="s", agent_name="a")
    store.commit(record, messages=[message], links=[link])
    with pytest.raises(StorageError) as info:
        store.commit(record.model_copy(update={"version": 1}), links=[link])
    assert isinstance(info.value.__cause__, sqlite3.IntegrityError)
    assert info.value.context["path"] == ":memory:"

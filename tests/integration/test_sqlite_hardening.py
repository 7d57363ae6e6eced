"""Storage faults are named (disk full, read-only, not a database, corrupted rows), bad input
is refused before anything is written, and old files keep opening (hardening issue, defects 2,
6, 7, 8 and 10)."""

from __future__ import annotations

import hashlib
import math
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from agcore_lab import Agent, AgentSession, ScriptedModel, SessionManager, SqliteStore, ToolCall
from agcore_lab.errors import InvalidInputError, StorageError
from agcore_lab.llm.tools import Tool
from agcore_lab.store.migrations import MIGRATIONS

DATA = Path(__file__).resolve().parents[1] / "data"


def _agent() -> Agent:
    return Agent(name="a", model=ScriptedModel(["ok"] * 20))


def test_disk_full_is_a_storage_error_that_says_so_and_the_store_recovers(
    tmp_path: Path,
) -> None:
    path = tmp_path / "small.db"
    store = SqliteStore(path)
    session = AgentSession(_agent(), store=store)
    session.session_memory.set("small", "fits")
    conn = store.connection
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + 2}")
    with pytest.raises(StorageError) as caught:
        session.session_memory.set("big", "x" * 200_000)
    message = str(caught.value)
    assert "disk is full" in message and str(path) in message
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    assert "database or disk is full" in str(caught.value.__cause__)
    # The live object and the store agree: nothing of the failed write.
    assert session.session_memory.get("big") is None
    assert [e.key for e in store.memory_entries(session.session_id)] == ["small"]
    # Space is back: the same store keeps working.
    conn.execute("PRAGMA max_page_count = 1073741823")
    session.session_memory.set("big", "x" * 200_000)
    assert len(SqliteStore(path).memory_entries(session.session_id)) == 2


def _bank() -> Agent:
    def transfer(to: str, amount: int) -> str:
        """Send money."""
        return f"sent {amount} to {to}"

    tool = Tool.from_function(transfer, requires_approval=True, approval_timeout=0.05)
    model = ScriptedModel([ToolCall(name="transfer", arguments={"to": "u2", "amount": 5}), "ok"])
    return Agent(name="bank", model=model, tools=[tool])


def _expired_interrupt(path: Path) -> tuple[str, str]:
    writer = SqliteStore(path)
    manager = SessionManager(writer)
    sid = manager.create_sync(_bank())
    result = manager.submit_turn_sync(sid, "pay u2")
    call = result.pending_tool_call
    assert call is not None
    time.sleep(0.1)
    writer.close()
    return sid, call.interrupt_id


def _digest(path: Path) -> tuple[str, int]:
    """The file's hash and the size of its write-ahead log (what a write would change)."""
    wal = path.with_name(path.name + "-wal")
    return hashlib.sha256(path.read_bytes()).hexdigest(), wal.stat().st_size if wal.exists() else 0


def test_a_read_only_file_loads_and_reports_overdue_calls_as_expired_without_writing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ro.db"
    sid, interrupt_id = _expired_interrupt(path)
    before = _digest(path)
    store = SqliteStore(path, read_only=True)
    assert store.read_only
    manager = SessionManager(store)
    session = manager.recover_sync(sid, _bank())
    assert session.session_id == sid
    assert AgentSession.load(sid, _bank(), store=store).session_id == sid
    assert store.list_pending(sid) == []
    (listed,) = store.list_pending(sid, include_resolved=True)
    assert listed.status == "EXPIRED" and listed.interrupt_id == interrupt_id
    got = store.get_pending(interrupt_id)
    assert got is not None and got.status == "EXPIRED"
    with pytest.raises(StorageError, match="read-only"):
        store.memory_set(sid, "k", 1, {})
    store.close()
    assert _digest(path) == before
    # Nothing was written: the stored row still says PENDING_APPROVAL ...
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT status FROM pending_calls").fetchone() == ("PENDING_APPROVAL",)
    raw.close()
    # ... until a writable store lists it, which writes the transition.
    writable = SqliteStore(path)
    assert writable.list_pending(sid) == []
    status = writable.connection.execute("SELECT status FROM pending_calls").fetchone()
    assert status == ("EXPIRED",)


def test_a_file_that_is_not_a_database_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, I am not a database\n" * 100)
    with pytest.raises(StorageError, match="not an agcore_lab"):
        SqliteStore(path)
    assert path.read_text().startswith("hello")


@pytest.mark.parametrize("timeout", [-1, math.nan, math.inf, "10", True])
def test_bad_timeouts_are_refused(tmp_path: Path, timeout: object) -> None:
    with pytest.raises(InvalidInputError, match="timeout"):
        SqliteStore(tmp_path / "t.db", timeout=timeout)  # type: ignore[arg-type]
    assert not (tmp_path / "t.db").exists()


def test_a_nul_in_the_path_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="NUL"):
        SqliteStore(f"{tmp_path}/a\x00b.db")


def test_an_uncreatable_parent_directory_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StorageError, match="directory") as caught:
        SqliteStore(blocker / "sub" / "x.db")
    assert isinstance(caught.value.__cause__, OSError)


def test_lone_surrogates_are_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    session = AgentSession(_agent(), store=store)
    with pytest.raises(InvalidInputError, match="surrogate"):
        session.session_memory.set("k", "bad \ud800 text")
    with pytest.raises(InvalidInputError, match="surrogate"):
        session.session_memory.set("bad \udfff key", 1)
    assert store.memory_entries(session.session_id) == []
    with pytest.raises(InvalidInputError, match="surrogate"):
        session.submit_turn_sync("hello \ud83d")
    assert session.turn_index == 0
    assert store.get_session(session.session_id).turn_index == 0  # type: ignore[union-attr]
    assert session.submit_turn_sync("hello").reply == "ok"


def test_a_corrupted_row_is_a_storage_error_naming_the_table_and_key(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    store = SqliteStore(path)
    session = AgentSession(_agent(), store=store)
    session.submit_turn_sync("hi")
    raw = sqlite3.connect(path)
    raw.execute("UPDATE sessions SET metadata_json = '{broken'")
    raw.commit()
    raw.close()
    with pytest.raises(StorageError, match="'sessions' is corrupted") as caught:
        SqliteStore(path).get_session(session.session_id)
    assert caught.value.context["key"] == session.session_id  # type: ignore[attr-defined]
    assert caught.value.__cause__ is not None


def test_a_corrupted_checkpoint_row_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    manager = SessionManager(SqliteStore(path))
    sid = manager.create_sync(_agent())
    manager.submit_turn_sync(sid, "hi")
    raw = sqlite3.connect(path)
    raw.execute("UPDATE checkpoints SET created_at = 'not a date', slots_json = '[['")
    raw.commit()
    raw.close()
    with pytest.raises(StorageError) as info:  # a CorruptRecordError: also a 422
        SqliteStore(path).list_checkpoints(sid)
    assert info.value.context["table"] == "checkpoints"
    assert info.value.to_problem()["status"] == 422  # type: ignore[attr-defined]


def test_a_version_5_file_opens_migrates_and_keeps_its_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("BEGIN")
    for number, migration in enumerate(MIGRATIONS[:5], start=1):
        migration(raw)
        raw.execute(f"PRAGMA user_version = {number}")
    raw.execute("COMMIT")
    raw.close()
    assert SqliteStore(path).schema_version == len(MIGRATIONS)  # an empty old file migrates
    # A file with history from before the checkpoint-id index (m010): the lab of schema 10
    # (tests/data/schema10_lab.db) without it, so m010 and every later migration run on it.
    assert MIGRATIONS[9].__name__ == "_m010_checkpoint_id_index"
    old = tmp_path / "history.db"
    shutil.copy(DATA / "schema10_lab.db", old)
    raw = sqlite3.connect(old, isolation_level=None)
    raw.execute("DROP INDEX checkpoints_ckpt_id")
    raw.execute("PRAGMA user_version = 9")
    sid, *_ = raw.execute("SELECT session_id FROM sessions ORDER BY turn_index DESC").fetchone()
    ckpts = [
        r[0]
        for r in raw.execute(
            "SELECT ckpt_id FROM checkpoints WHERE session_id = ? ORDER BY ckpt_id DESC", (sid,)
        )
    ]
    raw.close()
    store = SqliteStore(old)
    assert store.schema_version == len(MIGRATIONS)
    again = SessionManager(store)
    assert [c.ckpt_id for c in again.checkpointer.list_checkpoints_sync(sid)] == ckpts
    assert again.checkpointer.get_checkpoint_sync(ckpts[-1]).ckpt_id == ckpts[-1]
    turns = store.get_session(sid).turn_index  # type: ignore[union-attr]
    again.recover_sync(sid, _agent())
    again.submit_turn_sync(sid, "two")
    assert store.get_session(sid).turn_index == turns + 1  # type: ignore[union-attr]


def test_checkpoint_lookup_by_id_is_a_key_lookup(tmp_path: Path) -> None:
    # Schema 11 keeps no index on text ids: a checkpoint id encodes its row's integer key.
    store = SqliteStore(tmp_path / "i.db")
    manager = SessionManager(store)
    sid = manager.create_sync(_agent())
    for text in ("one", "two", "three"):
        manager.submit_turn_sync(sid, text)
    wanted = store.list_checkpoints(sid)[1]
    seen: list[str] = []
    store.connection.set_trace_callback(seen.append)
    try:
        found = store.get_checkpoint(wanted.ckpt_id)
    finally:
        store.connection.set_trace_callback(None)
    assert found is not None and found.ckpt_id == wanted.ckpt_id
    plans = [
        " ".join(str(row[-1]) for row in store.connection.execute(f"EXPLAIN QUERY PLAN {sql}"))
        for sql in seen
        if "checkpoint_rows" in sql
    ]
    assert plans and all("SCAN" not in plan for plan in plans), plans


@pytest.mark.parametrize("bad", [2**70, ["ses_1"], {"id": 1}])
def test_ids_sqlite_cannot_bind_are_invalid_input(bad: object) -> None:
    store = SqliteStore(":memory:")
    with pytest.raises(InvalidInputError, match="too large|cannot be stored"):
        store.get_session(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        store.get_checkpoint(bad)  # type: ignore[arg-type]

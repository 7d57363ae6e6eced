"""A checkpoint's parent is the session's newest checkpoint, found by its id alone: taking a
checkpoint reads no stored checkpoint record (sync and async paths alike)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agcore_lab import Agent, AgentSession, ScriptedModel, SqliteStore
from agcore_lab.engine.checkpointer import Checkpointer


def _reads_of_records(statements: list[str]) -> list[str]:
    # A checkpoint record is read with its JSON columns and the slot states they name.
    return [
        s
        for s in statements
        if s.lstrip().upper().startswith("SELECT")
        and ("slots_json" in s or "slot_states" in s or "checkpoints.*" in s)
    ]


def _session(tmp_path: Path) -> tuple[SqliteStore, AgentSession, Checkpointer]:
    store = SqliteStore(tmp_path / "p.db")
    session = AgentSession(Agent(name="a", model=ScriptedModel(["one", "two"])), store=store)
    return store, session, Checkpointer(store)


def test_the_sync_checkpoint_finds_its_parent_by_id_only(tmp_path: Path) -> None:
    store, session, checkpointer = _session(tmp_path)
    first = checkpointer.checkpoint_locked(session, "first")
    session.submit_turn_sync("hi")
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    second = checkpointer.checkpoint_locked(session, "second")
    store.connection.set_trace_callback(None)
    assert _reads_of_records(statements) == []
    newest, older = store.list_checkpoints(session.session_id)
    assert (newest.ckpt_id, newest.parent_ckpt_id) == (second, first)
    assert older.parent_ckpt_id is None  # the session's first has no parent


def test_the_async_checkpoint_finds_its_parent_by_id_only(tmp_path: Path) -> None:
    store, session, checkpointer = _session(tmp_path)
    first = checkpointer.checkpoint_sync(session, "first")
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    second = asyncio.run(checkpointer.checkpoint(session, "second"))
    store.connection.set_trace_callback(None)
    assert _reads_of_records(statements) == []
    got = store.get_checkpoint(second)
    assert got is not None and got.parent_ckpt_id == first


def test_the_latest_id_is_the_head_of_the_listing(tmp_path: Path) -> None:
    store, session, checkpointer = _session(tmp_path)
    sid = session.session_id
    assert store.latest_checkpoint_id(sid) is None
    ids = [checkpointer.checkpoint_sync(session, f"c{n}") for n in range(3)]
    assert store.latest_checkpoint_id(sid) == ids[-1] == store.list_checkpoints(sid)[0].ckpt_id
    store.delete_checkpoints(sid, [ids[-1]])
    assert store.latest_checkpoint_id(sid) == ids[1]
    assert store.latest_checkpoint_id("ses_unknown") is None

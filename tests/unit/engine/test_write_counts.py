"""How many write transactions the manager's common operations take (each is a disk sync
point and a lock round trip; dispatch pays them per child)."""

from __future__ import annotations

from pathlib import Path

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore


def _writes(store: SqliteStore) -> list[str]:
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    return statements


def test_creating_a_session_with_its_start_checkpoint_is_one_write(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "w.db")
    manager = SessionManager(store)
    events: list[str] = []
    manager.add_listener(lambda event: events.append(event.kind))
    statements = _writes(store)
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel()))
    assert sum(s.startswith("BEGIN IMMEDIATE") for s in statements) == 1
    (start,) = manager.checkpointer.list_checkpoints_sync(sid)
    assert start.label == "start" and start.turn_index == 0 and start.parent_ckpt_id is None
    assert events[:2] == ["created", "checkpoint"]


def test_a_dispatch_child_is_created_with_its_note_and_checkpoint_at_once(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "d.db")
    manager = SessionManager(store)
    lead = manager.create_sync(Agent(name="lead", model=ScriptedModel()))
    statements = _writes(store)
    result = manager.dispatch_sync(lead, Agent(name="w", model=ScriptedModel(["done"])), "go")
    store.connection.set_trace_callback(None)
    child = store.get_session(result.child_id)
    assert child is not None and child.parent_id == lead
    assert child.metadata["shared_memory"] == {"parent_id": lead, "namespace": lead}
    labels = [c.label for c in manager.checkpointer.list_checkpoints_sync(result.child_id)]
    assert labels[-1] == "start" and len(labels) == 2  # start, then after its turn
    # create (+ note + start checkpoint), lease, turn, checkpoint, release, result summary.
    assert sum(s.startswith("BEGIN IMMEDIATE") for s in statements) == 6

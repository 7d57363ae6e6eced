"""Three behaviours no test caught before: the manager's approval event, its store/bundle
check, and ``switch_agent`` putting the old agent back when the write fails."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agcore_lab import (
    Agent,
    ConflictError,
    RuntimeBundle,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    Tool,
    ToolCall,
)
from agcore_lab.engine.records import ManagerEvent
from agcore_lab.errors import ConfigurationError, StorageError


def _bank() -> Agent:
    def transfer(to: str, amount: int) -> str:
        """Send money."""
        return f"sent {amount} to {to}"

    model = ScriptedModel([ToolCall(name="transfer", arguments={"to": "u2", "amount": 5}), "ok"])
    tool = Tool.from_function(transfer, requires_approval=True)
    return Agent(name="bank", model=model, tools=[tool])


def test_every_resume_emits_an_approval_event_even_a_conflicting_one() -> None:
    manager = SessionManager(SqliteStore(":memory:"))
    sid = manager.create_sync(_bank())
    call = manager.submit_turn_sync(sid, "pay").pending_tool_call
    assert call is not None
    events: list[ManagerEvent] = []
    manager.add_listener(events.append)
    manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert [(e.kind, e.session_id) for e in events if e.kind == "approval"] == [("approval", sid)]
    with pytest.raises(ConflictError):
        manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert [e.kind for e in events].count("approval") == 2  # views refresh on a 409 too


def test_a_manager_refuses_a_store_and_a_bundle_with_another_store() -> None:
    one, other = SqliteStore(":memory:"), SqliteStore(":memory:")
    with pytest.raises(ConfigurationError, match="not two different stores"):
        SessionManager(one, bundle=RuntimeBundle(store=other))
    same = RuntimeBundle(store=one)
    assert SessionManager(one, bundle=same).store is one  # the same store twice is fine


def test_switch_agent_puts_the_old_agent_back_when_the_write_fails(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    manager = SessionManager(SqliteStore(path, timeout=0))
    old = Agent(name="old", model=ScriptedModel(["from old"]))
    new = Agent(name="new", model=ScriptedModel(["from new"]))
    sid = manager.create_sync(old)
    events: list[ManagerEvent] = []
    manager.add_listener(events.append)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with pytest.raises(StorageError, match="write"):
            manager.switch_agent_sync(sid, new)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    session = manager.get_sync(sid)
    assert session.agent is old
    assert manager.store.get_session(sid).agent_name == "old"  # type: ignore[union-attr]
    assert "new" not in manager.agents and not [e for e in events if e.kind == "agent_switched"]
    assert manager.submit_turn_sync(sid, "hi").reply == "from old"

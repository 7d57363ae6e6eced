"""Structured logging: each key operation logs once to agcore_lab.ops with its ids as extra."""

from __future__ import annotations

import logging

import pytest

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.agent.summary import SummaryConfig


def _ops(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, dict[str, object]]]:
    keys = ("session_id", "ckpt_id", "new_session_id", "child_id", "slot_id", "status")
    return [
        (
            r.agcore_op,  # type: ignore[attr-defined]
            r.getMessage(),
            {k: getattr(r, k) for k in keys if hasattr(r, k)},
        )
        for r in caplog.records
        if r.name == "agcore_lab.ops"
    ]


def test_key_operations_log_their_ids(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="agcore_lab.ops")
    manager = SessionManager(SqliteStore(":memory:"))
    config = SummaryConfig(max_context_tokens=40, trigger_token_ratio=0.5, debounce_turns=0)
    sid = manager.create_sync(Agent(name="w", model=ScriptedModel(), summary_config=config))
    manager.submit_turn_sync(sid, "tell me something long enough to be summarized")
    first = manager.checkpointer.list_checkpoints_sync(sid)[-1]
    rollback = manager.checkpointer.rollback_sync(sid, first.ckpt_id)
    child = manager.checkpointer.fork_sync(sid, first.ckpt_id)
    result = manager.dispatch_sync(sid, Agent(name="helper", model=ScriptedModel()), "help")
    manager.destroy_sync(child)
    ops = _ops(caplog)
    kinds = [op for op, _, _ in ops]
    for expected in (
        "created",
        "checkpoint",
        "turn",
        "summary",
        "rollback",
        "fork",
        "dispatch_started",
        "dispatch_finished",
        "destroyed",
    ):
        assert expected in kinds, expected
    by_kind = {op: (message, ids) for op, message, ids in ops}
    assert ("created", "session created", {"session_id": sid}) in ops
    assert (
        "checkpoint",
        "checkpoint created",
        {"session_id": sid, "ckpt_id": first.ckpt_id},
    ) in ops
    assert by_kind["summary"] == ("summary written", {"session_id": sid, "slot_id": "main"})
    assert by_kind["rollback"] == ("session rolled back", {"session_id": sid, "ckpt_id": rollback})
    assert by_kind["fork"][1]["new_session_id"] == child
    assert by_kind["dispatch_started"][1] == {"session_id": sid, "child_id": result.child_id}
    assert by_kind["dispatch_finished"][1] == {"child_id": result.child_id, "status": "completed"}
    assert by_kind["destroyed"] == ("session destroyed", {"session_id": child})
    # Frequent operations are DEBUG; the rest INFO.
    levels = {r.agcore_op: r.levelno for r in caplog.records if r.name == "agcore_lab.ops"}  # type: ignore[attr-defined]
    assert levels["turn"] == levels["checkpoint"] == logging.DEBUG
    assert levels["rollback"] == levels["created"] == logging.INFO


def test_nothing_is_formatted_when_the_logger_is_off(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="agcore_lab.ops")
    manager = SessionManager(SqliteStore(":memory:"))
    sid = manager.create_sync(Agent(name="w", model=ScriptedModel()))
    manager.submit_turn_sync(sid, "hi")
    assert _ops(caplog) == []


def test_each_kind_is_logged_at_its_own_level_with_or_without_listeners(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # With no listener an event is only built when its kind's level is enabled; a listener
    # added later gets every event again.
    caplog.set_level(logging.INFO, logger="agcore_lab.ops")
    manager = SessionManager(SqliteStore(":memory:"))
    sid = manager.create_sync(Agent(name="w", model=ScriptedModel()))
    manager.submit_turn_sync(sid, "hi")
    assert [op for op, _, _ in _ops(caplog)] == ["created"]  # turn, checkpoint: DEBUG
    seen: list[tuple[str, str]] = []
    manager.add_listener(lambda event: seen.append((event.kind, event.session_id)))
    manager.submit_turn_sync(sid, "again")
    assert seen == [("turn", sid), ("checkpoint", sid)]
    assert [op for op, _, _ in _ops(caplog)] == ["created"]
    with pytest.raises(ValueError, match="kind"):
        SessionManager(SqliteStore(":memory:")).emit("no such kind", sid)  # type: ignore[arg-type]

"""A session loaded from the store keeps its history compact (issue 16: at most twice its
content in RAM) and goes on exactly as the live session that wrote it: turns, rollback, fork,
Focused contexts and summaries see the same messages."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

from agcore_lab import (
    Agent,
    AgentSession,
    Message,
    ScriptedModel,
    SessionManager,
    SqliteStore,
)
from agcore_lab.agent.slots import build_context
from agcore_lab.llm.history import MessageHistory
from agcore_lab.llm.tokens import estimate_messages_tokens

FILLER = "The quick brown fox jumps over the lazy dog while the agent takes careful notes. "


def reply(messages: Sequence[Message]) -> str:
    return (f"reply to message {len(messages)}: " + FILLER * 4)[:300]


def agent() -> Agent:
    return Agent(name="loaded", model=ScriptedModel(reply))


def question(i: int) -> str:
    return (f"Question {i}: what does the agent remember about item {i}?" + " " * 75)[:75]


def written(db: Path, turns: int) -> tuple[str, list[Message]]:
    manager = SessionManager(SqliteStore(db), watch_interval=None)
    sid = manager.create_sync(agent())
    for i in range(turns):
        manager.submit_turn_sync(sid, question(i))
    messages = list(manager.get_sync(sid).messages)
    manager.store.close()  # type: ignore[attr-defined]
    return sid, messages


def test_a_loaded_session_keeps_at_most_twice_its_text(tmp_path: Path) -> None:
    sid, live = written(tmp_path / "s.db", 1_000)
    store = SqliteStore(tmp_path / "s.db")
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    session = AgentSession.load(sid, agent(), store=store)
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    content = sum(len(m.text.encode()) for m in session.messages)
    assert content == 1_000 * 375
    assert retained <= 2 * content, f"{retained / content:.2f}x the content"
    assert isinstance(session.current_slot.messages, MessageHistory)
    assert session.messages == live  # the same messages, field by field
    assert [type(m) for m in session.messages] == [type(m) for m in live]


def test_a_loaded_session_goes_on_as_the_live_one(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    sid, live = written(db, 40)
    manager = SessionManager(SqliteStore(db), agents=[agent()], watch_interval=None)
    manager.recover_sync(sid)
    session = manager.get_sync(sid)
    held = session.current_slot.messages[10]
    ckpts = manager.checkpointer.list_checkpoints_sync(sid)
    middle = ckpts[len(ckpts) // 2]
    manager.checkpointer.rollback_sync(sid, middle.ckpt_id)
    assert session.messages == live[: middle.message_count]
    assert session.current_slot.messages[10] is held  # reused, not read again
    child_id = manager.checkpointer.fork_sync(sid, ckpts[0].ckpt_id)
    child = manager.get_sync(child_id)
    assert child.messages == live
    result = manager.submit_turn_sync(sid, "after the rollback")
    assert result.reply.startswith(f"reply to message {middle.message_count + 1}:")
    assert session.messages == [*live[: middle.message_count], *result.messages]
    fresh = AgentSession.load(sid, agent(), store=SqliteStore(db))
    assert fresh.messages == session.messages
    assert fresh.current_slot == session.current_slot


def test_focused_contexts_and_token_counts_of_a_loaded_history(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    sid, live = written(db, 30)
    session = AgentSession.load(sid, agent(), store=SqliteStore(db))
    slot = session.current_slot
    slot.pinned_ids = [live[3].id]
    slot.recent_window = 4
    slot.mode = type(slot.mode)("focused")
    context = build_context(slot, "system")
    assert [m.id for m in context[1:]] == [live[3].id] + [m.id for m in live[-4:]]
    assert estimate_messages_tokens(slot.messages) == estimate_messages_tokens(live)

"""Setting a slot's context mode and pinning messages, persisted and used by the next turn."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    InvalidInputError,
    Message,
    ScriptedModel,
    SlotMode,
    SlotNotFoundError,
    SqliteStore,
    SystemMessage,
)


def _recording_session(tmp_path: Path) -> tuple[AgentSession, list[list[Message]]]:
    seen: list[list[Message]] = []

    def reply(messages: Sequence[Message]) -> str:
        seen.append(list(messages))
        return f"reply {len(seen)}"

    agent = Agent(name="rec", system_prompt="sys", model=ScriptedModel(reply))
    return AgentSession(agent, store=SqliteStore(tmp_path / "modes.db")), seen


def test_focused_mode_sends_summary_pins_and_window(tmp_path: Path) -> None:
    session, seen = _recording_session(tmp_path)
    for i in range(4):
        session.submit_turn_sync(f"question {i}")
    first_question = session.messages[0]
    session.pin_message_sync(first_question.id)
    session.set_slot_mode_sync("focused", recent_window=2, summary_override="four questions")

    session.submit_turn_sync("question 4")
    sent = seen[-1]
    assert isinstance(sent[0], SystemMessage) and sent[0].content == "sys"
    assert isinstance(sent[1], SystemMessage) and sent[1].content.endswith("four questions")
    assert sent[2].id == first_question.id  # pinned, older than the window
    assert [m.text for m in sent[3:]] == ["reply 4", "question 4"]


def test_mode_and_pins_survive_a_reload(tmp_path: Path) -> None:
    session, _ = _recording_session(tmp_path)
    session.submit_turn_sync("hello")
    pinned = session.messages[0].id
    session.pin_message_sync(pinned)
    session.set_slot_mode_sync(SlotMode.Focused, recent_window=3)

    again = AgentSession.load(
        session.session_id, session.agent, store=SqliteStore(tmp_path / "modes.db")
    )
    slot = again.current_slot
    assert slot.mode is SlotMode.Focused and slot.recent_window == 3
    assert slot.pinned_ids == [pinned]

    again.pin_message_sync(pinned, pinned=False)
    assert again.current_slot.pinned_ids == []


def test_bad_mode_window_message_or_slot_change_nothing(tmp_path: Path) -> None:
    session, _ = _recording_session(tmp_path)
    session.submit_turn_sync("hello")
    with pytest.raises(InvalidInputError, match="unknown slot mode"):
        session.set_slot_mode_sync("zoomed")
    with pytest.raises(InvalidInputError, match="recent_window"):
        session.set_slot_mode_sync("focused", recent_window=0)
    with pytest.raises(InvalidInputError, match="no message"):
        session.pin_message_sync("msg_nope")
    with pytest.raises(SlotNotFoundError):
        session.set_slot_mode_sync("focused", slot_id="nope")
    slot = session.current_slot
    assert slot.mode is SlotMode.Full and slot.pinned_ids == [] and slot.recent_window == 20

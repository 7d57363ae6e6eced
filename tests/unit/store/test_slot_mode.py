"""One ``SlotMode`` for the store and the agent."""

from __future__ import annotations

import agcore_lab
from agcore_lab import Agent, AgentSession, ScriptedModel, SqliteStore
from agcore_lab.agent import slots, snapshot
from agcore_lab.store import base
from agcore_lab.store.base import SlotMode, SlotRecord


def test_there_is_one_slot_mode() -> None:
    assert base.SlotMode is slots.SlotMode is agcore_lab.SlotMode is snapshot.SlotMode
    assert [m.value for m in SlotMode] == ["full", "focused"]


def test_records_take_strings_and_give_the_enum_back() -> None:
    record = SlotRecord(session_id="s", slot_id="main", mode="focused")  # type: ignore[arg-type]
    assert record.mode is SlotMode.Focused and record.mode == "focused"
    assert record.model_dump(mode="json")["mode"] == "focused"
    assert SlotRecord(session_id="s", slot_id="main").mode is SlotMode.Full


def test_a_stored_slot_reads_back_as_the_same_enum() -> None:
    store = SqliteStore(":memory:")
    session = AgentSession(Agent(name="a", model=ScriptedModel()), store=store)
    session.fork_slot_sync("focus")
    session.set_slot_mode_sync("focused", slot_id="focus")
    modes = {s.slot_id: s.mode for s in store.load_slots(session.session_id)}
    assert modes == {"main": SlotMode.Full, "focus": SlotMode.Focused}
    assert all(type(m) is SlotMode for m in modes.values())

"""A record's ``created_at`` is written as its own text in every write of the record, though
each time object's text is worked out once (:mod:`agcore_lab.store._iso`): moments that only
compare equal (one moment in two time zones) keep their own zone, at creation and after."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from agcore_lab.ids import new_id
from agcore_lab.store.base import SessionRecord, SlotRecord
from agcore_lab.store.sqlite import SqliteStore

_AT = datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


def test_records_made_at_one_moment_in_two_zones_keep_their_own_zone() -> None:
    store = SqliteStore(":memory:")
    east = _AT.astimezone(timezone(timedelta(hours=2)))  # == _AT, written with +02:00
    made = []
    for moment in (_AT, east, _AT):
        session_id = new_id("ses")
        record = SessionRecord(session_id=session_id, agent_name="a", created_at=moment)
        slot = SlotRecord(session_id=session_id, slot_id="main", created_at=moment)
        store.create_session(record, slots=[slot])
        store.commit(record, slots=[slot])  # written again by the session's commit
        made.append(session_id)
    for session_id, offset in zip(made, (0, 2, 0), strict=True):
        stored = store.get_session(session_id)
        assert stored is not None and stored.created_at == _AT
        assert stored.created_at.utcoffset() == timedelta(hours=offset)
        (slot,) = store.load_slots(session_id)
        assert slot.created_at == _AT and slot.created_at.utcoffset() == timedelta(hours=offset)


def test_update_times_in_two_zones_keep_their_own_zone_and_a_turn_writes_one_time() -> None:
    # fresh_iso keeps the last time's text: an equal moment in another zone is its own text.
    from agcore_lab import Agent, ScriptedModel, SessionManager

    store = SqliteStore(":memory:")
    east = _AT.astimezone(timezone(timedelta(hours=2)))
    for moment, offset in ((_AT, 0), (east, 2), (_AT, 0)):
        session_id = new_id("ses")
        record = SessionRecord(session_id=session_id, agent_name="a", updated_at=moment)
        slot = SlotRecord(session_id=session_id, slot_id="main", updated_at=moment)
        store.create_session(record, slots=[slot])
        stored = store.get_session(session_id)
        (kept,) = store.load_slots(session_id)
        assert stored is not None and stored.updated_at == kept.updated_at == _AT
        assert (
            stored.updated_at.utcoffset() == kept.updated_at.utcoffset() == timedelta(hours=offset)
        )
    manager = SessionManager(store)
    session_id = manager.create_sync(Agent(name="a", model=ScriptedModel(["hi"])))
    before = store.get_session(session_id)
    manager.submit_turn_sync(session_id, "hello")
    after = store.get_session(session_id)
    (main,) = store.load_slots(session_id)
    assert before is not None and after is not None and after.updated_at > before.updated_at
    assert main.updated_at == after.updated_at  # the turn's one time, for both rows

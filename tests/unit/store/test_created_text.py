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

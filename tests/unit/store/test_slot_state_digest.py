"""A slot's state is stored once per distinct value (``slot_states``), and the digest of each
state is worked out once per process: checkpoints of slots whose states only *compare* equal
(one moment in two time zones) still store and restore each slot's own state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from agcore_lab.ids import new_id
from agcore_lab.store.base import CkptMeta, SessionRecord, SlotRecord
from agcore_lab.store.sqlite import SqliteStore

_AT = datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


def _stored(store: SqliteStore, created_at: datetime, **state: object) -> SlotRecord:
    # A new session whose first checkpoint holds one slot made at ``created_at``; the slot
    # as that checkpoint gives it back.
    session_id = new_id("ses")
    slot = SlotRecord(session_id=session_id, slot_id="main", created_at=created_at, **state)
    ckpt = CkptMeta(
        ckpt_id=new_id("ckpt"),
        session_id=session_id,
        turn_index=0,
        created_at=_AT,
        source="auto",
        message_count=0,
        agent_name="a",
        slots={"main": slot},
    )
    store.create_session(
        SessionRecord(session_id=session_id, agent_name="a"), slots=[slot], checkpoint=ckpt
    )
    got = store.get_checkpoint(ckpt.ckpt_id)
    assert got is not None
    return got.slots["main"]


def test_equal_moments_in_other_zones_keep_their_own_zone() -> None:
    store = SqliteStore(":memory:")
    east = timezone(timedelta(hours=2))
    first = _stored(store, _AT)
    second = _stored(store, _AT.astimezone(east))  # == _AT, but written with +02:00
    again = _stored(store, _AT)
    assert first.created_at.utcoffset() == timedelta(0)
    assert second.created_at.utcoffset() == timedelta(hours=2)
    assert second.created_at == _AT and second.created_at.hour == 14
    assert again.created_at.utcoffset() == timedelta(0)  # the first state, found again
    states = store.connection.execute("SELECT count(*) FROM slot_states").fetchone()[0]
    assert states == 2  # one row per distinct state, as before


def test_each_state_field_tells_states_apart() -> None:
    store = SqliteStore(":memory:")
    plain = _stored(store, _AT)
    for change in (
        {"fork_point": 3},
        {"merge_base": 2},
        {"recent_window": 7},
        {"summary_override": "short"},
        {"pinned_ids": ["msg_1"]},
        {"parent_slot_id": "other"},
        {"merge_strategy": "append"},
    ):
        slot = _stored(store, _AT, **change)
        for name, value in change.items():
            assert getattr(slot, name) == value, name
        assert getattr(plain, next(iter(change))) != next(iter(change.values()))

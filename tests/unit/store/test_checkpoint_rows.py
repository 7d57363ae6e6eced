"""Checkpoint rows read back without a validation per row: the same records as a validated
read, records that behave like validated ones, and damaged rows still named."""

from __future__ import annotations

import gc
import json
import sqlite3
from pathlib import Path

import pytest

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.errors import CorruptRecordError
from agcore_lab.store._checkpoint_rows import COLUMNS, _validated
from agcore_lab.store.base import CkptMeta, SlotMode
from agcore_lab.testing.listing_checks import _fields


def _lab(path: Path) -> tuple[SessionManager, str]:
    manager = SessionManager(SqliteStore(path))
    agent = Agent(name="a", model=ScriptedModel([f"reply {n}" for n in range(20)]))
    sid = manager.create_sync(agent)
    manager.submit_turn_sync(sid, "one")
    session = manager.get_sync(sid)
    session.fork_slot_sync("side", switch=True, strategy="summarize")
    session.set_slot_mode_sync(SlotMode.Focused, recent_window=4, summary_override="so far")
    manager.submit_turn_sync(sid, "two")
    session.pin_message_sync(session.current_slot.messages[0].id)
    manager.checkpoint_sync(sid, label="labelled")
    manager.submit_turn_sync(sid, "three")
    return manager, sid


def _validated_listing(store: SqliteStore, sid: str) -> list[CkptMeta]:
    rows = store.connection.execute(
        f"SELECT {', '.join(COLUMNS)} FROM checkpoints WHERE session_id = ? ORDER BY ckpt_id DESC",
        (sid,),
    ).fetchall()
    states = {
        digest: json.loads(text)
        for digest, text in store.connection.execute("SELECT * FROM slot_states")
    }
    return [_validated(dict(zip(COLUMNS, row, strict=True)), states) for row in rows]


def test_a_listing_reads_the_records_a_validated_read_gives(tmp_path: Path) -> None:
    manager, sid = _lab(tmp_path / "l.db")
    store = manager.store
    assert isinstance(store, SqliteStore)
    listed = store.list_checkpoints(sid)
    expected = _validated_listing(store, sid)
    assert len(listed) == 5 and {len(c.slots) for c in listed} == {1, 2}
    assert [_fields(c) for c in listed] == [_fields(c) for c in expected]
    side = listed[0].slots["side"]
    assert side.mode is SlotMode.Focused and side.pinned_ids and side.merge_strategy
    assert listed[0].created_at.utcoffset() is not None
    assert listed[0].spend["scripted"].usage.requests == 3  # three turns
    assert gc.isenabled()  # the collector is on again after a listing


def test_listed_records_behave_like_validated_ones(tmp_path: Path) -> None:
    manager, sid = _lab(tmp_path / "l.db")
    meta, other = manager.store.list_checkpoints(sid, limit=2)
    before = set(other.model_fields_set)
    copy = meta.model_copy(update={"label": "again", "extra_field": 1})
    assert copy.label == "again" and copy.ckpt_id == meta.ckpt_id
    assert "extra_field" in copy.model_fields_set
    assert "extra_field" not in meta.model_fields_set and other.model_fields_set == before
    assert CkptMeta.model_validate_json(meta.model_dump_json()).model_dump() == meta.model_dump()
    slot = meta.slots["side"]
    slot.recent_window = 9  # SlotRecord is mutable, as a validated one is
    assert slot.recent_window == 9 and "recent_window" in slot.model_fields_set
    with pytest.raises(ValueError):
        meta.label = "frozen"  # type: ignore[misc]
    got = manager.store.get_checkpoint(meta.ckpt_id)
    assert got is not None and _fields(got) == _fields(manager.store.list_checkpoints(sid)[0])


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("turn_index = 'three'", "turn_index"),
        ("cost_usd = 'free'", "cost_usd"),
        ("source = 'elsewhere'", "source"),
        ("spend_json = '{\"scripted\": [1, 2]}'", "spend"),
        ("created_at = '2026-13-01T00:00:00+00:00'", "created_at"),
        ("label = x'ff'", "label"),
        ("slots_json = '{\"main\": [null, 7]}'", "slots"),
    ],
)
def test_a_row_of_the_wrong_type_is_validated_and_named(
    tmp_path: Path, change: str, named: str
) -> None:
    path = tmp_path / "l.db"
    manager, sid = _lab(path)
    newest = manager.store.list_checkpoints(sid, limit=1)[0].ckpt_id
    raw = sqlite3.connect(path)
    raw.execute(f"UPDATE checkpoints SET {change} WHERE ckpt_id = ?", (newest,))
    raw.commit()
    raw.close()
    with pytest.raises(CorruptRecordError) as caught:
        SqliteStore(path).list_checkpoints(sid)
    assert caught.value.to_problem()["key"] == newest
    assert named in str(caught.value) or "spend JSON" in str(caught.value)
    assert len(SqliteStore(path).list_checkpoints(sid, before=newest)) == 4  # the rest reads


def _copies(path: Path) -> tuple[SqliteStore, str, CkptMeta]:
    # Three checkpoints with the same slots and spend JSON (manual ones without a turn
    # between them), one of them pinned: a read parses each text once.
    manager, sid = _lab(path)
    session = manager.get_sync(sid)
    assert session.current_slot.messages
    for label in ("a", "b", "c"):
        manager.checkpoint_sync(sid, label=label)
    store = manager.store
    assert isinstance(store, SqliteStore)
    return store, sid, store.list_checkpoints(sid, limit=1)[0]


def test_records_of_the_same_stored_text_share_nothing_a_user_can_change(tmp_path: Path) -> None:
    store, sid, _ = _copies(tmp_path / "l.db")
    c, b, a = store.list_checkpoints(sid, limit=3)
    texts = store.connection.execute(
        "SELECT DISTINCT slots_json, spend_json FROM checkpoints WHERE ckpt_id IN (?, ?, ?)",
        (a.ckpt_id, b.ckpt_id, c.ckpt_id),
    ).fetchall()
    assert len(texts) == 1 and c.slots["side"].pinned_ids  # one text each, a pinned slot
    assert c.slots is not b.slots and c.spend is not b.spend
    c.slots["side"].pinned_ids.append("msg_x")
    c.slots["side"].recent_window = 99
    c.slots.pop("main")
    c.spend["scripted"].cost = 5.0
    c.model_fields_set.discard("label")
    c.slots["side"].model_fields_set.discard("mode")
    assert "msg_x" not in b.slots["side"].pinned_ids and b.slots["side"].recent_window == 4
    assert set(b.slots) == {"main", "side"} and b.spend["scripted"].cost == 0.0
    assert "label" in b.model_fields_set and "mode" in b.slots["side"].model_fields_set
    assert [_fields(r) for r in (b, a)] == [_fields(r) for r in _validated_listing(store, sid)[1:3]]


def test_the_same_slots_text_in_two_sessions_names_each_session(tmp_path: Path) -> None:
    store, sid, template = _copies(tmp_path / "l.db")
    store.create_session(
        store.get_session(sid).model_copy(update={"session_id": "ses_other"})  # type: ignore[union-attr]
    )
    other = template.model_copy(update={"ckpt_id": "ckpt_zzz_other", "session_id": "ses_other"})
    store.put_checkpoint(other)
    newest = store.list_checkpoints(None, limit=2)
    assert [c.session_id for c in newest] == ["ses_other", sid]
    assert {s.session_id for s in newest[0].slots.values()} == {"ses_other"}
    assert {s.session_id for s in newest[1].slots.values()} == {sid}


def test_a_row_pydantic_would_coerce_reads_as_a_validated_read_gives_it(tmp_path: Path) -> None:
    # A hand edit that full validation accepts (a number stored as text): that row takes the
    # validated path, the rows around it the fast one, and the listing is the validated one.
    path = tmp_path / "l.db"
    manager, sid = _lab(path)
    middle = manager.store.list_checkpoints(sid)[2]
    raw = sqlite3.connect(path)
    raw.execute(
        "UPDATE checkpoints SET turn_index = ?, cost_usd = 0 WHERE ckpt_id = ?",
        (str(middle.turn_index), middle.ckpt_id),
    )
    raw.commit()
    raw.close()
    store = SqliteStore(path)
    listed = store.list_checkpoints(sid)
    assert listed[2].turn_index == middle.turn_index and type(listed[2].cost_usd) is float
    assert [_fields(c) for c in listed] == [_fields(c) for c in _validated_listing(store, sid)]


def test_a_clean_listing_validates_no_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agcore_lab.store import _checkpoint_rows

    store, sid, _ = _copies(tmp_path / "l.db")
    validated: list[str] = []
    real = _checkpoint_rows._validated

    def counting(row: dict[str, object], states: dict[str, object]) -> CkptMeta:
        validated.append(str(row["ckpt_id"]))
        return real(row, states)  # type: ignore[arg-type]

    monkeypatch.setattr(_checkpoint_rows, "_validated", counting)
    listed = store.list_checkpoints(sid)
    assert len(listed) == 8 and validated == []

"""The SQLite listing builds its records straight from the lean rows: the records a validated
read of the ``checkpoints`` view gives, byte for byte in JSON, for every form a lean row takes
(flat slot and spend, JSON slots, JSON spend, heads that are messages, links or none, times
kept as numbers or as text, roots, every source, labels), in one session and across all of
them; records that share nothing a user can change; and damaged lean rows named."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.errors import CorruptRecordError
from agcore_lab.ids import new_id
from agcore_lab.llm.usage import ModelSpend, Usage
from agcore_lab.store._checkpoint_rows import COLUMNS, _validated
from agcore_lab.store._checkpoints import insert_checkpoint
from agcore_lab.store.base import CkptMeta

_NOT_KEPT = {"slots": {"__all__": {"updated_at"}}}  # when a slot was last touched


def _validated_listing(store: SqliteStore, session_id: str | None) -> list[CkptMeta]:
    where, params = ("WHERE session_id = ?", (session_id,)) if session_id else ("", ())
    rows = store.connection.execute(
        f"SELECT {', '.join(COLUMNS)} FROM checkpoints {where} ORDER BY ckpt_id DESC", params
    ).fetchall()
    states = {d: json.loads(t) for d, t in store.connection.execute("SELECT * FROM slot_states")}
    return [_validated(dict(zip(COLUMNS, row, strict=True)), states) for row in rows]


def _as_json(records: list[CkptMeta]) -> list[str]:
    return [r.model_dump_json(exclude=_NOT_KEPT) for r in records]  # type: ignore[arg-type]


def _fields_sets(records: list[CkptMeta]) -> list[object]:
    # What exclude_unset and model_copy go by: the fields each record says were set.
    return [
        (
            r.model_fields_set,
            {k: s.model_fields_set for k, s in r.slots.items()},
            {k: (m.model_fields_set, m.usage.model_fields_set) for k, m in r.spend.items()},
        )
        for r in records
    ]


def _forms(path: Path) -> tuple[SqliteStore, str, str]:
    """Two sessions whose checkpoints take every form a lean row has."""
    store = SqliteStore(path)
    manager = SessionManager(store, watch_interval=None)
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel(lambda m: "hi")))
    for turn in range(3):
        manager.submit_turn_sync(sid, f"question {turn}")
    manager.checkpoint_sync(sid, "labelled")
    template = store.list_checkpoints(sid, limit=1)[0]
    (slot_id,) = template.slots
    start = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC)
    heads = [new_id("msg"), new_id("node"), None, "msg_by_hand"]
    times = [
        start,  # no microseconds
        start + timedelta(microseconds=7),
        datetime(2026, 12, 1, 12, 0, tzinfo=timezone(timedelta(hours=2))),  # kept as text
    ]
    with store.transaction() as conn:
        for n in range(12):
            slot = template.slots[slot_id].model_copy(update={"head_node_id": heads[n % 4]})
            prompt, completion = 10 * n, 3 * n
            # A cost whose text SQLite's JSON would not write back: kept as JSON.
            cost = 0.1 + 0.2 * n if n % 3 == 0 else 0.5
            spend = {
                "m": ModelSpend(
                    usage=Usage(prompt_tokens=prompt, completion_tokens=completion, requests=n),
                    cost=cost,
                )
            }
            if n % 5 == 4:
                spend["other"] = ModelSpend(usage=Usage(requests=1), cost=0.25)  # two models
            insert_checkpoint(
                conn,
                template.model_copy(
                    update={
                        "ckpt_id": new_id("ckpt"),
                        "parent_ckpt_id": None if n == 0 else template.ckpt_id,
                        "turn_index": 10 + n,
                        "created_at": times[n % 3],
                        "label": f"#{n}" if n % 2 else None,
                        "source": ("auto", "manual", "fork", "rollback")[n % 4],
                        "prompt_tokens": sum(s.usage.prompt_tokens for s in spend.values()),
                        "completion_tokens": completion,
                        "cost_usd": sum(s.cost for s in spend.values()),
                        "last_summary_turn": n if n % 2 else None,
                        "slots": {slot_id: slot},
                        "spend": spend if n != 6 else {},
                    }
                ),
            )
    session = manager.get_sync(sid)
    session.fork_slot_sync("side", switch=True)  # two slots: slots_json
    session.pin_message_sync(session.current_slot.messages[0].id)
    manager.submit_turn_sync(sid, "on the side")
    other = manager.create_sync(Agent(name="b", model=ScriptedModel(lambda m: "yo")))
    manager.submit_turn_sync(other, "hello")
    return store, sid, other


def test_every_form_of_lean_row_lists_as_the_validated_read_gives(tmp_path: Path) -> None:
    store, sid, other = _forms(tmp_path / "l.db")
    forms = store.connection.execute(
        "SELECT count(state), count(slots_json), count(model), count(spend_json), "
        "count(created_text), count(head), count(parent), count(label) FROM checkpoint_rows"
    ).fetchone()
    total = store.connection.execute("SELECT count(*) FROM checkpoint_rows").fetchone()[0]
    assert all(0 < n < total for n in forms), forms  # every column used, and left NULL
    for session_id in (sid, other, None):
        listed = store.list_checkpoints(session_id)
        expected = _validated_listing(store, session_id)
        assert len(listed) == len(expected) > 1
        assert [r.ckpt_id for r in listed] == [r.ckpt_id for r in expected]
        assert _as_json(listed) == _as_json(expected)
        assert _fields_sets(listed) == _fields_sets(expected)
        assert listed == [r.model_copy(update={"slots": r.slots}) for r in listed]
    both = store.list_checkpoints(None)
    assert {r.session_id for r in both} == {sid, other}
    assert all(s.session_id == r.session_id for r in both for s in r.slots.values())
    paged = store.list_checkpoints(sid, limit=5, before=store.list_checkpoints(sid)[3].ckpt_id)
    assert _as_json(paged) == _as_json(_validated_listing(store, sid)[4:9])


def test_flat_records_share_nothing_a_user_can_change(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "l.db")
    manager = SessionManager(store, watch_interval=None)
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel(lambda m: "hi")))
    manager.submit_turn_sync(sid, "question")
    for label in ("a", "b"):
        manager.checkpoint_sync(sid, label=label)
    b, a = store.list_checkpoints(sid, limit=2)
    flat = store.connection.execute(
        "SELECT count(*) FROM checkpoint_rows WHERE state IS NOT NULL AND model IS NOT NULL"
    ).fetchone()[0]
    assert flat >= 2  # both read from flat columns
    assert b.slots is not a.slots and b.spend is not a.spend
    assert b.slots["main"] is not a.slots["main"] and b.spend["scripted"] is not a.spend["scripted"]
    b.slots["main"].pinned_ids.append("msg_x")
    b.slots["main"].recent_window = 99
    b.spend["scripted"].cost = 5.0
    b.model_fields_set.discard("label")
    b.slots["main"].model_fields_set.discard("mode")
    b.spend["scripted"].model_fields_set.discard("cost")
    assert a.slots["main"].pinned_ids == [] and a.slots["main"].recent_window == 20
    assert a.spend["scripted"].cost == 0.0 and "cost" in a.spend["scripted"].model_fields_set
    assert "label" in a.model_fields_set and "mode" in a.slots["main"].model_fields_set
    with pytest.raises(ValueError):
        b.spend["scripted"].usage.requests = 7  # type: ignore[misc]  # shared, and frozen
    assert _as_json([a]) == _as_json(_validated_listing(store, sid)[1:2])


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("turn_index = 'three'", "turn_index"),
        ("prompt_tokens = -5", "prompt_tokens"),
        ("requests = 'many'", "requests"),
        ("state = 999999", "slots"),
        ("source = 9", "source"),
        ("label = x'ff'", "label"),
        ("cost_usd = 'free'", "cost_usd"),
        ("created = 'soon'", None),  # the view shows a time (the key's): so does the listing
    ],
)
def test_a_damaged_lean_row_reads_as_the_validated_read_of_the_view(
    tmp_path: Path, change: str, named: str | None
) -> None:
    # Edited in the lean table itself, not through the view: the listing is what a validated
    # read of the view gives — the same records, or a CorruptRecordError naming the row.
    path = tmp_path / "l.db"
    store, sid, _ = _forms(path)
    listed = store.list_checkpoints(sid)
    newest = listed[0]
    key = store.connection.execute(
        "SELECT ckpt_key FROM checkpoints_keyed WHERE ckpt_id = ?", (newest.ckpt_id,)
    ).fetchone()[0]
    raw = sqlite3.connect(path)
    raw.execute(
        "UPDATE checkpoint_rows SET state = (SELECT state FROM checkpoint_rows "
        f"WHERE state IS NOT NULL LIMIT 1), slots_json = NULL, {change} WHERE ckpt = ?",
        (key,),
    )
    raw.commit()
    raw.close()
    damaged = SqliteStore(path)
    if named is None:
        assert _as_json(damaged.list_checkpoints(sid)) == _as_json(_validated_listing(damaged, sid))
        return
    with pytest.raises(CorruptRecordError):
        _validated_listing(damaged, sid)
    with pytest.raises(CorruptRecordError) as caught:
        damaged.list_checkpoints(sid)
    assert caught.value.to_problem()["key"] == newest.ckpt_id
    assert named in str(caught.value) or "JSON" in str(caught.value), str(caught.value)
    rest = damaged.list_checkpoints(sid, before=newest.ckpt_id)
    assert _as_json(rest) == _as_json(listed[1:])  # the others still read

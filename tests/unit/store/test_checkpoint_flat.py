"""Checkpoints written from their values are stored exactly as their rows in the old columns
store them (``write_checkpoint``, which parses the JSON texts): a turn's checkpoint
(``insert_checkpoint``: flat or not decided without writing and parsing their JSON), a group's
start checkpoints (``insert_checkpoints``: one executemany), and a turn's checkpoint that reads
its parent and memory version with its ids (``insert_turn_checkpoint``) — the same rows, and the
same records read back, for flat and for every kind of not-flat checkpoint."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from agcore_lab.errors import StorageError
from agcore_lab.ids import new_id
from agcore_lab.llm.usage import ModelSpend, Usage
from agcore_lab.store._checkpoint_rows import checkpoint_base
from agcore_lab.store._checkpoints import (
    _spend_compact,
    _state_hash,
    insert_checkpoint,
    insert_checkpoints,
    insert_turn_checkpoint,
)
from agcore_lab.store._json import compact
from agcore_lab.store._sqlite_checkpoints import write_checkpoint
from agcore_lab.store.base import CkptMeta, SessionRecord, SlotRecord
from agcore_lab.store.sqlite import SqliteStore

_AT = datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


def _slot(slot_id: str, head: str | None) -> SlotRecord:
    return SlotRecord(session_id="s", slot_id=slot_id, head_node_id=head, created_at=_AT)


def _spend(*figures: tuple[str, int, int, int, float]) -> dict[str, ModelSpend]:
    return {
        model: ModelSpend(usage=Usage(prompt_tokens=p, completion_tokens=c, requests=r), cost=x)
        for model, p, c, r, x in figures
    }


def _meta(**change: Any) -> CkptMeta:
    fields: dict[str, Any] = {
        "ckpt_id": new_id("ckpt"),
        "session_id": "s",
        "parent_ckpt_id": None,
        "turn_index": 1,
        "created_at": _AT,
        "source": "auto",
        "message_count": 2,
        "prompt_tokens": 6,
        "completion_tokens": 5,
        "cost_usd": 0.25,
        "agent_name": "worker",
        "slots": {"main": _slot("main", new_id("msg"))},
        "spend": _spend(("scripted", 6, 5, 1, 0.25)),
    }
    fields.update(change)
    return CkptMeta(**fields)


def _old_write(conn: Any, ckpt: CkptMeta) -> None:
    # The row in the old columns, its JSON written and parsed back (as before).
    slots = {sid: [s.head_node_id, _state_hash(conn, s)] for sid, s in ckpt.slots.items()}
    write_checkpoint(
        conn,
        (
            ckpt.session_id,
            ckpt.ckpt_id,
            ckpt.parent_ckpt_id,
            ckpt.turn_index,
            ckpt.created_at.isoformat(),
            ckpt.label,
            ckpt.source,
            ckpt.message_count,
            ckpt.prompt_tokens,
            ckpt.completion_tokens,
            ckpt.cost_usd,
            ckpt.agent_name,
            ckpt.current_slot_id,
            ckpt.last_summary_turn,
            ckpt.memory_version,
            compact(slots),
            _spend_compact(ckpt.spend),
            None,
        ),
    )


CASES = {
    "flat": {},
    "no head yet": {"slots": {"main": _slot("main", None)}},
    "a link at the head": {"slots": {"main": _slot("main", new_id("node"))}},
    "a head id of another shape": {"slots": {"main": _slot("main", "my-own-id")}},
    "two slots": {"slots": {"main": _slot("main", None), "b": _slot("b", new_id("msg"))}},
    "the one slot is not the current one": {"slots": {"b": _slot("b", new_id("msg"))}},
    "a slot name JSON escapes": {
        "current_slot_id": 'sl"ot',
        "slots": {'sl"ot': _slot('sl"ot', new_id("msg"))},
    },
    "two models": {"spend": _spend(("a", 3, 2, 1, 0.125), ("b", 3, 3, 1, 0.125))},
    "no model": {"spend": {}},
    "a model name outside the safe letters": {"spend": _spend(("modèle", 6, 5, 1, 0.25))},
    "the spend's totals are not the row's": {"spend": _spend(("scripted", 6, 5, 1, 0.5))},
    "a cost shown with an exponent": {
        "cost_usd": 1e-20,
        "spend": _spend(("scripted", 6, 5, 1, 1e-20)),
    },
    "a negative zero cost": {"cost_usd": 0.0, "spend": _spend(("scripted", 6, 5, 1, -0.0))},
    "a time at another offset": {
        "created_at": datetime(2026, 5, 1, 14, 0, 0, 5, tzinfo=timezone(timedelta(hours=2)))
    },
    "a time before 1970": {"created_at": datetime(1969, 7, 20, 20, 17, tzinfo=UTC)},
    "a time on a whole second": {"created_at": datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)},
    "a long cost": {"cost_usd": 0.1 + 0.2, "spend": _spend(("scripted", 6, 5, 2, 0.1 + 0.2))},
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_checkpoint_is_stored_as_its_old_columns_store_it(tmp_path: Path, case: str) -> None:
    stores = [SqliteStore(tmp_path / f"{n}.db") for n in ("new", "old")]
    meta = _meta(**CASES[case])
    for store, write in zip(stores, (insert_checkpoint, _old_write), strict=True):
        store.create_session(SessionRecord(session_id="s", agent_name="worker"))
        with store.transaction() as conn:
            write(conn, meta)
    rows = [
        store.connection.execute("SELECT * FROM checkpoint_rows").fetchall() for store in stores
    ]
    assert rows[0] == rows[1] and len(rows[0]) == 1
    records = [store.list_checkpoints("s") for store in stores]
    unstored = {"slots": {"__all__": {"updated_at"}}}  # a slot's updated_at is not stored
    assert [r.model_dump(exclude=unstored) for r in records[0]] == [
        r.model_dump(exclude=unstored) for r in records[1]
    ]
    (record,) = records[0]
    assert (record.ckpt_id, record.cost_usd, record.current_slot_id) == (
        meta.ckpt_id,
        meta.cost_usd,
        meta.current_slot_id,
    )
    assert {k: s.head_node_id for k, s in record.slots.items()} == {
        k: s.head_node_id for k, s in meta.slots.items()
    }
    assert {k: (s.usage, s.cost) for k, s in record.spend.items()} == {
        k: (s.usage, s.cost) for k, s in meta.spend.items()
    }


def _rows(store: SqliteStore) -> list[Any]:
    # The old columns (names by their text: a batch numbers its new names in another order)
    # and which ids are kept as text.
    view = "SELECT * FROM checkpoints ORDER BY ckpt_id"
    kept = "SELECT ckpt_id FROM checkpoint_ids ORDER BY ckpt_id"
    return [*store.connection.execute(view), *store.connection.execute(kept)]


def _twins(tmp_path: Path, first: list[CkptMeta]) -> list[SqliteStore]:
    stores = [SqliteStore(tmp_path / f"{n}.db") for n in ("batch", "one")]
    for store in stores:
        store.create_session(SessionRecord(session_id="s", agent_name="worker"))
        with store.transaction() as conn:
            for meta in first:
                insert_checkpoint(conn, meta)
    return stores


def _compare(stores: list[SqliteStore], metas: list[CkptMeta]) -> None:
    with stores[0].transaction() as conn:
        insert_checkpoints(conn, metas)
    with stores[1].transaction() as conn:
        for meta in metas:
            insert_checkpoint(conn, meta)
    assert _rows(stores[0]) == _rows(stores[1])
    unstored = {"slots": {"__all__": {"updated_at"}}}
    listed = [[r.model_dump(exclude=unstored) for r in s.list_checkpoints("s")] for s in stores]
    assert listed[0] == listed[1] and len(listed[0]) >= len(metas)


def test_checkpoints_stored_together_are_stored_as_one_by_one(tmp_path: Path) -> None:
    # Every kind of checkpoint in one batch (one executemany, each slot state written once).
    _compare(_twins(tmp_path, []), [_meta(**change) for change in CASES.values()])


def test_checkpoints_stored_together_while_an_id_is_kept_as_text(tmp_path: Path) -> None:
    # An id of another shape is kept as text: the batch goes row by row, as before.
    stores = _twins(tmp_path, [_meta(ckpt_id="my-own-checkpoint")])
    _compare(stores, [_meta(), _meta(ckpt_id="another-one"), _meta()])


def test_checkpoints_stored_together_whose_key_is_taken(tmp_path: Path) -> None:
    # Another checkpoint has the same clock digits (or two in the batch do): those are kept
    # as text, as one by one; a checkpoint stored already is refused, as one by one.
    taken = _meta()
    digits, tail = taken.ckpt_id[:-4], taken.ckpt_id[-4:]
    other = digits + ("zzzz" if tail != "zzzz" else "yyyy")
    stores = _twins(tmp_path, [taken])
    _compare(stores, [_meta(ckpt_id=other), _meta()])
    twins = _meta()
    pair = twins.ckpt_id[:-4] + ("zzzz" if twins.ckpt_id[-4:] != "zzzz" else "yyyy")
    _compare(stores, [twins, _meta(ckpt_id=pair)])
    for store in stores:
        with pytest.raises(StorageError, match="UNIQUE"), store.transaction() as conn:
            insert_checkpoints(conn, [_meta(), taken])


@pytest.mark.parametrize("first", ["ckpt", "my-own-checkpoint", "another state", None])
@pytest.mark.parametrize("case", ["flat", "two slots", "two models", "a time before 1970"])
def test_a_turns_checkpoint_reads_its_base_with_its_ids(
    tmp_path: Path, case: str, first: str | None
) -> None:
    # insert_turn_checkpoint reads the parent and memory version in the statement that reads
    # what the row needs (and writes its slot state only when it is not the latest
    # checkpoint's): the same rows and records as reading them first and inserting the copy.
    stores = [SqliteStore(tmp_path / f"{n}.db") for n in ("turn", "old")]
    base = None
    if first == "another state":  # the latest checkpoint's slot had another state
        other = SlotRecord(session_id="s", slot_id="main", recent_window=5, created_at=_AT)
        base = _meta(slots={"main": other})
    elif first is not None:
        base = _meta(ckpt_id=new_id("ckpt") if first == "ckpt" else first)
    meta = _meta(**CASES[case])
    for store in stores:
        store.create_session(SessionRecord(session_id="s", agent_name="worker"))
        store.memory_set("s", "note", "kept", {})
        if base is not None:
            with store.transaction() as conn:
                insert_checkpoint(conn, base)
    with stores[0].transaction() as conn:
        got = insert_turn_checkpoint(conn, meta)
    with stores[1].transaction() as conn:
        latest, memory = checkpoint_base(conn, "s")
        read = {"parent_ckpt_id": latest, "memory_version": memory}
        insert_checkpoint(conn, meta.model_copy(update=read))
    assert got == (latest, memory) == (None if base is None else base.ckpt_id, 1)
    assert _rows(stores[0]) == _rows(stores[1])
    unstored = {"slots": {"__all__": {"updated_at"}}}
    listed = [[r.model_dump(exclude=unstored) for r in s.list_checkpoints("s")] for s in stores]
    assert listed[0] == listed[1]
    states = "SELECT * FROM slot_states ORDER BY state_hash"
    assert [*stores[0].connection.execute(states)] == [*stores[1].connection.execute(states)]

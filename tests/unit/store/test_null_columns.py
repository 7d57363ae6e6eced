"""Rows written without their NULL columns read back as written, in order, whatever their
pattern of NULLs (agcore_lab.store._null_columns); checkpoints so written read back whole."""

from __future__ import annotations

from datetime import UTC, datetime

from agcore_lab.ids import new_id
from agcore_lab.store._null_columns import NullColumns
from agcore_lab.store.base import CkptMeta, SessionRecord
from agcore_lab.store.sqlite import SqliteStore

_COLUMNS = ["session_id", "kind", "ckpt_id", "new_session_id", "origin"]


def test_each_pattern_of_nulls_gets_its_own_statement_and_rows_keep_their_order() -> None:
    store = SqliteStore(":memory:")
    insert = NullColumns("change_log", _COLUMNS, optional=["ckpt_id", "new_session_id"])
    rows = [
        ("s1", "turn", None, None, "a"),
        ("s1", "checkpoint", "ckpt_1", None, "b"),
        ("s1", "checkpoint", "ckpt_2", None, "c"),
        ("s1", "created", None, "s2", "d"),
        ("s1", "both", "ckpt_3", "s3", "e"),
        ("s1", "turn", None, None, "f"),
    ]
    with store.transaction() as conn:
        insert.executemany(conn, rows)
        insert.execute(conn, ("s1", "last", None, "s4", "g"))
    got = [(c.kind, c.ckpt_id, c.new_session_id, c.origin) for c in store.changes_since(0)]
    assert got == [(k, c, n, o) for _, k, c, n, o in rows] + [("last", None, "s4", "g")]
    statements = {insert.statement(row)[0] for row in rows}
    assert len(statements) == 4  # one per pattern of NULLs
    assert insert.statement(rows[0])[0] == (
        "INSERT INTO change_log (session_id, kind, origin) VALUES (?, ?, ?)"
    )


def test_checkpoints_with_and_without_their_optional_fields_read_back_whole() -> None:
    store = SqliteStore(":memory:")
    moment = datetime(2026, 12, 2, 3, 4, 5, 6, tzinfo=UTC)
    record = SessionRecord(session_id="s1", agent_name="a", created_at=moment, updated_at=moment)
    first = CkptMeta(
        ckpt_id=new_id("ckpt"), session_id="s1", turn_index=0, created_at=moment, agent_name="a"
    )
    store.create_session(record, checkpoint=first)
    plain = CkptMeta(
        ckpt_id=new_id("ckpt"),
        session_id="s1",
        turn_index=1,
        created_at=moment,
        agent_name="a",
        parent_ckpt_id=first.ckpt_id,
    )
    labelled = plain.model_copy(
        update={"ckpt_id": new_id("ckpt"), "label": "mine", "last_summary_turn": 1}
    )
    for ckpt in (plain, labelled):
        store.put_checkpoint(ckpt)
    for ckpt in (first, plain, labelled):
        assert store.get_checkpoint(ckpt.ckpt_id) == ckpt

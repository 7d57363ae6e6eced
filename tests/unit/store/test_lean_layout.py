"""Schema 11's lean layout (issue 16): text ids become integer keys and come back exactly.

Ids made by ``new_id`` are stored as the integer their clock digits make (plus their random
digits); these tests cover what does not fit that form — two ids with the same clock digits
(made in the same nanosecond by two processes), ids written by hand — and that the common
case is stored flat, that the old table names stay readable and editable, and that a lab
copies SQLite to SQLite with everything intact.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.llm.messages import AssistantMessage, UserMessage
from agcore_lab.store.base import CkptMeta, LinkRecord, SessionRecord, SlotRecord
from agcore_lab.store.transfer import migrate_store

CLOCK = "1hv9584c9agxs"  # 13 clock digits shared by the ids below


def _session(store: SqliteStore, sid: str = "ses_a") -> SessionRecord:
    record = SessionRecord(session_id=sid, agent_name="a")
    store.create_session(record)
    return record


def test_message_ids_with_the_same_clock_digits_are_both_kept() -> None:
    store = SqliteStore(":memory:")
    record = _session(store)
    first = UserMessage(id=f"msg_{CLOCK}0000", content="first")
    second = AssistantMessage(id=f"msg_{CLOCK}0001", content="second")
    third = UserMessage(id=f"msg_{CLOCK}0002", content="third")
    links = [
        LinkRecord(node_id=first.id, parent_node_id=None, message_id=first.id, depth=0),
        LinkRecord(node_id=second.id, parent_node_id=first.id, message_id=second.id, depth=1),
        LinkRecord(node_id=third.id, parent_node_id=second.id, message_id=third.id, depth=2),
    ]
    slot = SlotRecord(session_id="ses_a", slot_id="main", head_node_id=third.id)
    store.commit(record, messages=[first, second], links=links[:2])
    store.commit(
        record.model_copy(update={"version": 1}), messages=[third], links=links[2:], slots=[slot]
    )
    chain = store.load_chain(third.id)
    assert [(lk.node_id, lk.parent_node_id, m.id, m.content) for lk, m in chain] == [
        (first.id, None, first.id, "first"),
        (second.id, first.id, second.id, "second"),
        (third.id, second.id, third.id, "third"),
    ]
    assert [(lk.node_id, m.id) for lk, m in store.load_chain_tail(third.id, 1)] == [
        (third.id, third.id)
    ]
    conn = store.connection
    rows = conn.execute("SELECT message_id, parent_id, role FROM messages ORDER BY 1").fetchall()
    assert [tuple(r) for r in rows] == [
        (first.id, None, "user"),
        (second.id, first.id, "assistant"),
        (third.id, second.id, "user"),
    ]
    # One of them has the clock's key; the others keep their ids as text.
    assert conn.execute("SELECT count(*) FROM text_ids").fetchone()[0] == 2
    assert store.delete_session("ses_a")
    assert conn.execute("SELECT count(*) FROM chain_nodes").fetchone()[0] == 0


def _ckpt(ckpt_id: str, parent: str | None, turn: int, head: str | None) -> CkptMeta:
    return CkptMeta(
        ckpt_id=ckpt_id,
        session_id="ses_a",
        parent_ckpt_id=parent,
        turn_index=turn,
        created_at=datetime(2026, 12, 1, 10, 0, turn, 250, tzinfo=UTC),
        source="manual",
        message_count=turn,
        prompt_tokens=10 * turn,
        completion_tokens=turn,
        cost_usd=0.25,
        agent_name="a",
        current_slot_id="main",
        memory_version=0,
        slots={"main": SlotRecord(session_id="ses_a", slot_id="main", head_node_id=head)},
    )


def test_checkpoint_ids_with_the_same_clock_digits_and_hand_written_ones() -> None:
    store = SqliteStore(":memory:")
    _session(store)
    made = [
        _ckpt(f"ckpt_{CLOCK}0005", None, 1, None),
        _ckpt(f"ckpt_{CLOCK}0004", f"ckpt_{CLOCK}0005", 2, "node_x"),
        _ckpt("c-by-hand", f"ckpt_{CLOCK}0004", 3, f"msg_{CLOCK}0009"),
    ]
    for ckpt in made:
        store.put_checkpoint(ckpt)
    listed = store.list_checkpoints("ses_a")
    assert [c.ckpt_id for c in listed] == sorted((c.ckpt_id for c in made), reverse=True)
    for ckpt in made:
        got = store.get_checkpoint(ckpt.ckpt_id)
        assert got is not None
        assert got.model_dump(exclude={"slots"}) == ckpt.model_dump(exclude={"slots"})
        assert got.slots["main"].head_node_id == ckpt.slots["main"].head_node_id
    page = store.list_checkpoints("ses_a", before=f"ckpt_{CLOCK}0005", limit=5)
    assert [c.ckpt_id for c in page] == [f"ckpt_{CLOCK}0004", "c-by-hand"]
    assert store.get_checkpoint(f"ckpt_{CLOCK}0006") is None
    assert store.delete_checkpoints("ses_a", [f"ckpt_{CLOCK}0005"]) == 1
    assert [c.ckpt_id for c in store.list_checkpoints("ses_a")] == [
        f"ckpt_{CLOCK}0004",
        "c-by-hand",
    ]


def _lab(path: Path) -> tuple[SqliteStore, str]:
    store = SqliteStore(path)
    manager = SessionManager(store, watch_interval=None)
    agent = Agent(name="lean", model=ScriptedModel(lambda messages: "a reply"))
    sid = manager.create_sync(agent)
    for text in ("one", "two", "three"):
        manager.submit_turn_sync(sid, text)
    return store, sid


def test_a_turns_checkpoint_is_stored_in_flat_columns(tmp_path: Path) -> None:
    store, sid = _lab(tmp_path / "lab.db")
    rows = store.connection.execute(
        "SELECT slots_json, spend_json, created_text, state, model, head FROM checkpoint_rows "
        "WHERE turn_index > 0"  # the session's first checkpoint has no spend and no head
    ).fetchall()
    assert len(rows) == 3
    for slots_json, spend_json, created_text, state, model, head in rows:
        assert (slots_json, spend_json, created_text) == (None, None, None)
        assert state is not None and model is not None and head is not None
    # ... and the view gives the JSON the old table held.
    for ckpt, (slots_json, spend_json) in zip(
        store.list_checkpoints(sid)[:3],
        store.connection.execute(
            "SELECT slots_json, spend_json FROM checkpoints WHERE turn_index > 0 "
            "ORDER BY ckpt_id DESC"
        ),
        strict=True,
    ):
        ((slot_id, (head, _)),) = json.loads(slots_json).items()
        assert (slot_id, head) == ("main", ckpt.slots["main"].head_node_id)
        assert json.loads(spend_json) == {
            "scripted": [
                ckpt.prompt_tokens,
                ckpt.completion_tokens,
                ckpt.spend["scripted"].usage.requests,
                ckpt.cost_usd,
            ]
        }
    store.close()


def test_the_old_tables_can_still_be_edited_and_deleted_from(tmp_path: Path) -> None:
    store, sid = _lab(tmp_path / "lab.db")
    newest, middle, oldest, _ = store.list_checkpoints(sid)
    conn = store.connection
    conn.execute("UPDATE checkpoints SET label = 'kept' WHERE ckpt_id = ?", (middle.ckpt_id,))
    conn.execute("DELETE FROM checkpoints WHERE ckpt_id = ?", (oldest.ckpt_id,))
    listed = store.list_checkpoints(sid)[:2]
    assert [(c.ckpt_id, c.label) for c in listed] == [
        (newest.ckpt_id, None),
        (middle.ckpt_id, "kept"),
    ]
    edited = listed[1]
    assert edited.model_dump(exclude={"label", "slots"}) == middle.model_dump(
        exclude={"label", "slots"}
    )
    assert edited.slots["main"].head_node_id == middle.slots["main"].head_node_id
    store.close()


def test_a_lab_copies_sqlite_to_sqlite_intact(tmp_path: Path) -> None:
    data = Path(__file__).resolve().parents[2] / "data"
    shutil.copy(data / "schema10_lab.db", tmp_path / "old.db")
    source = SqliteStore(tmp_path / "old.db")  # migrated to schema 11 on open
    copy = SqliteStore(tmp_path / "copy.db")
    report = migrate_store(source, copy)
    assert report.tables["messages"] == 20 and report.tables["message_links"] == 3
    assert report.tables["checkpoints"] == 13
    for table in ("messages", "message_links", "checkpoints", "sessions", "slots"):
        sql = f"SELECT * FROM {table} ORDER BY 1, 2"
        assert (
            copy.connection.execute(sql).fetchall() == source.connection.execute(sql).fetchall()
        ), table
    compared = 0
    for session in source.list_sessions():
        for slot in source.load_slots(session.session_id):
            if slot.head_node_id:
                assert copy.load_chain(slot.head_node_id) == source.load_chain(slot.head_node_id)
        copied, original = (
            [
                (c.model_dump(exclude={"slots"}), {k: v.head_node_id for k, v in c.slots.items()})
                for c in store.list_checkpoints(session.session_id)
            ]
            for store in (copy, source)
        )
        assert copied == original
        compared += len(original)
    assert compared == 13
    source.close()
    copy.close()


def test_to_dataframe_from_the_lean_rows_is_the_frame_the_sql_gives(tmp_path: Path) -> None:
    import pandas as pd
    from pandas.testing import assert_frame_equal

    from agcore_lab.engine.checkpoint_frame import _FRAME_SQL, checkpoints_dataframe

    store, sid = _lab(tmp_path / "lab.db")
    manager = SessionManager(store, watch_interval=None)
    other = manager.create_sync(Agent(name="other", model=ScriptedModel(lambda m: "x")))
    manager.submit_turn_sync(other, "hello")
    store.connection.execute(
        "UPDATE checkpoints SET label = 'edited' WHERE session_id = ? AND turn_index = 2", (sid,)
    )
    for session in (sid, None):
        fast = checkpoints_dataframe(store, session)
        where, params = ("WHERE session_id = ?", [session]) if session else ("", [])
        by_sql = store.read_dataframe(f"{_FRAME_SQL} {where} ORDER BY ckpt_id DESC", params)
        by_sql["created_at"] = pd.to_datetime(by_sql["created_at"], format="ISO8601", utc=True)
        assert len(fast) == (4 if session else 6)
        assert_frame_equal(fast, by_sql)
    store.close()

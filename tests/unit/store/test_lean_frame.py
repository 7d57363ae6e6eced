"""``to_dataframe`` on schema 11 builds its columns from the lean rows a column at a time; the
frame is the one the SQL of the ``checkpoints`` view gives, row for row and dtype for dtype,
in the common case and in the rare ones (a time kept as text, no parent, an id kept as text)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.engine.checkpoint_frame import _FRAME_SQL
from agcore_lab.ids import new_id
from agcore_lab.store._checkpoints import insert_checkpoint
from agcore_lab.store._lean_frame import render_ids
from agcore_lab.store._node_keys import render


def _by_sql(store: SqliteStore, session_id: str | None) -> pd.DataFrame:
    where, params = ("WHERE session_id = ?", [session_id]) if session_id else ("", [])
    frame = store.read_dataframe(f"{_FRAME_SQL} {where} ORDER BY ckpt_id DESC", params)
    frame["created_at"] = pd.to_datetime(frame["created_at"], format="ISO8601", utc=True)
    return frame


def _lab(path: Path) -> tuple[SessionManager, SqliteStore, str, str]:
    store = SqliteStore(path)
    manager = SessionManager(store, watch_interval=None)
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel(lambda m: "hi")))
    for turn in range(4):
        manager.submit_turn_sync(sid, f"question {turn}")
    manager.checkpoint_sync(sid, "mine")
    other = manager.create_sync(Agent(name="b", model=ScriptedModel(lambda m: "yo")))
    manager.submit_turn_sync(other, "hello")
    return manager, store, sid, other


def test_ids_rendered_by_column_are_the_ids_render_writes() -> None:
    rng = random.Random(7)
    keys = [rng.randrange(1, 1 << 63) for _ in range(2000)] + [1, (1 << 63) - 1]
    tails = [rng.randrange(0, 1 << 20) for _ in range(2000)] + [0, (1 << 20) - 1]
    texts = render_ids(np.array(keys, dtype=np.int64), np.array(tails), "ckpt")
    assert list(texts) == [render(k, t, "ckpt") for k, t in zip(keys, tails, strict=True)]
    assert all(type(t) is str for t in texts)


def test_the_frame_of_lean_rows_is_the_frame_of_the_view(tmp_path: Path) -> None:
    manager, store, sid, other = _lab(tmp_path / "lab.db")
    for session_id in (sid, other, None, "ses_nobody"):
        frame = manager.checkpointer.to_dataframe(session_id)
        if session_id == "ses_nobody":
            assert frame.empty and list(frame.columns) == list(_by_sql(store, sid).columns)
            continue
        pd.testing.assert_frame_equal(frame, _by_sql(store, session_id))
    assert manager.checkpointer.to_dataframe(sid)["label"].iloc[0] == "mine"


def test_rare_rows_are_shown_as_the_view_shows_them(tmp_path: Path) -> None:
    manager, store, sid, _ = _lab(tmp_path / "lab.db")
    template = store.list_checkpoints(sid, limit=1)[0]
    odd_time = datetime(2020, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    with store.transaction() as conn:
        # A time the lean row cannot hold as an offset (kept as text), and a root.
        insert_checkpoint(
            conn,
            template.model_copy(
                update={"ckpt_id": new_id("ckpt"), "created_at": odd_time, "turn_index": 40}
            ),
        )
        insert_checkpoint(
            conn,
            template.model_copy(
                update={"ckpt_id": new_id("ckpt"), "parent_ckpt_id": None, "turn_index": 41}
            ),
        )
    texts = store.connection.execute(
        "SELECT count(*) FROM checkpoint_rows WHERE created_text IS NOT NULL"
    ).fetchone()[0]
    assert texts == 1  # the rare row is there
    frame = manager.checkpointer.to_dataframe(sid)
    pd.testing.assert_frame_equal(frame, _by_sql(store, sid))
    assert frame["parent_ckpt_id"].isna().sum() == 2  # the session's first and the new root
    assert odd_time in set(frame["created_at"])
    with store.transaction() as conn:  # an id kept as text: the view's SQL gives the frame
        insert_checkpoint(
            conn, template.model_copy(update={"ckpt_id": "ckpt_by_hand", "turn_index": 42})
        )
    frame = manager.checkpointer.to_dataframe(sid)
    assert "ckpt_by_hand" in set(frame["ckpt_id"])
    pd.testing.assert_frame_equal(frame, _by_sql(store, sid))


def test_listed_rows_built_by_column_are_the_rows_of_the_view(tmp_path: Path) -> None:
    # Every form a lean row takes: heads that are messages, links or none, times with and
    # without microseconds, roots; the rows the listing reads are the view's, value for value.
    from agcore_lab.store._sqlite_checkpoint_reads import old_rows, view_rows

    manager, store, sid, _ = _lab(tmp_path / "lab.db")
    template = store.list_checkpoints(sid, limit=1)[0]
    start = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC)
    heads = [new_id("msg"), new_id("node"), None]
    with store.transaction() as conn:
        for n in range(9):
            slots = {
                slot_id: slot.model_copy(update={"head_node_id": heads[n % 3]})
                for slot_id, slot in template.slots.items()
            }
            insert_checkpoint(
                conn,
                template.model_copy(
                    update={
                        "ckpt_id": new_id("ckpt"),
                        "turn_index": 50 + n,
                        "slots": slots,
                        "created_at": start + timedelta(seconds=n, microseconds=(n % 2) * 7),
                        "parent_ckpt_id": None if n == 4 else template.ckpt_id,
                    }
                ),
            )
    conn = store.connection
    flat = conn.execute("SELECT count(*) FROM checkpoint_rows WHERE state IS NOT NULL")
    assert flat.fetchone()[0] >= 9  # the slots are in flat columns, so rebuilt here
    listed = old_rows(conn, sid, None, None)
    assert listed == view_rows(conn, sid, None, None, None)
    shown = "\n".join(str(row[15]) for row in listed)
    assert all(h in shown for h in heads if h) and '[null,"' in shown
    assert any(row[4].endswith(":00+00:00") for row in listed)  # no microseconds written

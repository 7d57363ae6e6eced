"""Checkpoint listings on PostgreSQL: the fast read, pages, and the DataFrame read by SQL give
what the SQLite store gives."""

from __future__ import annotations

import uuid
from typing import Any

import pandas as pd
import pytest

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.engine.checkpoint_frame import FRAME_COLUMNS as _FRAME_COLUMNS
from agcore_lab.store import _checkpoint_rows
from agcore_lab.store.base import CkptMeta
from agcore_lab.store.postgres import PostgresStore
from agcore_lab.testing.listing_checks import _fields


def _lab(manager: SessionManager) -> str:
    sid = manager.create_sync(Agent(name="a", model=ScriptedModel([f"r{n}" for n in range(9)])))
    for n in range(4):
        manager.submit_turn_sync(sid, f"turn {n}")
    manager.checkpoint_sync(sid, "mine")
    return sid


def test_listing_pages_and_frame_match_the_records(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, schema="t_" + uuid.uuid4().hex[:10])
    try:
        manager = SessionManager(store, watch_interval=None)
        sid = _lab(manager)
        full = manager.list_checkpoints_sync(sid)
        assert [c.turn_index for c in full] == [4, 4, 3, 2, 1, 0]
        older = manager.list_checkpoints_sync(sid, limit=2, before=full[1].ckpt_id)
        assert [_fields(c) for c in older] == [_fields(c) for c in full[2:4]]
        assert [c.turn_index for c in manager.list_checkpoints_sync(sid, before=2)] == [1, 0]
        frame = manager.checkpointer.to_dataframe(sid)
        records = pd.DataFrame(
            [
                {**m.model_dump(include=set(_FRAME_COLUMNS)), "total_tokens": m.total_tokens}
                for m in full
            ],
            columns=_FRAME_COLUMNS,
        )
        pd.testing.assert_frame_equal(frame, records)
        sqlite = SessionManager(SqliteStore(":memory:"))
        sqlite_frame = sqlite.checkpointer.to_dataframe(_lab(sqlite))
        assert list(sqlite_frame.dtypes) == list(frame.dtypes)
    finally:
        store.drop_schema()
        store.close()


def test_rows_postgres_gives_back_take_the_fast_path(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PostgreSQL returns each column as the type it was written with (BIGINT, DOUBLE, TEXT),
    # so no row of a clean listing is validated again, and the records are the validated ones.
    validated: list[str] = []
    real = _checkpoint_rows._validated

    def counting(row: dict[str, Any], states: dict[str, Any]) -> CkptMeta:
        validated.append(row["ckpt_id"])
        return real(row, states)

    store = PostgresStore(postgres_url, schema="t_" + uuid.uuid4().hex[:10])
    try:
        manager = SessionManager(store, watch_interval=None)
        sid = _lab(manager)
        monkeypatch.setattr(_checkpoint_rows, "_validated", counting)
        listed = store.list_checkpoints(sid)
        assert len(listed) == 6 and validated == []
        monkeypatch.setattr(_checkpoint_rows, "_WRITTEN_TYPES", frozenset())  # validate all
        again = store.list_checkpoints(sid)
        assert len(validated) == 6
        assert [_fields(c) for c in again] == [_fields(c) for c in listed]
    finally:
        store.drop_schema()
        store.close()

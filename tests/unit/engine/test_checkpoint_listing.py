"""Listing checkpoints: pages through the checkpointer and the manager, a DataFrame read by SQL
with the columns the records give, and children found by an indexed read."""

from __future__ import annotations

import pandas as pd
import pytest

from agcore_lab import Agent, SessionManager
from agcore_lab.engine.checkpoint_frame import FRAME_COLUMNS as _FRAME_COLUMNS
from agcore_lab.engine.checkpointer import Checkpointer
from agcore_lab.errors import InvalidInputError, SessionNotFoundError
from agcore_lab.store.roles import FrameReader


def _turns(manager: SessionManager, agent: Agent, n: int) -> str:
    sid = manager.create_sync(agent)
    for i in range(n):
        manager.submit_turn_sync(sid, f"turn {i}")
    return sid


def test_pages_put_together_are_the_full_listing(manager: SessionManager, agent: Agent) -> None:
    sid = _turns(manager, agent, 7)
    full = manager.checkpointer.list_checkpoints_sync(sid)
    assert [c.turn_index for c in full] == [7, 6, 5, 4, 3, 2, 1, 0]
    pages, cursor = [], None
    while page := manager.list_checkpoints_sync(sid, limit=3, before=cursor):
        pages.append([c.turn_index for c in page])
        cursor = page[-1].ckpt_id
    assert pages == [[7, 6, 5], [4, 3, 2], [1, 0]]
    assert [c.turn_index for c in manager.list_checkpoints_sync(sid, before=3)] == [2, 1, 0]


def test_paging_refuses_bad_input_and_unknown_sessions(
    manager: SessionManager, agent: Agent
) -> None:
    sid = _turns(manager, agent, 1)
    with pytest.raises(InvalidInputError, match="limit"):
        manager.list_checkpoints_sync(sid, limit=0)
    with pytest.raises(InvalidInputError, match="before must be a checkpoint id"):
        manager.list_checkpoints_sync(sid, before=1.5)  # type: ignore[arg-type]
    with pytest.raises(SessionNotFoundError):
        manager.list_checkpoints_sync("ses_nobody", limit=1)


def _from_records(checkpointer: Checkpointer, session_id: str | None) -> pd.DataFrame:
    rows = [
        {**m.model_dump(include=set(_FRAME_COLUMNS)), "total_tokens": m.total_tokens}
        for m in checkpointer.store.list_checkpoints(session_id)
    ]
    return pd.DataFrame(rows, columns=_FRAME_COLUMNS)


def test_to_dataframe_by_sql_has_the_columns_and_values_of_the_records(
    manager: SessionManager, agent: Agent
) -> None:
    sid = _turns(manager, agent, 3)
    manager.checkpoint_sync(sid, "mine")
    other = _turns(manager, agent, 1)
    checkpointer = manager.checkpointer
    for session_id in (sid, other, None):
        frame = checkpointer.to_dataframe(session_id)
        pd.testing.assert_frame_equal(frame, _from_records(checkpointer, session_id))
    frame = checkpointer.to_dataframe(sid)
    assert list(frame.columns) == _FRAME_COLUMNS and len(frame) == 5
    assert str(frame["created_at"].dt.tz) == "UTC"
    assert frame["label"].iloc[0] == "mine"
    assert (frame["total_tokens"] == frame["prompt_tokens"] + frame["completion_tokens"]).all()
    assert list(checkpointer.to_dataframe("ses_nobody").columns) == _FRAME_COLUMNS


def test_children_are_read_by_the_index_oldest_first(manager: SessionManager, agent: Agent) -> None:
    root = _turns(manager, agent, 1)
    first = manager.checkpointer.list_checkpoints_sync(root)[0].ckpt_id
    kids = [manager.checkpointer.fork_sync(root, first) for _ in range(3)]
    grandchild = manager.create_child_sync(kids[0], agent)
    assert manager.children_sync(root) == kids
    assert manager.children_sync(kids[0]) == [grandchild] and manager.children_sync(kids[1]) == []
    plan = manager.store.connection.execute(  # type: ignore[attr-defined]
        "EXPLAIN QUERY PLAN SELECT session_id FROM sessions WHERE parent_id = ? "
        "ORDER BY created_at, session_id",
        (root,),
    ).fetchall()
    assert "sessions_parent" in " ".join(str(row[-1]) for row in plan)
    with pytest.raises(SessionNotFoundError):
        manager.children_sync("ses_nobody")


def test_to_dataframe_over_a_bare_store_is_the_managers_frame(
    manager: SessionManager, agent: Agent
) -> None:
    # read_dataframe is part of the Store protocol (the FrameReader role): a checkpointer
    # over the bare store reads the same frame by SQL, with no probing for it.
    sid = _turns(manager, agent, 2)
    assert isinstance(manager.store, FrameReader)
    bare = Checkpointer(manager.store)
    frame = bare.to_dataframe(sid)
    pd.testing.assert_frame_equal(frame, manager.checkpointer.to_dataframe(sid))
    assert list(frame["turn_index"]) == [2, 1, 0]

"""Issue 3's acceptance snippet, exactly as written, in a plain synchronous script."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest


def test_the_issue_snippet_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    # -- the snippet, verbatim -------------------------------------------------------------
    from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore

    manager = SessionManager(SqliteStore("lab.db"))
    sid = manager.create_sync(Agent(name="writer", model=ScriptedModel()))
    for i in range(3):
        manager.submit_turn_sync(sid, f"turn {i}")
    ckpts = manager.checkpointer.list_checkpoints_sync(sid)  # newest first
    manager.checkpointer.rollback_sync(sid, ckpts[-1].ckpt_id)
    df = manager.checkpointer.to_dataframe(sid)
    # ----------------------------------------------------------------------------------------

    assert (tmp_path / "lab.db").exists()
    # One checkpoint at creation, one per turn; newest first.
    assert [c.turn_index for c in ckpts] == [3, 2, 1, 0]
    assert [c.message_count for c in ckpts] == [6, 4, 2, 0]
    assert all(c.source == "auto" for c in ckpts)

    # The rollback returned the live session to the oldest checkpoint: before any turn.
    session = manager.get_sync(sid)
    assert session.turn_index == 0
    assert session.messages == []
    assert session.cost_so_far == 0
    # ... and the store too: a new manager on the file recovers it there.
    store = SqliteStore(tmp_path / "lab.db")
    try:
        again = SessionManager(store, agents=[Agent(name="writer")]).recover_sync(sid)
        assert (again.turn_index, again.messages) == (0, [])
    finally:
        store.close()

    # The DataFrame: the four checkpoints plus the rollback marker, newest first.
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 5
    for column in (
        "ckpt_id",
        "session_id",
        "parent_ckpt_id",
        "turn_index",
        "created_at",
        "label",
        "source",
        "message_count",
        "total_tokens",
        "cost_usd",
    ):
        assert column in df.columns
    assert set(df["session_id"]) == {sid}
    assert df["turn_index"].tolist() == [0, 3, 2, 1, 0]
    assert df["source"].tolist() == ["rollback", "auto", "auto", "auto", "auto"]
    assert df["ckpt_id"].is_monotonic_decreasing
    assert df.loc[0, "parent_ckpt_id"] == ckpts[-1].ckpt_id  # the rollback's target
    assert df["total_tokens"].tolist()[1:] == sorted(df["total_tokens"].tolist()[1:])[::-1]

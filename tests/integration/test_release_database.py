"""A database file written by the release before issue 13 (commit 1fa7d84) opens, is migrated
without losing anything, and its interrupted turn can be resumed and rolled back.

The file ``tests/data/release_1fa7d84.db`` was made by that release's own code
(``tests/data/make_release_db.py`` says how); it holds checkpoints whose ``pending_json`` is the
old, unversioned record and ``pending_calls`` rows without a state version.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from agcore_lab import (
    Agent,
    ScriptedModel,
    SessionManager,
    SessionState,
    SqliteStore,
    Tool,
    ToolCall,
)
from agcore_lab.store.migrations import MIGRATIONS

RELEASE_DB = Path(__file__).parent.parent / "data" / "release_1fa7d84.db"


@pytest.fixture
def old_file(tmp_path: Path) -> Path:
    path = tmp_path / "release.db"
    shutil.copy(RELEASE_DB, path)
    return path


def _agent(runs: list[dict[str, object]]) -> Agent:
    def transfer(to: str, amount: int) -> str:
        """Move money."""
        runs.append({"to": to, "amount": amount})
        return f"sent {amount} to {to}"

    call = ToolCall(name="transfer", arguments={"to": "u2", "amount": 100})
    model = ScriptedModel(lambda m: call if m[-1].role == "user" else "done")
    return Agent(
        name="bank", model=model, tools=[Tool.from_function(transfer, requires_approval=True)]
    )


def _raw(path: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


def test_the_release_file_is_migrated_and_nothing_is_lost(old_file: Path) -> None:
    assert _raw(old_file, "PRAGMA user_version") == [(5,)]
    before_rows = _raw(old_file, "SELECT * FROM pending_calls ORDER BY interrupt_id")
    before_ckpts = {
        ckpt: json.loads(text)
        for ckpt, text in _raw(
            old_file, "SELECT ckpt_id, pending_json FROM checkpoints WHERE pending_json IS NOT NULL"
        )
    }
    assert before_ckpts and all("version" not in old for old in before_ckpts.values())

    store = SqliteStore(old_file)
    assert store.schema_version == len(MIGRATIONS)
    # Rows: every column kept, the state version added.
    after_rows = _raw(old_file, "SELECT * FROM pending_calls ORDER BY interrupt_id")
    assert [r[: len(before_rows[0])] for r in after_rows] == before_rows
    assert {r[-1] for r in after_rows} == {2}
    # Checkpoints: the old record became the version-2 state, every field kept.
    for ckpt_id, old in before_ckpts.items():
        (text,) = _raw(
            old_file, f"SELECT pending_json FROM checkpoints WHERE ckpt_id = '{ckpt_id}'"
        )[0]
        stored = json.loads(str(text))
        assert stored["version"] == 2
        public = {k: v for k, v in stored.items() if k != "detail"}
        assert SessionState.parse(public).pending_tool_call.interrupt_id == old["interrupt_id"]
        call = store.get_checkpoint(ckpt_id).pending  # type: ignore[union-attr]
        assert call is not None
        again = json.loads(call.model_dump_json())
        for key, value in old.items():
            assert again[key] == value, key
    store.close()


def test_the_interrupted_turn_of_the_release_resumes_and_rolls_back(old_file: Path) -> None:
    runs: list[dict[str, object]] = []
    manager = SessionManager(SqliteStore(old_file), agents=[_agent(runs)])
    waiting = manager.store.list_pending()
    assert len(waiting) == 1
    call = waiting[0]
    result = manager.resume_sync(call.session_id, call.run_id, call.interrupt_id, "approve")
    assert result.reply == "done" and runs == [{"to": "u2", "amount": 100}]
    assert manager.store.get_pending(call.interrupt_id).status == "EXECUTED"  # type: ignore[union-attr]
    # Roll back to the release's checkpoint that held the call: it waits again, as a new one.
    held = [c for c in manager.checkpointer.list_checkpoints_sync(call.session_id) if c.pending][-1]
    manager.checkpointer.rollback_sync(call.session_id, held.ckpt_id)
    again = manager.get_sync(call.session_id).pending_tool_call()
    assert again is not None and again.status == "PENDING_APPROVAL"
    assert again.previous_interrupt_id == call.interrupt_id and again.previously_executed
    manager.store.close()  # type: ignore[attr-defined]


def test_old_files_keep_opening_after_the_migration(old_file: Path) -> None:
    SqliteStore(old_file).close()
    store = SqliteStore(old_file)  # the second open runs nothing
    assert store.schema_version == len(MIGRATIONS)
    assert len(store.list_sessions()) == 2
    store.close()

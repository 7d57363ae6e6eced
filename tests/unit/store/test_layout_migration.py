"""Schema 11 (issue 16's lean layout) converts a file in place and changes nothing it reads.

``tests/data/schema10_lab.db`` was written by the code of schema 10 (tests/data/
make_schema10_lab.py, run with that code) together with everything it read back
(``schema10_lab.json``): sessions, chains (with links from a merge and hand-written ids),
chain tails, checkpoints, pending calls, model calls, and the rows of the pandas-facing tables.
Opened by today's code, the copy is migrated and must read back identically — the old table
names now views over ``chain_nodes`` — and must keep working (resume the pending call, roll
back, take a turn).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from pathlib import Path
from types import ModuleType

import pytest

from agcore_lab import SqliteStore
from agcore_lab.store.migrations import MIGRATIONS

DATA = Path(__file__).resolve().parents[2] / "data"


def _maker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_lab", DATA / "make_schema10_lab.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def migrated(tmp_path: Path) -> Path:
    path = tmp_path / "lab.db"
    shutil.copy(DATA / "schema10_lab.db", path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 10
    return path


def test_a_schema_ten_lab_reads_back_identically_after_the_migration(migrated: Path) -> None:
    store = SqliteStore(migrated)
    assert store.schema_version == len(MIGRATIONS) >= 11
    expected = json.loads((DATA / "schema10_lab.json").read_text(encoding="utf-8"))
    got = json.loads(json.dumps(_maker().dump(store), sort_keys=True))
    for sid, session in expected["sessions"].items():
        assert got["sessions"][sid] == session, sid
    assert got["pending"] == expected["pending"]
    assert got["tables"] == expected["tables"]
    kinds = dict(store.connection.execute("SELECT name, type FROM sqlite_master").fetchall())
    assert kinds["messages"] == kinds["message_links"] == "view"
    assert "messages_m010" not in kinds and "message_links_m010" not in kinds
    store.close()


def test_a_migrated_lab_keeps_working(migrated: Path) -> None:
    maker = _maker()
    store = SqliteStore(migrated)
    from agcore_lab import Agent, ScriptedModel, SessionManager, Tool

    runs: list[int] = []

    def transfer(amount: int) -> str:
        """Move money."""
        runs.append(amount)
        return f"sent {amount}"

    agent = Agent(
        name="bank",
        model=ScriptedModel(lambda messages: "done"),
        tools=[Tool.from_function(transfer, requires_approval=True)],
    )
    manager = SessionManager(store, agents=[agent], watch_interval=None)
    (call,) = store.list_pending()
    sid = call.session_id
    done = manager.resume_sync(sid, call.run_id, call.interrupt_id, "approve")
    assert done.reply == "done" and runs == [100]
    ckpts = manager.checkpointer.list_checkpoints_sync(sid)
    manager.checkpointer.rollback_sync(sid, ckpts[-1].ckpt_id)
    after = manager.submit_turn_sync(sid, "once more")
    chain = [m.id for _, m in store.load_chain(store.load_slots(sid)[0].head_node_id)]  # type: ignore[arg-type]
    assert chain[-2:] == [m.id for m in after.messages][-2:]
    assert len(set(chain)) == len(chain)
    # The hand-written ids' session is untouched and can be deleted cleanly.
    assert [m.id for _, m in store.load_chain("n3")] == ["m1", "m2", "m1"]
    assert store.delete_session("plain")
    assert store.load_chain("n3") == []
    rows = store.connection.execute("SELECT count(*) FROM messages WHERE session_id = 'plain'")
    assert rows.fetchone()[0] == 0
    assert maker.dump(store)["sessions"].keys() == {sid, *store.child_ids(sid)}
    store.close()

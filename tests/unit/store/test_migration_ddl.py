"""All SQLite migration DDL lives in ``store/migrations.py``, and moving it there changed
nothing a database holds: a fresh file migrated to schema 10 has the very ``sqlite_master`` a
file made before the move had (the text of every CREATE statement, byte for byte)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import agcore_lab.store as store_package
from agcore_lab.store.migrations import MIGRATIONS

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "schema_m010.json"


def _schema_after(count: int, path: Path) -> list[list[str]]:
    conn = sqlite3.connect(path, isolation_level=None)
    for number, migration in enumerate(MIGRATIONS[:count], start=1):
        conn.execute("BEGIN IMMEDIATE")
        migration(conn)
        conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")
    rows = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
    ).fetchall()
    conn.close()
    return [list(row) for row in rows]


def test_schema_ten_is_byte_identical_to_the_one_made_before_the_ddl_moved(
    tmp_path: Path,
) -> None:
    # tests/data/schema_m010.json was written from a fresh file by the code before the move.
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert len(golden) == 35
    assert _schema_after(10, tmp_path / "fresh.db") == golden


def test_no_store_module_but_migrations_holds_sqlite_ddl() -> None:
    ddl = re.compile(r"\b(CREATE (UNIQUE )?(TABLE|INDEX|VIEW)|ALTER TABLE|DROP INDEX)\b")
    holders = sorted(
        path.name
        for path in Path(store_package.__file__).parent.glob("*.py")
        if path.name not in ("migrations.py", "_pg_schema.py")  # PostgreSQL has its own
        and ddl.search(path.read_text(encoding="utf-8"))
    )
    assert holders == []


GOLDEN_11 = GOLDEN.with_name("schema_m011.json")


def test_schema_eleven_is_the_lean_layout_written_down(tmp_path: Path) -> None:
    # tests/data/schema_m011.json: a fresh file at schema 11 (issue 16's layout). A change to
    # m011's DDL after release would change what old files became: add a migration instead.
    golden = json.loads(GOLDEN_11.read_text(encoding="utf-8"))
    got = _schema_after(11, tmp_path / "fresh.db")
    assert got == golden
    kinds = {name: kind for kind, name, _, _ in got}
    for view in ("messages", "message_links", "checkpoints", "checkpoints_keyed"):
        assert kinds[view] == "view"
    assert "checkpoints_ckpt_id" not in kinds  # no index on text ids any more
    assert {"chain_nodes", "checkpoint_rows", "session_keys", "names"} <= set(kinds)


GOLDEN_12 = GOLDEN.with_name("schema_m012.json")


def test_schema_twelve_is_the_calls_on_nodes_layout_written_down(tmp_path: Path) -> None:
    # tests/data/schema_m012.json: a fresh file at schema 12 (issue 15: a turn's usual model
    # call rides on its answer's chain_nodes row). Add a migration rather than change m012.
    golden = json.loads(GOLDEN_12.read_text(encoding="utf-8"))
    got = _schema_after(12, tmp_path / "fresh.db")
    assert got == golden
    kinds = {name: kind for kind, name, _, _ in got}
    assert kinds["model_calls"] == "view" and kinds["call_rows"] == "table"
    nodes = next(sql for _, name, _, sql in got if name == "chain_nodes")
    assert nodes.rstrip().endswith("call TEXT)")  # the one column the turn's row gains


GOLDEN_13 = GOLDEN.with_name("schema_m013.json")


def test_schema_thirteen_adds_the_blob_pins_and_changes_nothing_else(tmp_path: Path) -> None:
    # tests/data/schema_m013.json: a fresh file at schema 13 (issue 15: a session pins the call
    # blobs it wrote, so a commit needs no data_version read). Add a migration, not an edit.
    golden = json.loads(GOLDEN_13.read_text(encoding="utf-8"))
    got = _schema_after(13, tmp_path / "fresh.db")
    assert got == golden
    twelve = json.loads(GOLDEN_12.read_text(encoding="utf-8"))
    assert [row for row in got if row not in twelve] == [
        [
            "table",
            "call_blob_pins",
            "call_blob_pins",
            "CREATE TABLE call_blob_pins (\n    session_id TEXT NOT NULL,\n"
            "    hash       TEXT NOT NULL,\n    PRIMARY KEY (session_id, hash)\n) WITHOUT ROWID",
        ]
    ]
    assert [row for row in twelve if row not in got] == []

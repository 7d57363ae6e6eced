"""Numbered, append-only schema migrations for :class:`~agcore_lab.store.sqlite.SqliteStore`.

Migration *n* brings the schema from version *n - 1* to *n* (``PRAGMA user_version``). Never
edit a released migration: add the next one. Later issues append migrations for checkpoints,
approvals, vectors and graphs.

Tables are flat and pandas-friendly: ``pd.read_sql("select * from sessions", conn)`` is
useful as it is. JSON columns hold nested detail only.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

from agcore_lab.errors import StorageError
from agcore_lab.store._vectors import move_vectors_into_blocks
from agcore_lab.store.migrations._run import run as _run
from agcore_lab.store.migrations.blob_pins import m013_blob_pins as _m013_blob_pins
from agcore_lab.store.migrations.lean import m011_lean_layout as _m011_lean_layout
from agcore_lab.store.migrations.lean_calls import m012_lean_calls as _m012_lean_calls

__all__ = ["MIGRATIONS", "apply_migrations"]


def _m001_core(conn: sqlite3.Connection) -> None:
    _run(
        conn,
        """
        CREATE TABLE sessions (
            session_id        TEXT PRIMARY KEY,
            agent_name        TEXT NOT NULL,
            parent_id         TEXT,
            created_at        TEXT NOT NULL,
            updated_at        TEXT NOT NULL,
            turn_index        INTEGER NOT NULL DEFAULT 0,
            current_slot_id   TEXT NOT NULL,
            last_summary_turn INTEGER,
            prompt_tokens     INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd          REAL NOT NULL DEFAULT 0,
            spend_json        TEXT NOT NULL DEFAULT '{}',
            metadata_json     TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX sessions_parent ON sessions(parent_id);

        CREATE TABLE messages (
            message_id   TEXT PRIMARY KEY,
            session_id   TEXT NOT NULL,
            parent_id    TEXT,
            depth        INTEGER,
            role         TEXT NOT NULL,
            content      TEXT,
            tool_call_id TEXT,
            tool_name    TEXT,
            created_us   INTEGER NOT NULL,
            extra_json   TEXT
        ) WITHOUT ROWID;

        CREATE TABLE message_links (
            node_id        TEXT PRIMARY KEY,
            parent_node_id TEXT,
            message_id     TEXT NOT NULL,
            depth          INTEGER NOT NULL,
            session_id     TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX message_links_session ON message_links(session_id);
        CREATE INDEX message_links_message ON message_links(message_id);

        CREATE TABLE slots (
            session_id       TEXT NOT NULL,
            slot_id          TEXT NOT NULL,
            parent_slot_id   TEXT,
            fork_point       INTEGER NOT NULL DEFAULT 0,
            merge_base       INTEGER NOT NULL DEFAULT 0,
            mode             TEXT NOT NULL,
            head_node_id     TEXT,
            summary_override TEXT,
            pinned_json      TEXT NOT NULL DEFAULT '[]',
            recent_window    INTEGER NOT NULL,
            created_at       TEXT NOT NULL,
            updated_at       TEXT NOT NULL,
            PRIMARY KEY (session_id, slot_id)
        );

        CREATE TABLE memory_log (
            session_id    TEXT NOT NULL,
            version       INTEGER NOT NULL,
            key           TEXT NOT NULL,
            value_json    TEXT,
            metadata_json TEXT NOT NULL DEFAULT '{}',
            created_at    TEXT NOT NULL,
            updated_at    TEXT NOT NULL,
            deleted       INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (session_id, version)
        );
        CREATE INDEX memory_log_key ON memory_log(session_id, key, version);

        CREATE VIEW memory AS
            SELECT m.session_id, m.key, m.value_json, m.metadata_json, m.created_at,
                   m.updated_at, m.version
            FROM memory_log m
            WHERE m.deleted = 0
              AND m.version = (SELECT max(version) FROM memory_log l
                               WHERE l.session_id = m.session_id AND l.key = m.key);
        """,
    )


# The DDL of m002-m005, m007 and m008 as it was first written (beside the tables' helpers):
# SQLite keeps each CREATE statement's text in sqlite_master, so it stays byte for byte.

_M002_CHECKPOINTS = """
CREATE TABLE checkpoints (
    session_id        TEXT NOT NULL,
    ckpt_id           TEXT NOT NULL,
    parent_ckpt_id    TEXT,
    turn_index        INTEGER NOT NULL,
    created_at        TEXT NOT NULL,
    label             TEXT,
    source            TEXT NOT NULL,
    message_count     INTEGER NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd          REAL NOT NULL,
    agent_name        TEXT NOT NULL,
    current_slot_id   TEXT NOT NULL,
    last_summary_turn INTEGER,
    memory_version    INTEGER NOT NULL,
    slots_json        TEXT NOT NULL,
    spend_json        TEXT NOT NULL,
    PRIMARY KEY (session_id, ckpt_id)
) WITHOUT ROWID;
CREATE TABLE slot_states (
    state_hash TEXT PRIMARY KEY,
    state_json TEXT NOT NULL
) WITHOUT ROWID
"""

_M003_APPROVALS = """
CREATE TABLE pending_calls (
    interrupt_id          TEXT PRIMARY KEY,
    session_id            TEXT NOT NULL,
    run_id                TEXT NOT NULL,
    tool_call_id          TEXT NOT NULL,
    tool_name             TEXT NOT NULL,
    tool_args_json        TEXT NOT NULL,
    status                TEXT NOT NULL,
    created_at            TEXT NOT NULL,
    expires_at            TEXT,
    decided_at            TEXT,
    decision_json         TEXT,
    result_json           TEXT,
    updated_at            TEXT NOT NULL,
    remaining_json        TEXT NOT NULL DEFAULT '[]',
    previous_interrupt_id TEXT,
    previously_executed   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX pending_calls_session ON pending_calls(session_id, status);
ALTER TABLE checkpoints ADD COLUMN pending_json TEXT
"""

_M004_VECTORS = """
CREATE TABLE vector_namespaces (
    namespace  TEXT PRIMARY KEY,
    dim        INTEGER NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE vectors (
    seq           INTEGER PRIMARY KEY,
    namespace     TEXT NOT NULL,
    doc_id        TEXT NOT NULL,
    source_id     TEXT,
    chunk_index   INTEGER,
    start_index   INTEGER,
    end_index     INTEGER,
    mime_type     TEXT NOT NULL,
    content       TEXT NOT NULL,
    metadata_json TEXT NOT NULL,
    embedding     BLOB NOT NULL
);
CREATE UNIQUE INDEX vectors_doc ON vectors(namespace, doc_id);
CREATE INDEX vectors_namespace ON vectors(namespace)
"""

_M005_GRAPH = """
CREATE TABLE kg_entities (
    namespace       TEXT NOT NULL,
    entity_id       TEXT NOT NULL,
    name            TEXT NOT NULL,
    entity_type     TEXT NOT NULL,
    description     TEXT NOT NULL,
    properties_json TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (namespace, entity_id)
) WITHOUT ROWID;
CREATE INDEX kg_entities_type ON kg_entities(namespace, entity_type);
CREATE TABLE kg_entity_tags (
    namespace TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    position  INTEGER NOT NULL,
    tag       TEXT NOT NULL,
    PRIMARY KEY (namespace, entity_id, position)
) WITHOUT ROWID;
CREATE INDEX kg_entity_tags_tag ON kg_entity_tags(namespace, tag);
CREATE TABLE kg_relations (
    namespace       TEXT NOT NULL,
    source          TEXT NOT NULL,
    relation_type   TEXT NOT NULL,
    target          TEXT NOT NULL,
    weight          REAL NOT NULL,
    properties_json TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (namespace, source, relation_type, target)
) WITHOUT ROWID;
CREATE INDEX kg_relations_target ON kg_relations(namespace, target)
"""


def _m002_checkpoints(conn: sqlite3.Connection) -> None:
    _run(conn, _M002_CHECKPOINTS)


def _m003_approvals(conn: sqlite3.Connection) -> None:
    # Pending tool calls, and the checkpoints' column for the call a checkpoint holds.
    _run(conn, _M003_APPROVALS)


def _m004_vectors(conn: sqlite3.Connection) -> None:
    _run(conn, _M004_VECTORS)


def _m005_graph(conn: sqlite3.Connection) -> None:
    _run(conn, _M005_GRAPH)


def _m006_shared_sessions(conn: sqlite3.Connection) -> None:
    # Optimistic concurrency (a version per session), turn leases, executor leases of approved
    # calls, and the change log other processes read.
    _run(
        conn,
        """
        ALTER TABLE sessions ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE sessions ADD COLUMN lease_holder TEXT;
        ALTER TABLE sessions ADD COLUMN lease_expires_at TEXT;
        ALTER TABLE pending_calls ADD COLUMN executor TEXT;
        ALTER TABLE pending_calls ADD COLUMN executor_expires_at TEXT;
        CREATE TABLE change_log (
            seq            INTEGER PRIMARY KEY,
            session_id     TEXT NOT NULL,
            kind           TEXT NOT NULL,
            ckpt_id        TEXT,
            new_session_id TEXT,
            origin         TEXT NOT NULL
        );
        """,
    )


_M007_MODEL_CALLS = """
CREATE TABLE model_calls (
    session_id        TEXT NOT NULL,
    call_id           TEXT NOT NULL,
    slot_id           TEXT NOT NULL,
    turn_index        INTEGER NOT NULL,
    kind              TEXT NOT NULL,
    model             TEXT NOT NULL,
    status            TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd          REAL NOT NULL,
    started_us        INTEGER NOT NULL,
    latency_us        INTEGER NOT NULL,
    ttft_us           INTEGER,
    finish_reason     TEXT,
    request_hash      BLOB NOT NULL,
    anchor_node       TEXT,
    response_id       TEXT,
    parts_json        TEXT NOT NULL,
    detail_json       TEXT,
    PRIMARY KEY (session_id, call_id)
) WITHOUT ROWID;
CREATE TABLE call_blobs (
    hash TEXT PRIMARY KEY,
    body TEXT NOT NULL
) WITHOUT ROWID
"""


def _m007_model_calls(conn: sqlite3.Connection) -> None:
    _run(conn, _M007_MODEL_CALLS)


# Schema 4 -> blocks: the block table, every stored vector moved into blocks (in insertion
# order), then ``vectors`` becomes ``vector_docs`` and the ``vectors`` view.
_M008_BLOCKS = """
CREATE TABLE vector_blocks (
    block      INTEGER PRIMARY KEY,
    namespace  TEXT NOT NULL,
    count      INTEGER NOT NULL,
    embeddings BLOB NOT NULL
);
CREATE INDEX vector_blocks_namespace ON vector_blocks(namespace);
ALTER TABLE vectors ADD COLUMN block INTEGER;
ALTER TABLE vectors ADD COLUMN slot INTEGER
"""
_M008_VIEW = """
DROP INDEX vectors_namespace;
ALTER TABLE vectors DROP COLUMN embedding;
ALTER TABLE vectors RENAME TO vector_docs;
CREATE INDEX vector_docs_block ON vector_docs(namespace, block);
CREATE VIEW vectors AS
    SELECT d.seq, d.namespace, d.doc_id, d.source_id, d.chunk_index, d.start_index,
           d.end_index, d.mime_type, d.content, d.metadata_json,
           substr(b.embeddings, d.slot * 4 * n.dim + 1, 4 * n.dim) AS embedding
    FROM vector_docs d
    JOIN vector_blocks b ON b.block = d.block
    JOIN vector_namespaces n ON n.namespace = d.namespace
"""


def _m008_vector_blocks(conn: sqlite3.Connection) -> None:
    _run(conn, _M008_BLOCKS)
    move_vectors_into_blocks(conn)
    _run(conn, _M008_VIEW)


def _pending_v2(text: str) -> str | None:
    # A checkpoint's pending call as written before m010 (the record's fields, no version) as
    # the version-2 state. Anything else is left as it is: a read names it, nothing guesses.
    try:
        old = json.loads(text)
    except ValueError:
        return None
    if not isinstance(old, dict) or "version" in old:
        return None
    state = {
        "version": 2,
        "pending_tool_call": {
            key: old.get(key)
            for key in (
                "interrupt_id",
                "tool_name",
                "tool_args",
                "status",
                "expires_at",
                "decision",
                "result",
                "updated_at",
            )
        },
        "run_context": {"thread_id": old.get("session_id"), "run_id": old.get("run_id")},
        "detail": {
            "tool_call_id": old.get("tool_call_id"),
            "created_at": old.get("created_at"),
            "decided_at": old.get("decided_at"),
            "remaining_calls": old.get("remaining_calls", []),
            "previous_interrupt_id": old.get("previous_interrupt_id"),
            "previously_executed": old.get("previously_executed", False),
            "executor": old.get("executor"),
            "executor_expires_at": old.get("executor_expires_at"),
        },
    }
    return json.dumps(state, ensure_ascii=False, separators=(",", ":"))


def _m009_versioned_state(conn: sqlite3.Connection) -> None:
    # Pending calls are stored as the version-2 state (rows carry its version; checkpoints'
    # pending_json holds the state itself), and a slot remembers its merge strategy.
    _run(
        conn,
        """
        ALTER TABLE pending_calls ADD COLUMN state_version INTEGER;
        UPDATE pending_calls SET state_version = 2;
        ALTER TABLE slots ADD COLUMN merge_strategy TEXT
        """,
    )
    rows = conn.execute(
        "SELECT session_id, ckpt_id, pending_json FROM checkpoints WHERE pending_json IS NOT NULL"
    ).fetchall()
    for session_id, ckpt_id, text in rows:
        converted = _pending_v2(text)
        if converted is not None:
            conn.execute(
                "UPDATE checkpoints SET pending_json = ? WHERE session_id = ? AND ckpt_id = ?",
                (converted, session_id, ckpt_id),
            )


def _m010_checkpoint_id_index(conn: sqlite3.Connection) -> None:
    # Checkpoints are looked up by id alone (rollback, fork, preview, export); the primary
    # key starts with session_id, so without this index each lookup scans the table.
    _run(conn, "CREATE INDEX IF NOT EXISTS checkpoints_ckpt_id ON checkpoints(ckpt_id)")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _m001_core,
    _m002_checkpoints,
    _m003_approvals,
    _m004_vectors,
    _m005_graph,
    _m006_shared_sessions,
    _m007_model_calls,
    _m008_vector_blocks,
    _m009_versioned_state,
    _m010_checkpoint_id_index,
    _m011_lean_layout,
    _m012_lean_calls,
    _m013_blob_pins,
]


def apply_migrations(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date inside one write transaction; return the version.

    Safe when several processes open a new file at once: the version is read again after the
    write lock is taken, so each migration runs exactly once.
    """
    if conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS):
        return len(MIGRATIONS)
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise StorageError(
                f"database schema version {version} is newer than this agcore_lab knows "
                f"({len(MIGRATIONS)}); upgrade agcore_lab",
                schema_version=version,
            )
        for number in range(version, len(MIGRATIONS)):
            MIGRATIONS[number](conn)
            conn.execute(f"PRAGMA user_version = {number + 1}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return len(MIGRATIONS)

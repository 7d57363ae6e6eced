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
from agcore_lab.store._node_keys import digits_sql, id_sql
from agcore_lab.store._sqlite_checkpoints import write_checkpoint
from agcore_lab.store._sqlite_nodes import write_old_rows
from agcore_lab.store._vectors import move_vectors_into_blocks

__all__ = ["MIGRATIONS", "apply_migrations"]


def _run(conn: sqlite3.Connection, script: str) -> None:
    # Not executescript(): it commits first, and a migration must stay in its transaction.
    for statement in script.split(";\n"):
        if statement.strip():
            conn.execute(statement)


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


# Schema 11 (issue 16, lean storage): messages and links become rows of one rowid table keyed
# by the integer their id encodes (store/_node_keys.py), with integer session numbers, role
# codes and times as offsets; ``messages`` and ``message_links`` are views giving the old
# columns, so ``pd.read_sql("select * from messages", conn)`` reads as before.
_M011_NODES = """
CREATE TABLE chain_nodes (
    node         INTEGER PRIMARY KEY,
    tail         INTEGER,
    session      INTEGER NOT NULL,
    parent       INTEGER,
    depth        INTEGER,
    role         INTEGER,
    content      TEXT,
    created      INTEGER,
    message      INTEGER,
    tool_call_id TEXT,
    tool_name    TEXT,
    extra_json   TEXT
);
CREATE TABLE session_keys (
    key        INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE
);
CREATE TABLE text_ids (
    key INTEGER PRIMARY KEY,
    id  TEXT NOT NULL UNIQUE
)
"""


def _parent_sql(row: str, column: str) -> str:
    return (
        f"coalesce((SELECT {id_sql('p')} FROM chain_nodes p WHERE p.node = {row}.{column}), "
        f"(SELECT id FROM text_ids WHERE key = {row}.{column}))"
    )


_M011_VIEWS = f"""
CREATE VIEW messages AS
    SELECT {id_sql("m")} AS message_id,
           s.session_id AS session_id,
           {_parent_sql("m", "parent")} AS parent_id,
           m.depth AS depth,
           CASE m.role WHEN 0 THEN 'assistant' WHEN 1 THEN 'user' WHEN 2 THEN 'system'
                       WHEN 3 THEN 'tool' END AS role,
           m.content AS content,
           m.tool_call_id AS tool_call_id,
           m.tool_name AS tool_name,
           m.created + CASE WHEN m.node > 0 THEN m.node / 1000 ELSE 0 END AS created_us,
           m.extra_json AS extra_json
    FROM chain_nodes m JOIN session_keys s ON s.key = m.session
    WHERE m.role IS NOT NULL;
CREATE VIEW message_links AS
    SELECT {id_sql("l")} AS node_id,
           {_parent_sql("l", "parent")} AS parent_node_id,
           {_parent_sql("l", "message")} AS message_id,
           l.depth AS depth,
           s.session_id AS session_id
    FROM chain_nodes l JOIN session_keys s ON s.key = l.session
    WHERE l.role IS NULL
"""


_M011_CHECKPOINTS = """
CREATE TABLE checkpoint_rows (
    ckpt              INTEGER PRIMARY KEY,
    tail              INTEGER,
    session           INTEGER NOT NULL,
    parent            INTEGER,
    parent_tail       INTEGER,
    turn_index        INTEGER NOT NULL,
    created           INTEGER,
    source            INTEGER NOT NULL,
    message_count     INTEGER NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd          REAL NOT NULL,
    agent             INTEGER,
    current_slot      INTEGER,
    last_summary_turn INTEGER,
    memory_version    INTEGER NOT NULL,
    head              INTEGER,
    head_tail         INTEGER,
    state             INTEGER,
    model             INTEGER,
    requests          INTEGER,
    label             TEXT,
    created_text      TEXT,
    slots_json        TEXT,
    spend_json        TEXT,
    pending_json      TEXT
);
CREATE INDEX checkpoint_rows_session ON checkpoint_rows(session);
CREATE TABLE checkpoint_ids (
    key     INTEGER PRIMARY KEY,
    ckpt_id TEXT NOT NULL UNIQUE
);
CREATE TABLE names (
    key  INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
)
"""


def _name_sql(column: str) -> str:
    return f"(SELECT name FROM names WHERE key = c.{column})"


def _ckpt_sql(key: str, tail: str) -> str:
    return (
        f"CASE WHEN {tail} IS NULL THEN (SELECT ckpt_id FROM checkpoint_ids WHERE key = {key}) "
        f"ELSE 'ckpt_' || {digits_sql(key, tail)} END"
    )


_US = "(c.created + CASE WHEN c.ckpt > 0 THEN c.ckpt / 1000 ELSE 0 END)"
_HEAD = (
    "CASE WHEN c.head IS NULL THEN NULL ELSE CASE WHEN c.head_tail >= 1048576 THEN 'node_' "
    f"ELSE 'msg_' END || {digits_sql('c.ckpt - c.head', 'c.head_tail & 1048575')} END"
)
_M011_CHECKPOINT_VIEWS = f"""
CREATE VIEW checkpoints_keyed AS
    SELECT s.session_id AS session_id,
           {_ckpt_sql("c.ckpt", "c.tail")} AS ckpt_id,
           CASE WHEN c.parent IS NULL THEN NULL
                ELSE {_ckpt_sql("c.ckpt - c.parent", "c.parent_tail")} END AS parent_ckpt_id,
           c.turn_index AS turn_index,
           coalesce(c.created_text,
                    strftime('%Y-%m-%dT%H:%M:%S', {_US} / 1000000, 'unixepoch')
                    || CASE WHEN {_US} % 1000000 = 0 THEN ''
                            ELSE printf('.%06d', {_US} % 1000000) END
                    || '+00:00') AS created_at,
           c.label AS label,
           CASE c.source WHEN 0 THEN 'auto' WHEN 1 THEN 'manual' WHEN 2 THEN 'fork'
                         WHEN 3 THEN 'rollback' ELSE c.source END AS source,
           c.message_count AS message_count,
           c.prompt_tokens AS prompt_tokens,
           c.completion_tokens AS completion_tokens,
           c.cost_usd AS cost_usd,
           {_name_sql("agent")} AS agent_name,
           {_name_sql("current_slot")} AS current_slot_id,
           c.last_summary_turn AS last_summary_turn,
           c.memory_version AS memory_version,
           CASE WHEN c.state IS NULL THEN c.slots_json
                ELSE json_object({_name_sql("current_slot")},
                                 json_array({_HEAD}, {_name_sql("state")})) END AS slots_json,
           CASE WHEN c.model IS NULL THEN c.spend_json
                ELSE json_object({_name_sql("model")},
                                 json_array(c.prompt_tokens, c.completion_tokens, c.requests,
                                            c.cost_usd)) END AS spend_json,
           c.pending_json AS pending_json,
           c.ckpt AS ckpt_key,
           c.session AS session_key
    FROM checkpoint_rows c JOIN session_keys s ON s.key = c.session;
CREATE VIEW checkpoints AS
    SELECT session_id, ckpt_id, parent_ckpt_id, turn_index, created_at, label, source,
           message_count, prompt_tokens, completion_tokens, cost_usd, agent_name,
           current_slot_id, last_summary_turn, memory_version, slots_json, spend_json,
           pending_json
    FROM checkpoints_keyed
"""
# A row edited by hand through the view keeps what was written (the flat columns give way to
# the JSON and text ones); deleting through the view deletes the row.
_M011_CHECKPOINT_TRIGGERS = (
    """
CREATE TRIGGER checkpoints_update INSTEAD OF UPDATE ON checkpoints BEGIN
    INSERT OR IGNORE INTO names (name) SELECT NEW.agent_name WHERE NEW.agent_name IS NOT NULL;
    INSERT OR IGNORE INTO names (name)
        SELECT NEW.current_slot_id WHERE NEW.current_slot_id IS NOT NULL;
    UPDATE checkpoint_rows SET
        turn_index = NEW.turn_index,
        created = CASE WHEN NEW.created_at IS OLD.created_at THEN created END,
        created_text = CASE WHEN NEW.created_at IS OLD.created_at THEN created_text
                            ELSE NEW.created_at END,
        label = NEW.label,
        source = CASE NEW.source WHEN 'auto' THEN 0 WHEN 'manual' THEN 1 WHEN 'fork' THEN 2
                                 WHEN 'rollback' THEN 3 ELSE NEW.source END,
        message_count = NEW.message_count,
        prompt_tokens = NEW.prompt_tokens,
        completion_tokens = NEW.completion_tokens,
        cost_usd = NEW.cost_usd,
        agent = (SELECT key FROM names WHERE name = NEW.agent_name),
        current_slot = (SELECT key FROM names WHERE name = NEW.current_slot_id),
        last_summary_turn = NEW.last_summary_turn,
        memory_version = NEW.memory_version,
        head = NULL, head_tail = NULL, state = NULL, slots_json = NEW.slots_json,
        model = NULL, requests = NULL, spend_json = NEW.spend_json,
        pending_json = NEW.pending_json
    WHERE ckpt = (SELECT ckpt_key FROM checkpoints_keyed
                  WHERE session_id = OLD.session_id AND ckpt_id = OLD.ckpt_id);
END""",
    """
CREATE TRIGGER checkpoints_delete INSTEAD OF DELETE ON checkpoints BEGIN
    DELETE FROM checkpoint_rows WHERE ckpt = (SELECT ckpt_key FROM checkpoints_keyed
                                              WHERE session_id = OLD.session_id
                                                AND ckpt_id = OLD.ckpt_id);
END""",
)


def _m011_checkpoints(conn: sqlite3.Connection) -> None:
    _run(conn, "ALTER TABLE checkpoints RENAME TO checkpoints_m010")
    _run(conn, _M011_CHECKPOINTS)
    rows = conn.execute(
        "SELECT session_id, ckpt_id, parent_ckpt_id, turn_index, created_at, label, source, "
        "message_count, prompt_tokens, completion_tokens, cost_usd, agent_name, "
        "current_slot_id, last_summary_turn, memory_version, slots_json, spend_json, "
        "pending_json FROM checkpoints_m010 ORDER BY ckpt_id"
    )
    while batch := rows.fetchmany(5000):
        for row in batch:
            write_checkpoint(conn, row)
    _run(conn, "DROP TABLE checkpoints_m010")
    _run(conn, _M011_CHECKPOINT_VIEWS)
    for trigger in _M011_CHECKPOINT_TRIGGERS:
        conn.execute(trigger)


def _m011_lean_layout(conn: sqlite3.Connection) -> None:
    _m011_chain_nodes(conn)
    _m011_checkpoints(conn)


def _m011_chain_nodes(conn: sqlite3.Connection) -> None:
    # In place, in the migration's transaction: the old tables renamed, the new ones filled
    # from them in id order (so rowid pages fill), then dropped.
    _run(
        conn,
        """
        DROP INDEX message_links_session;
        DROP INDEX message_links_message;
        ALTER TABLE messages RENAME TO messages_m010;
        ALTER TABLE message_links RENAME TO message_links_m010
        """,
    )
    _run(conn, _M011_NODES)
    messages = conn.execute(
        "SELECT message_id, session_id, parent_id, depth, role, content, tool_call_id, "
        "tool_name, created_us, extra_json FROM messages_m010 ORDER BY message_id"
    )
    while batch := messages.fetchmany(5000):
        write_old_rows(conn, batch, [])
    links = conn.execute(
        "SELECT node_id, parent_node_id, message_id, depth, session_id FROM message_links_m010 "
        "ORDER BY node_id"
    ).fetchall()
    write_old_rows(conn, [], links)
    _run(conn, "DROP TABLE messages_m010;\nDROP TABLE message_links_m010")
    _run(conn, _M011_VIEWS)


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

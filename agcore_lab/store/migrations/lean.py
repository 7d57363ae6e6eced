"""Schema 11 (issue 16, lean storage): the SQLite migration to the lean layout.

Messages and links become rows of one rowid table keyed by the integer their id encodes
(``store/_node_keys.py``), checkpoints lean ``checkpoint_rows``; the old tables become views
with the old columns (see docs/storage.md). Part of the migrations package: all SQLite DDL
lives in ``agcore_lab/store/migrations/``.
"""

from __future__ import annotations

import sqlite3

from agcore_lab.store._node_keys import digits_sql, id_sql
from agcore_lab.store._sqlite_checkpoints import write_checkpoint
from agcore_lab.store._sqlite_nodes import write_old_rows
from agcore_lab.store.migrations._run import run as _run

__all__ = ["m011_lean_layout"]


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


def m011_lean_layout(conn: sqlite3.Connection) -> None:
    """Schema 11: the lean layout (see the module docstring), converting a file in place."""
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

"""Deleting model-call records: with the checkpoints they led to (prune), or with their
session. A call is a ``call_rows`` row (``model_calls`` on PostgreSQL) or rides on its
answer's node row (SQLite, see :mod:`agcore_lab.store._calls_lean`): both go."""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Sequence

from agcore_lab.store._call_blobs import forget
from agcore_lab.store._calls import calls_table, checkpoint_ids, stamp
from agcore_lab.store._calls_lean_rows import (
    clear_node_calls,
    forget_node_calls,
    node_call_stamps,
)

__all__ = ["delete_calls_of_checkpoints", "delete_session_calls"]

# On SQLite ``model_calls`` is the view over both places, so one statement covers both; a
# blob pinned to a session stays while the session lives (schema 13, see _call_blobs.Interned).
_ORPHAN_BLOBS = """
DELETE FROM call_blobs WHERE hash NOT IN (
    SELECT hash FROM call_blob_pins
    UNION SELECT p.value FROM model_calls c, json_each(c.parts_json, '$.p') p
    UNION SELECT p.value FROM model_calls c, json_each(c.parts_json, '$[2]') p
    UNION SELECT json_extract(parts_json, '$.T') FROM model_calls
        WHERE json_extract(parts_json, '$.T') IS NOT NULL
    UNION SELECT json_extract(parts_json, '$.r') FROM model_calls
        WHERE json_extract(parts_json, '$.r') IS NOT NULL
    UNION SELECT json_extract(parts_json, '$[1]') FROM model_calls
        WHERE json_extract(parts_json, '$[1]') IS NOT NULL)
"""
_UNPIN = "DELETE FROM call_blob_pins WHERE session_id = ?"
_ORPHAN_BLOBS_PG = """
DELETE FROM call_blobs WHERE hash NOT IN (
    SELECT p.value FROM model_calls c,
        jsonb_array_elements_text(coalesce(c.parts_json::jsonb -> 'p', '[]'::jsonb)) p
    UNION SELECT p.value FROM model_calls c,
        jsonb_array_elements_text(coalesce(c.parts_json::jsonb -> 2, '[]'::jsonb)) p
    UNION SELECT parts_json::jsonb ->> 'T' FROM model_calls
        WHERE parts_json::jsonb ->> 'T' IS NOT NULL
    UNION SELECT parts_json::jsonb ->> 'r' FROM model_calls
        WHERE parts_json::jsonb ->> 'r' IS NOT NULL
    UNION SELECT parts_json::jsonb ->> 1 FROM model_calls
        WHERE parts_json::jsonb ->> 1 IS NOT NULL)
"""


def _postgres(conn: sqlite3.Connection) -> bool:
    return getattr(conn, "dialect", "sqlite") == "postgresql"


def _drop_orphan_blobs(conn: sqlite3.Connection) -> None:
    conn.execute(_ORPHAN_BLOBS_PG if _postgres(conn) else _ORPHAN_BLOBS)


def delete_calls_of_checkpoints(
    conn: sqlite3.Connection, session_id: str, ckpt_ids: Sequence[str] | None
) -> int:
    """Delete the calls that led to the given checkpoints (to any checkpoint for ``None``).

    Run it before deleting the checkpoints: a call led to the first checkpoint after it.
    Content blobs stay (they are shared and small) until their session is deleted.
    """
    forget(conn, session_id)  # the calls that referenced its blobs may go
    ckpts = checkpoint_ids(conn, {session_id})[session_id]
    if not ckpts:
        return 0
    doomed = set(ckpts) if ckpt_ids is None else set(ckpt_ids)
    stamps = [stamp(c) for c in ckpts]

    def led_to_doomed(call_stamp: str) -> bool:
        index = bisect.bisect_right(stamps, call_stamp)
        return index < len(ckpts) and ckpts[index] in doomed

    table = calls_table(conn)
    rows = conn.execute(f"SELECT call_id FROM {table} WHERE session_id = ?", (session_id,))
    gone = [call_id for (call_id,) in rows if led_to_doomed(stamp(call_id))]
    conn.executemany(
        f"DELETE FROM {table} WHERE session_id = ? AND call_id = ?",
        [(session_id, call_id) for call_id in gone],
    )
    if _postgres(conn):
        return len(gone)
    nodes = [
        node for call_stamp, node in node_call_stamps(conn, session_id) if led_to_doomed(call_stamp)
    ]
    clear_node_calls(conn, nodes)
    return len(gone) + len(nodes)


def delete_session_calls(conn: sqlite3.Connection, session_id: str) -> None:
    """Delete every call of a session and its blob pins (and the blobs no other call or
    session uses)."""
    forget(conn, session_id)
    table = calls_table(conn)
    count = conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,)).rowcount
    if not _postgres(conn):
        count += forget_node_calls(conn, session_id)
        count += conn.execute(_UNPIN, (session_id,)).rowcount
    if count:
        _drop_orphan_blobs(conn)

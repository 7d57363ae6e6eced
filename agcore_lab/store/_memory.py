"""Session memory in SQLite: an append-only log with a version number per session.

Each write appends a row ``(session_id, version, key, value, ...)``; a delete appends a row
marked ``deleted``. The live entries are the newest row per key (the ``memory`` view); the
entries "as of version N" are the newest row per key with ``version <= N`` — which is how a
checkpoint names a memory state without copying it.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from agcore_lab.store.base import MemoryEntry

__all__ = ["append_memory", "delete_memory", "latest_version", "read_memory", "write_memory"]


def latest_version(conn: sqlite3.Connection, session_id: str) -> int:
    """The number of memory writes of the session so far."""
    row = conn.execute(
        "SELECT coalesce(max(version), 0) FROM memory_log WHERE session_id = ?", (session_id,)
    ).fetchone()
    return int(row[0])


def write_memory(
    conn: sqlite3.Connection,
    session_id: str,
    key: str,
    value_json: str,
    metadata_json: str,
    now: str,
) -> MemoryEntry:
    """Append a write of ``key`` (keeping its first ``created_at``); return the entry."""
    version = latest_version(conn, session_id) + 1
    first = conn.execute(
        "SELECT created_at FROM memory WHERE session_id = ? AND key = ?", (session_id, key)
    ).fetchone()
    created = first[0] if first else now
    conn.execute(
        "INSERT INTO memory_log (session_id, version, key, value_json, metadata_json, created_at, "
        "updated_at, deleted) VALUES (?,?,?,?,?,?,?,0)",
        (session_id, version, key, value_json, metadata_json, created, now),
    )
    return MemoryEntry(
        key=key,
        value=json.loads(value_json),
        metadata=json.loads(metadata_json),
        created_at=datetime.fromisoformat(created),
        updated_at=datetime.fromisoformat(now),
        version=version,
    )


def append_memory(
    conn: sqlite3.Connection,
    session_id: str,
    key: str,
    value_json: str,
    metadata_json: str,
    now: str,
    *,
    after: int,
    unless_set: bool = False,
) -> int:
    """:func:`write_memory` when the session's latest memory version (``after``) was read in
    this transaction already; returns the new version and builds no entry. A session with no
    memory write yet has no first ``created_at`` to keep: nothing is read then.
    ``unless_set``: write nothing (and return ``after``) when ``key`` has a live entry."""
    first = (
        None
        if after == 0
        else conn.execute(
            "SELECT created_at FROM memory WHERE session_id = ? AND key = ?", (session_id, key)
        ).fetchone()
    )
    if unless_set and first is not None:
        return after
    conn.execute(
        "INSERT INTO memory_log (session_id, version, key, value_json, metadata_json, created_at, "
        "updated_at, deleted) VALUES (?,?,?,?,?,?,?,0)",
        (session_id, after + 1, key, value_json, metadata_json, first[0] if first else now, now),
    )
    return after + 1


def delete_memory(conn: sqlite3.Connection, session_id: str, key: str, now: str) -> bool:
    """Append a delete of ``key``; ``False`` if it was not set."""
    if not conn.execute(
        "SELECT 1 FROM memory WHERE session_id = ? AND key = ?", (session_id, key)
    ).fetchone():
        return False
    conn.execute(
        "INSERT INTO memory_log (session_id, version, key, value_json, metadata_json, created_at, "
        "updated_at, deleted) VALUES (?,?,?,NULL,'{}',?,?,1)",
        (session_id, latest_version(conn, session_id) + 1, key, now, now),
    )
    return True


def read_memory(
    conn: sqlite3.Connection, session_id: str, at_version: int | None
) -> list[MemoryEntry]:
    """Live entries sorted by key; as they were at ``at_version`` when given."""
    limit = at_version if at_version is not None else 2**62
    cursor = conn.execute(
        """
        SELECT m.* FROM memory_log m
        WHERE m.session_id = ? AND m.version <= ? AND m.deleted = 0
          AND m.version = (SELECT max(version) FROM memory_log l
                           WHERE l.session_id = m.session_id AND l.key = m.key
                             AND l.version <= ?)
        ORDER BY m.key
        """,
        (session_id, limit, limit),
    )
    cursor.row_factory = sqlite3.Row
    return [
        MemoryEntry(
            key=row["key"],
            value=json.loads(row["value_json"]),
            metadata=json.loads(row["metadata_json"]),
            created_at=datetime.fromisoformat(row["created_at"]),
            updated_at=datetime.fromisoformat(row["updated_at"]),
            version=row["version"],
        )
        for row in cursor.fetchall()
    ]

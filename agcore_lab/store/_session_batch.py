"""Many new sessions in one write transaction (the children of one dispatch).

Each session goes in as :meth:`~agcore_lab.store.sqlite.SqliteStore.create_session` would put
it — its row, its first slots, its ``created`` change and its first checkpoint — but the rows
of one table go in as one ``executemany``, so the batch shares its pages and its commit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta

from agcore_lab.errors import ConflictError
from agcore_lab.store._changes import KEEP_CHANGES, log_change
from agcore_lab.store._checkpoints import INSERT_SLOT, insert_checkpoints, slot_values
from agcore_lab.store._sessions import SESSION_COLUMNS, session_values
from agcore_lab.store.roles.sessions import NewSession

__all__ = ["insert_sessions"]

_INSERT = (
    f"INSERT INTO sessions ({', '.join(SESSION_COLUMNS)}, version, lease_holder, "
    f"lease_expires_at) VALUES ({', '.join('?' * (len(SESSION_COLUMNS) + 3))})"
)
_CHANGE = "INSERT INTO change_log (session_id, kind, ckpt_id, new_session_id, origin) VALUES "
_CHUNK = 500  # ids per IN (...) probe: well under every backend's parameter limit


def _refuse_taken(conn: sqlite3.Connection, ids: Sequence[str]) -> None:
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise ConflictError("the same session id is given twice", session_id=twice)
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        row = conn.execute(
            f"SELECT session_id FROM sessions WHERE session_id IN ({', '.join('?' * len(chunk))})"
            " LIMIT 1",
            chunk,
        ).fetchone()
        if row is not None:
            raise ConflictError("a session with this id exists", session_id=row[0])


def insert_sessions(
    conn: sqlite3.Connection,
    sessions: Sequence[NewSession],
    origin: str,
    *,
    lease_holder: str | None,
    ttl: float,
    now: datetime,
) -> None:
    """Insert ``sessions`` inside the caller's write transaction (``ConflictError`` before
    anything is written when an id is taken or given twice)."""
    _refuse_taken(conn, [s.record.session_id for s in sessions])
    until = (now + timedelta(seconds=ttl)).isoformat() if lease_holder is not None else None
    conn.executemany(
        _INSERT,
        [(*session_values(s.record), s.record.version, lease_holder, until) for s in sessions],
    )
    conn.executemany(
        INSERT_SLOT,
        [slot_values(slot, s.record.session_id) for s in sessions for slot in s.slots],
    )
    postgres = getattr(conn, "dialect", "sqlite") == "postgresql"
    if not postgres:  # the numbers their checkpoint rows need (schema 11), in one statement
        conn.executemany(
            "INSERT OR IGNORE INTO session_keys (session_id) VALUES (?)",
            [(s.record.session_id,) for s in sessions if s.checkpoint is not None],
        )
    changes: list[tuple[str, str, str | None]] = []
    for s in sessions:
        changes.append((s.record.session_id, "created", None))
        if s.checkpoint is not None:
            changes.append((s.record.session_id, "checkpoint", s.checkpoint.ckpt_id))
    # Their first checkpoints in one go (each distinct slot state once, one executemany).
    insert_checkpoints(conn, [s.checkpoint for s in sessions if s.checkpoint is not None])
    if postgres:
        for session_id, kind, ckpt_id in changes:  # each takes the feed's order lock
            log_change(conn, session_id, kind, origin, ckpt_id=ckpt_id)
        return
    conn.executemany(
        _CHANGE + "(?, ?, ?, NULL, ?)", [(sid, kind, ckpt, origin) for sid, kind, ckpt in changes]
    )
    # Keep the log short, as log_change does every 32 rows.
    conn.execute(
        "DELETE FROM change_log WHERE seq <= (SELECT max(seq) FROM change_log) - ?",
        (KEEP_CHANGES,),
    )

"""The change log in SQLite: one small row per state-changing write, read by other processes.

Every write that changes what a view shows (a turn, a checkpoint, a rollback, a fork, an
approval, a session created or destroyed) appends ``(seq, session_id, kind, ckpt_id, origin)``
in the same transaction. A manager in another process polls ``PRAGMA data_version`` — a counter
SQLite bumps when *another* connection commits, read without touching the file — and only then
reads the rows after the last ``seq`` it saw (on PostgreSQL the rows commit in ``seq`` order, see
:func:`log_change`, so a reader never skips one that commits late). The log keeps its newest
rows only (the oldest are deleted, so ``seq``, the rowid, only ever grows).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from agcore_lab.store.base import ChangeRecord

__all__ = ["KEEP_CHANGES", "log_change", "log_changes", "read_changes"]

# Watchers look a few times a second, so only the newest changes are ever read; a watcher that
# fell further behind than this (a suspended kernel) re-reads what it shows.
KEEP_CHANGES = 128


_INSERT = (
    "INSERT INTO change_log (session_id, kind, ckpt_id, new_session_id, origin) "
    "VALUES (?, ?, ?, ?, ?) RETURNING seq"
)
# Writers of different sessions run side by side on PostgreSQL: without a lock held to the
# commit, seq 11 could commit before seq 10, and a reader that saw 11 would never look back
# for 10. The lock is taken in the same statement (the CTE yields its row only once the lock
# is held, before the new row's seq is drawn), so change rows commit in seq order.
_INSERT_PG = (
    "WITH feed_lock AS MATERIALIZED ("
    "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.changes'))) "
    "INSERT INTO change_log (session_id, kind, ckpt_id, new_session_id, origin) "
    "SELECT ?, ?, ?, ?, ? FROM feed_lock RETURNING seq"
)


def log_change(
    conn: sqlite3.Connection,
    session_id: str,
    kind: str,
    origin: str,
    *,
    ckpt_id: str | None = None,
    new_session_id: str | None = None,
) -> None:
    """Append one change row inside the caller's write transaction (its last statement)."""
    postgres = getattr(conn, "dialect", "sqlite") == "postgresql"
    row = conn.execute(
        _INSERT_PG if postgres else _INSERT, (session_id, kind, ckpt_id, new_session_id, origin)
    ).fetchone()
    seq = int(row[0])
    if seq % 32 == 0:  # keep the log short: readers only ever need the recent rows
        conn.execute("DELETE FROM change_log WHERE seq <= ?", (seq - KEEP_CHANGES,))


def log_changes(
    conn: sqlite3.Connection,
    session_id: str,
    changes: Sequence[tuple[str, str | None]],
    origin: str,
) -> None:
    """Append a session's change rows ``(kind, ckpt_id)``, in order, in one ``INSERT``
    inside the caller's write transaction (SQLite: on PostgreSQL each row goes through
    :func:`log_change`, which takes the feed's order lock)."""
    # A row without a checkpoint says NULL in the statement (sqlite3 binds None slowly).
    rows = conn.execute(
        "INSERT INTO change_log (session_id, kind, ckpt_id, new_session_id, origin) VALUES "
        + ", ".join(
            "(?, ?, ?, NULL, ?)" if c is not None else "(?, ?, NULL, NULL, ?)" for _, c in changes
        )
        + " RETURNING seq",
        [
            value
            for kind, ckpt_id in changes
            for value in (
                (session_id, kind, ckpt_id, origin)
                if ckpt_id is not None
                else (session_id, kind, origin)
            )
        ],
    ).fetchall()
    last = max(int(row[0]) for row in rows)
    if any(int(row[0]) % 32 == 0 for row in rows):  # as log_change keeps the log short
        conn.execute("DELETE FROM change_log WHERE seq <= ?", (last - KEEP_CHANGES,))


def read_changes(conn: sqlite3.Connection, after: int, limit: int = 1000) -> list[ChangeRecord]:
    """Change rows with ``seq > after``, oldest first."""
    rows = conn.execute(
        "SELECT seq, session_id, kind, ckpt_id, new_session_id, origin FROM change_log "
        "WHERE seq > ? ORDER BY seq LIMIT ?",
        (after, limit),
    ).fetchall()
    return [
        ChangeRecord(
            seq=r[0], session_id=r[1], kind=r[2], ckpt_id=r[3], new_session_id=r[4], origin=r[5]
        )
        for r in rows
    ]

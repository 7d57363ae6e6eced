"""The locks a PostgreSQL write takes, in one order, before it reads anything.

SQLite serializes every writer of a file (``BEGIN IMMEDIATE``). On PostgreSQL, writers of
different sessions run side by side; each write transaction first locks what it will touch,
so that its reads (taken after the locks, each statement with a fresh snapshot under ``READ
COMMITTED``) see the last committed state and nothing moves under its compare-and-set:

1. the *collection* lock — a schema-wide advisory lock, taken shared by writes that point at
   rows other sessions may own (message rows stored once, model-call blobs) and exclusive by
   the write that deletes such rows (deleting a session), so a deletion never removes a row a
   concurrent write is about to point at;
2. session rows, ``SELECT ... FOR UPDATE`` in id order (the version compare-and-set, leases,
   checkpoints, rollbacks and forks);
3. a per-session advisory lock on its memory log (a session's memory may be written before
   its row exists, so there may be no row to lock), in id order;
4. pending tool-call rows, ``SELECT ... FOR UPDATE`` in id order (resume, settle): of any
   number of concurrent resumes exactly one sees the call still pending;
5. last, just before its change-feed row, the change-feed lock, held to the commit (see
   :mod:`agcore_lab.store._changes`), so change rows become visible in ``seq`` order.

Every transaction takes its locks in this order and never goes back to an earlier kind, so
two writers cannot wait for each other in a cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["take_locks"]

_COLLECT_KEY = "hashtext(current_schema() || '.collect')"
_MEMORY_KEY = "hashtext(current_schema() || '.memory')"


def take_locks(
    conn: Any,
    *,
    sessions: Sequence[str] = (),
    memory: Sequence[str] = (),
    pending: Sequence[str] = (),
    shares: bool = False,
    collects: bool = False,
) -> None:
    """Take a write's locks on a raw psycopg connection inside its transaction."""
    if collects:
        conn.execute(f"SELECT pg_advisory_xact_lock({_COLLECT_KEY})")
    elif shares:
        conn.execute(f"SELECT pg_advisory_xact_lock_shared({_COLLECT_KEY})")
    if sessions:
        conn.execute(
            "SELECT 1 FROM sessions WHERE session_id = ANY(%s) ORDER BY session_id FOR UPDATE",
            (sorted(set(sessions)),),
        )
    for session_id in sorted(set(memory)):
        conn.execute(f"SELECT pg_advisory_xact_lock({_MEMORY_KEY}, hashtext(%s))", (session_id,))
    if pending:
        conn.execute(
            "SELECT 1 FROM pending_calls WHERE interrupt_id = ANY(%s) "
            "ORDER BY interrupt_id FOR UPDATE",
            (sorted(set(pending)),),
        )

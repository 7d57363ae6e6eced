"""Session rows in SQLite: column-named writes, the version compare-and-set, turn leases.

Every state-changing write of a session runs ``UPDATE sessions ... SET version = version + 1
WHERE session_id = ? AND version = ?`` inside its write transaction, and refuses to write when
another holder's turn lease is live. A refused write raises before anything else of its
transaction is kept (the caller's ``ROLLBACK`` drops its message rows too), so a stale writer
never leaves orphans and never overwrites.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from typing import Any, TypeAlias

from pydantic import TypeAdapter

from agcore_lab.errors import SessionBusyError, SessionNotFoundError, StaleSessionError
from agcore_lab.llm.usage import ModelSpend
from agcore_lab.store._iso import fresh_iso, iso
from agcore_lab.store._json import compact
from agcore_lab.store._trusted import fields_of
from agcore_lab.store.base import SessionRecord

__all__ = [
    "SESSION_COLUMNS",
    "NodeSeed",
    "acquire_lease",
    "check_writable",
    "insert_session",
    "release_lease",
    "renew_lease",
    "session_from_row",
    "session_values",
    "stored_version",
    "update_session",
    "update_session_leased",
]

_SPEND = TypeAdapter(dict[str, ModelSpend])
SESSION_COLUMNS = (
    "session_id",
    "agent_name",
    "parent_id",
    "created_at",
    "updated_at",
    "turn_index",
    "current_slot_id",
    "last_summary_turn",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "spend_json",
    "metadata_json",
)
_SET = ", ".join(f"{c} = ?" for c in SESSION_COLUMNS[1:])


def _values(r: SessionRecord) -> tuple[Any, ...]:
    f = fields_of(r)
    return (
        f["session_id"],
        f["agent_name"],
        f["parent_id"],
        iso(f["created_at"]),  # the same object in every commit of the session
        fresh_iso(f["updated_at"]),  # often the object its slots' rows have too
        f["turn_index"],
        f["current_slot_id"],
        f["last_summary_turn"],
        r.prompt_tokens,
        r.completion_tokens,
        r.cost_usd,
        _SPEND.dump_json(f["spend"]).decode(),
        compact(f["metadata"]),
    )


session_values = _values
"""The ``sessions`` row of a record, in :data:`SESSION_COLUMNS` order."""


def session_from_row(row: sqlite3.Row) -> SessionRecord:
    """The record of a ``sessions`` row."""
    return SessionRecord(
        session_id=row["session_id"],
        agent_name=row["agent_name"],
        parent_id=row["parent_id"],
        created_at=datetime.fromisoformat(row["created_at"]),
        updated_at=datetime.fromisoformat(row["updated_at"]),
        turn_index=row["turn_index"],
        current_slot_id=row["current_slot_id"],
        last_summary_turn=row["last_summary_turn"],
        spend=_SPEND.validate_json(row["spend_json"]),
        metadata=json.loads(row["metadata_json"]),
        version=row["version"],
    )


def insert_session(conn: sqlite3.Connection, record: SessionRecord) -> None:
    """Insert a new session row at the record's version."""
    names = ", ".join((*SESSION_COLUMNS, "version"))
    marks = ", ".join("?" * (len(SESSION_COLUMNS) + 1))
    conn.execute(
        f"INSERT INTO sessions ({names}) VALUES ({marks})", (*_values(record), record.version)
    )


def stored_version(conn: sqlite3.Connection, session_id: str) -> int | None:
    """The stored version, or ``None`` when there is no such session (one indexed read)."""
    row = conn.execute(
        "SELECT version FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return int(row[0]) if row else None


def _lease_row(conn: sqlite3.Connection, session_id: str) -> tuple[int, str | None, str | None]:
    row = conn.execute(
        "SELECT version, lease_holder, lease_expires_at FROM sessions WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        raise SessionNotFoundError(
            "no such session in the store; it may have been destroyed by another writer",
            session_id=session_id,
        )
    return int(row[0]), row[1], row[2]


def _refuse_if_held(
    session_id: str, holder: str | None, lease: tuple[str | None, str | None], now: datetime
) -> None:
    lease_holder, lease_until = lease
    if lease_holder is None or lease_holder == holder or lease_until is None:
        return
    if lease_until > now.isoformat():
        raise _busy(session_id, lease_holder, lease_until)


def _busy(session_id: str, holder: str, until: str) -> SessionBusyError:
    return SessionBusyError(
        f"another writer ({holder}) is running a turn in this session until at least {until}; "
        "wait for it (submit_turn(..., wait=seconds)) or try again later",
        session_id=session_id,
        holder=holder,
        lease_expires_at=until,
    )


def check_writable(
    conn: sqlite3.Connection,
    session_id: str,
    expected: int,
    *,
    holder: str | None,
    now: datetime,
) -> None:
    """Raise unless the session is at version ``expected`` and no other holder's lease is live.

    Raises:
        SessionNotFoundError: The session is gone.
        SessionBusyError: Another holder's turn lease is live.
        StaleSessionError: The stored version is not ``expected``.
    """
    version, *lease = _lease_row(conn, session_id)
    _refuse_if_held(session_id, holder, (lease[0], lease[1]), now)
    if version != expected:
        raise StaleSessionError(
            f"this write is based on version {expected} of the session, but the store holds "
            f"version {version}: another writer changed it. Call refresh() to load the stored "
            "state, then try again",
            session_id=session_id,
            expected_version=expected,
            stored_version=version,
        )


def update_session(
    conn: sqlite3.Connection,
    record: SessionRecord,
    *,
    holder: str | None,
    now: datetime,
) -> int:
    """Write ``record`` over the stored row if it is at ``record.version``; return the new
    version (``record.version + 1``)."""
    check_writable(conn, record.session_id, record.version, holder=holder, now=now)
    conn.execute(
        f"UPDATE sessions SET {_SET}, version = version + 1 WHERE session_id = ?",
        (*_values(record)[1:], record.session_id),
    )
    return record.version + 1


_WRITABLE = (
    "session_id = ? AND version = ? AND (lease_holder IS NULL OR lease_holder = ? "
    "OR lease_expires_at IS NULL OR lease_expires_at <= ?)"
)
# SQLite rewrites an index entry of every column an UPDATE sets, changed or not: a write
# that keeps the parent (every turn) leaves parent_id out of its SET, and the parent index's
# page out of the commit, by naming the parent in its WHERE instead.
_SET_KEEPING_PARENT = ", ".join(f"{c} = ?" for c in SESSION_COLUMNS[1:] if c != "parent_id")
_KEEPS_PARENT = " AND parent_id IS ?"
_UPDATE_CAS = f"UPDATE sessions SET {_SET}, version = version + 1 WHERE {_WRITABLE} RETURNING 1"
# The lease a write may go ahead under is the holder's, none, or one run out: giving it up
# leaves the session free in every case.
_UPDATE_CAS_RELEASE = (
    f"UPDATE sessions SET {_SET}, version = version + 1, lease_holder = NULL, "
    f"lease_expires_at = NULL WHERE {_WRITABLE} RETURNING 1"
)
# (A turn's commit inserts its messages next: the update also reads what that insert looks
# up first, whether any node id is kept as text and the session's number; see NodeSeed.)
_SEED = (
    " RETURNING (SELECT 1 FROM text_ids LIMIT 1), "
    "(SELECT key FROM session_keys WHERE session_keys.session_id = sessions.session_id)"
)
_KEPT_CAS = (
    f"UPDATE sessions SET {_SET_KEEPING_PARENT}, version = version + 1 "
    f"WHERE {_WRITABLE}{_KEEPS_PARENT}{_SEED}"
)
_KEPT_CAS_RELEASE = (
    f"UPDATE sessions SET {_SET_KEEPING_PARENT}, version = version + 1, lease_holder = NULL, "
    f"lease_expires_at = NULL WHERE {_WRITABLE}{_KEEPS_PARENT}{_SEED}"
)


NodeSeed: TypeAlias = tuple[bool, int | None]
"""What a SQLite turn commit's session update read for the message insert after it: whether
any node id is kept as text (``text_ids``) and the session's number (``session_keys``), so
the insert does not read them again (``Keys(seed=...)``, :mod:`agcore_lab.store._sqlite_nodes`).
"""


def update_session_leased(
    conn: sqlite3.Connection,
    record: SessionRecord,
    *,
    holder: str | None,
    now: datetime,
    release: bool = False,
) -> tuple[int, NodeSeed | None]:
    """:func:`update_session` in one statement when the write may go ahead (the usual case),
    and with ``release`` giving ``holder``'s lease up in the same statement; the new version,
    and on SQLite the :data:`NodeSeed` the same statement read (``None`` otherwise). A
    refused write reads the row to say why, as ``update_session`` does."""
    values = _values(record)[1:]
    stamp = fresh_iso(now)  # the commit's memory rows have the same time
    where = (record.session_id, record.version, holder, stamp)
    releasing = release and holder is not None
    if getattr(conn, "dialect", "sqlite") != "postgresql":  # the parent kept (see _KEPT_CAS)
        kept = (*values[:1], *values[2:])
        statement = _KEPT_CAS_RELEASE if releasing else _KEPT_CAS
        found = conn.execute(statement, (*kept, *where, record.parent_id)).fetchall()
        if found:  # (fetchall: a RETURNING statement is run to its end)
            return record.version + 1, (found[0][0] is not None, found[0][1])
    if releasing:
        done = conn.execute(_UPDATE_CAS_RELEASE, (*values, *where)).fetchall()
    else:
        done = conn.execute(_UPDATE_CAS, (*values, *where)).fetchall()
    if done:
        return record.version + 1, None
    version = update_session(conn, record, holder=holder, now=now)  # raises why it is refused
    if release and holder is not None:
        release_lease(conn, record.session_id, holder)
    return version, None


def acquire_lease(
    conn: sqlite3.Connection, session_id: str, holder: str, ttl: float, now: datetime
) -> int:
    """Take (or renew) the session's turn lease for ``holder``; return the stored version."""
    # One statement when the lease is free, ours or run out (the usual case); the row is
    # read only to say why it is refused.
    taken = conn.execute(
        "UPDATE sessions SET lease_holder = ?, lease_expires_at = ? WHERE session_id = ? "
        "AND (lease_holder IS NULL OR lease_holder = ? OR lease_expires_at IS NULL "
        "OR lease_expires_at <= ?) RETURNING version",
        (holder, (now + timedelta(seconds=ttl)).isoformat(), session_id, holder, now.isoformat()),
    ).fetchall()
    if taken:
        return int(taken[0][0])
    version, *lease = _lease_row(conn, session_id)
    _refuse_if_held(session_id, holder, (lease[0], lease[1]), now)
    conn.execute(
        "UPDATE sessions SET lease_holder = ?, lease_expires_at = ? WHERE session_id = ?",
        (holder, (now + timedelta(seconds=ttl)).isoformat(), session_id),
    )
    return version


def renew_lease(
    conn: sqlite3.Connection, session_id: str, holder: str, ttl: float, now: datetime
) -> bool:
    """Push the lease's deadline on; ``False`` if ``holder`` no longer holds it."""
    return (
        conn.execute(
            "UPDATE sessions SET lease_expires_at = ? WHERE session_id = ? AND lease_holder = ?",
            ((now + timedelta(seconds=ttl)).isoformat(), session_id, holder),
        ).rowcount
        == 1
    )


def release_lease(conn: sqlite3.Connection, session_id: str, holder: str) -> None:
    """Give the lease up (a no-op if ``holder`` does not hold it any more)."""
    conn.execute(
        "UPDATE sessions SET lease_holder = NULL, lease_expires_at = NULL "
        "WHERE session_id = ? AND lease_holder = ?",
        (session_id, holder),
    )

"""Pending tool calls in SQLite, and the compare-and-set that makes exactly one resume win.

Every decision runs inside one write transaction: read the row, check it, and move it on with
``UPDATE ... WHERE status = <expected>``. SQLite lets one writer at a time hold the file's
write lock (``BEGIN IMMEDIATE``); on PostgreSQL the transaction first locks the call's row
(``SELECT ... FOR UPDATE``, see :mod:`agcore_lab.store._pg_locks`). Either way — threads,
processes or machines alike — of any number of concurrent resumes exactly one sees the
expected status and wins; the others see the new status and get a conflict.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from agcore_lab.errors import (
    ConflictError,
    CorruptRecordError,
    GoneError,
    RunNotFoundError,
)
from agcore_lab.ids import new_id
from agcore_lab.store._json import compact
from agcore_lab.store.pending import (
    STATE_VERSION,
    TRANSITIONS,
    PendingToolCall,
    state_from_json,
)

__all__ = [
    "RunNotFoundError",
    "as_expired",
    "decide_pending",
    "expire_overdue",
    "insert_pending",
    "read_pending",
    "renew_execution",
    "restore_pending",
]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


_PENDING_COLUMNS = (
    "interrupt_id, session_id, run_id, tool_call_id, tool_name, tool_args_json, status, "
    "created_at, expires_at, decided_at, decision_json, result_json, updated_at, "
    "remaining_json, previous_interrupt_id, previously_executed, executor, executor_expires_at, "
    "state_version"
)


def insert_pending(conn: sqlite3.Connection, call: PendingToolCall) -> None:
    """Insert a pending call row."""
    conn.execute(
        f"INSERT INTO pending_calls ({_PENDING_COLUMNS}) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            call.interrupt_id,
            call.session_id,
            call.run_id,
            call.tool_call_id,
            call.tool_name,
            compact(call.tool_args),
            call.status,
            call.created_at.isoformat(),
            _iso(call.expires_at),
            _iso(call.decided_at),
            compact(call.decision) if call.decision is not None else None,
            compact(call.result) if call.result is not None else None,
            call.updated_at.isoformat(),
            compact([c.model_dump(mode="json") for c in call.remaining_calls]),
            call.previous_interrupt_id,
            int(call.previously_executed),
            call.executor,
            _iso(call.executor_expires_at),
            STATE_VERSION,
        ),
    )


def _loads(row: sqlite3.Row, column: str) -> Any:
    text = row[column]
    return json.loads(text) if text else None


def _from_row(row: sqlite3.Row) -> PendingToolCall:
    # The row is the flat form of the version-2 state: rebuild that state and parse it as
    # strictly as an uploaded one, so a corrupted row is a 422 naming it, never a raw error.
    key, session_id = row["interrupt_id"], row["session_id"]
    context = {"table": "pending_calls", "key": key, "session_id": session_id, "interrupt_id": key}
    try:
        state = {
            "version": row["state_version"],
            "pending_tool_call": {
                "interrupt_id": key,
                "tool_name": row["tool_name"],
                "tool_args": json.loads(row["tool_args_json"]),
                "status": row["status"],
                "expires_at": row["expires_at"],
                "decision": _loads(row, "decision_json"),
                "result": _loads(row, "result_json"),
                "updated_at": row["updated_at"],
            },
            "run_context": {"thread_id": session_id, "run_id": row["run_id"]},
            "detail": {
                "tool_call_id": row["tool_call_id"],
                "created_at": row["created_at"],
                "decided_at": row["decided_at"],
                "remaining_calls": json.loads(row["remaining_json"]),
                "previous_interrupt_id": row["previous_interrupt_id"],
                "previously_executed": bool(row["previously_executed"]),
                "executor": row["executor"],
                "executor_expires_at": row["executor_expires_at"],
            },
        }
        text = json.dumps(state)
    except (ValueError, TypeError) as exc:
        raise CorruptRecordError(
            f"a JSON column of the stored pending tool call is not valid JSON: {exc}; the row "
            "is left as it is (restore it from a backup, or delete it)",
            **context,
        ) from exc
    return state_from_json(text, **context)


def read_pending(
    conn: sqlite3.Connection, where: str, params: tuple[Any, ...]
) -> list[PendingToolCall]:
    """Pending-call rows matching ``where``, oldest first."""
    cursor = conn.execute(
        f"SELECT * FROM pending_calls WHERE {where} ORDER BY created_at, interrupt_id", params
    )
    cursor.row_factory = sqlite3.Row
    return [_from_row(r) for r in cursor.fetchall()]


def expire_overdue(conn: sqlite3.Connection, now: datetime) -> int:
    """Move every undecided call past its expiry to EXPIRED; return how many."""
    if getattr(conn, "dialect", "sqlite") == "postgresql":
        # Row locks: a call another writer holds (a resume deciding it) is skipped, not
        # waited for — that writer finds the expiry itself — so listings never queue.
        return conn.execute(
            "UPDATE pending_calls SET status = 'EXPIRED', updated_at = ?1 "
            "WHERE interrupt_id IN (SELECT interrupt_id FROM pending_calls "
            "WHERE status = 'PENDING_APPROVAL' AND expires_at IS NOT NULL AND expires_at <= ?1 "
            "ORDER BY interrupt_id FOR UPDATE SKIP LOCKED)",
            (now.isoformat(),),
        ).rowcount
    return conn.execute(
        "UPDATE pending_calls SET status = 'EXPIRED', updated_at = ?1 "
        "WHERE status = 'PENDING_APPROVAL' AND expires_at IS NOT NULL AND expires_at <= ?1",
        (now.isoformat(),),
    ).rowcount


def as_expired(calls: list[PendingToolCall], now: datetime) -> list[PendingToolCall]:
    """The calls as a listing must report them: an undecided call past its expiry is
    ``EXPIRED`` (for a store that cannot write the transition, such as a read-only file)."""
    return [
        c.model_copy(update={"status": "EXPIRED", "updated_at": now})
        if c.status == "PENDING_APPROVAL" and c.expired(now)
        else c
        for c in calls
    ]


def decide_pending(
    conn: sqlite3.Connection,
    *,
    session_id: str,
    run_id: str,
    interrupt_id: str,
    to_status: str,
    now: datetime,
    decision: dict[str, Any] | None = None,
    result: Any = None,
    from_status: str = "PENDING_APPROVAL",
    executor: str | None = None,
    executor_expires_at: datetime | None = None,
) -> tuple[PendingToolCall | None, Exception | None]:
    """Check and move one call on, inside the caller's write transaction.

    Returns the updated call, or an error to raise *after* the transaction commits (an expiry
    found on the way is a write that must be kept: the call moves to EXPIRED, then 410).
    """
    found = read_pending(conn, "interrupt_id = ?", (interrupt_id,))
    context = {"session_id": session_id, "run_id": run_id, "interrupt_id": interrupt_id}
    if not found or found[0].session_id != session_id:
        return None, RunNotFoundError("no such interrupted tool call in this session", **context)
    call = found[0]
    if call.run_id != run_id:
        return None, ConflictError(
            f"interrupt {interrupt_id!r} belongs to run {call.run_id!r}, not {run_id!r}", **context
        )
    if from_status == "PENDING_APPROVAL" and (
        call.status == "EXPIRED" or (call.status == "PENDING_APPROVAL" and call.expired(now))
    ):
        # Expired is 410 however it was found: by this resume, or earlier by a listing.
        if call.status == "PENDING_APPROVAL":
            _move(conn, interrupt_id, "PENDING_APPROVAL", "EXPIRED", now)
        return None, GoneError(
            f"the call expired at {call.expires_at.isoformat() if call.expires_at else '?'}",
            **context,
        )
    if call.status != from_status or to_status not in TRANSITIONS[from_status]:
        return None, ConflictError(
            f"the call is {call.status}; it cannot move to {to_status} (already resolved?)",
            **context,
        )
    _move(conn, interrupt_id, from_status, to_status, now, decision=decision, result=result)
    if executor is not None:
        conn.execute(
            "UPDATE pending_calls SET executor = ?, executor_expires_at = ? WHERE interrupt_id = ?",
            (executor, _iso(executor_expires_at), interrupt_id),
        )
    return read_pending(conn, "interrupt_id = ?", (interrupt_id,))[0], None


def _move(
    conn: sqlite3.Connection,
    interrupt_id: str,
    from_status: str,
    to_status: str,
    now: datetime,
    *,
    decision: dict[str, Any] | None = None,
    result: Any = None,
) -> None:
    sets = ["status = ?", "updated_at = ?"]
    values: list[Any] = [to_status, now.isoformat()]
    if decision is not None:
        sets += ["decision_json = ?", "decided_at = ?"]
        values += [compact(decision), now.isoformat()]
    if result is not None:
        sets.append("result_json = ?")
        values.append(compact(result))
    changed = conn.execute(
        f"UPDATE pending_calls SET {', '.join(sets)} WHERE interrupt_id = ? AND status = ?",
        (*values, interrupt_id, from_status),
    ).rowcount
    if changed != 1:  # cannot happen inside the write lock; never repair silently
        raise ConflictError("the call changed under a write lock", interrupt_id=interrupt_id)


def renew_execution(
    conn: sqlite3.Connection, interrupt_id: str, executor: str, until: datetime
) -> bool:
    """Extend the executor lease of an approved call still run by ``executor``."""
    return (
        conn.execute(
            "UPDATE pending_calls SET executor_expires_at = ? WHERE interrupt_id = ? "
            "AND executor = ? AND status = 'APPROVED_EXECUTING'",
            (until.isoformat(), interrupt_id, executor),
        ).rowcount
        == 1
    )


def restore_pending(
    conn: sqlite3.Connection, session_id: str, pending: PendingToolCall | None, now: datetime
) -> PendingToolCall | None:
    """For a rollback or fork: drop the session's undecided calls (their turn is undone) and,
    when the checkpoint held a pending call, bring it back as a new interrupt."""
    conn.execute(
        "DELETE FROM pending_calls WHERE session_id = ? AND status = 'PENDING_APPROVAL'",
        (session_id,),
    )
    if pending is None:
        return None
    original = read_pending(conn, "interrupt_id = ?", (pending.interrupt_id,))
    executed = pending.previously_executed or bool(
        original and original[0].status in ("EXECUTED", "APPROVED_EXECUTING")
    )
    lifetime = pending.expires_at - pending.created_at if pending.expires_at is not None else None
    restored = pending.model_copy(
        update={
            "interrupt_id": new_id("int"),
            "session_id": session_id,
            "status": "PENDING_APPROVAL",
            "created_at": now,
            "updated_at": now,
            "expires_at": now + lifetime if lifetime is not None else None,
            "decided_at": None,
            "decision": None,
            "result": None,
            "previous_interrupt_id": pending.interrupt_id,
            "previously_executed": executed,
            "executor": None,
            "executor_expires_at": None,
        }
    )
    insert_pending(conn, restored)
    return restored

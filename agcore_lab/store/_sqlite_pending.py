"""The pending tool calls of a SQLite (or PostgreSQL) store: list, read, decide, renew.

A mixin of :class:`~agcore_lab.store.sqlite.SqliteStore` (the store's one role per file: its
approval rows are written and read by ``store/_approvals.py``; these are the store methods of
the ``PendingStore`` role over them).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import JsonValue

from agcore_lab.ids import utcnow
from agcore_lab.store._approvals import (
    as_expired,
    decide_pending,
    expire_overdue,
    read_pending,
    renew_execution,
)
from agcore_lab.store._changes import log_change
from agcore_lab.store._sqlite_connection import SqliteConnection
from agcore_lab.store.pending import PendingToolCall

__all__ = ["PendingOperations"]


class PendingOperations(SqliteConnection):
    """The ``PendingStore`` methods of a SQLite store (see :mod:`agcore_lab.store.roles`)."""

    def list_pending(
        self, session_id: str | None = None, *, include_resolved: bool = False
    ) -> list[PendingToolCall]:
        """Calls awaiting approval (overdue ones expire first); all of them with
        ``include_resolved``. A read-only store reports overdue calls as ``EXPIRED`` without
        writing."""
        now = self._expire_overdue()
        params: tuple[Any, ...] = () if session_id is None else (session_id,)
        where = "1 = 1" if session_id is None else "session_id = ?"
        calls = as_expired(
            self._locked_read(
                lambda conn: read_pending(conn, where, params), "pending_calls", session_id
            ),
            now,
        )
        return [c for c in calls if include_resolved or c.status == "PENDING_APPROVAL"]

    def get_pending(self, interrupt_id: str) -> PendingToolCall | None:
        """One pending-call record, or ``None`` (an overdue call is reported as expired)."""
        now = self._expire_overdue()
        found = self._locked_read(
            lambda conn: read_pending(conn, "interrupt_id = ?", (interrupt_id,)),
            "pending_calls",
            interrupt_id,
        )
        return as_expired(found, now)[0] if found else None

    def _expire_overdue(self) -> datetime:
        now = utcnow()
        if not self.read_only:
            with self._write() as conn:
                expire_overdue(conn, now)
        return now

    def decide_pending(
        self,
        *,
        session_id: str,
        run_id: str,
        interrupt_id: str,
        to_status: str,
        decision: dict[str, JsonValue] | None = None,
        result: JsonValue = None,
        from_status: str = "PENDING_APPROVAL",
        executor: str | None = None,
        lease_seconds: float | None = None,
    ) -> PendingToolCall:
        """Compare-and-set one call's status; exactly one concurrent caller wins."""
        now = utcnow()
        until = now + timedelta(seconds=lease_seconds) if lease_seconds is not None else None
        with self._write(pending=[interrupt_id]) as conn:
            call, error = decide_pending(
                conn,
                session_id=session_id,
                run_id=run_id,
                interrupt_id=interrupt_id,
                to_status=to_status,
                now=now,
                decision=decision,
                result=result,
                from_status=from_status,
                executor=executor,
                executor_expires_at=until,
            )
            if error is None:
                log_change(conn, session_id, "approval", self._origin)
        if error is not None:  # raised after the commit: an expiry found on the way is kept
            raise error
        assert call is not None
        return call

    def renew_execution(self, interrupt_id: str, executor: str, *, ttl: float) -> bool:
        """Extend the executor lease of an approved call; ``False`` if it is not ours now."""
        with self._write() as conn:
            return renew_execution(conn, interrupt_id, executor, utcnow() + timedelta(seconds=ttl))

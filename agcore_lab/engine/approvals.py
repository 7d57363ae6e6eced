"""Human approval, manager side: resume a pending call in any session, list pending calls.

The approval logic itself (decisions, compare-and-set, continuing the turn) lives with the
session in :mod:`agcore_lab.agent.approval`; this mixin adds the cross-session view.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from agcore_lab.agent.approval import Decision
from agcore_lab.agent.events import TurnResult
from agcore_lab.aio import run_sync
from agcore_lab.store.base import Store
from agcore_lab.store.pending import PendingToolCall

if TYPE_CHECKING:
    import pandas as pd

    from agcore_lab.agent.session import AgentSession

__all__ = ["ApprovalManagement"]


class ApprovalManagement:
    """Approval methods of ``SessionManager`` (mixed in)."""

    if TYPE_CHECKING:

        @property
        def store(self) -> Store: ...

        _map_lock: threading.Lock
        _live: dict[str, AgentSession]

        def emit(self, kind: Any, session_id: str, **fields: Any) -> None: ...

        async def adopt(self, session_id: str, *, parent_id: str | None = None) -> AgentSession: ...

    async def resume(
        self, session_id: str, run_id: str, interrupt_id: str, decision: Decision | str
    ) -> TurnResult:
        """Decide a pending tool call and continue its turn (loading the session from the
        store if it is not live here, e.g. after a kernel restart). See
        :meth:`AgentSession.resume`.

        A session that is not live is loaded as stored — without recording anything: the pending
        call belongs to the stored state, and a concurrent resume may be winning elsewhere.

        Raises:
            SessionNotFoundError: Unknown session (404).
            RunNotFoundError: Unknown run or interrupt (404).
            ConflictError: Run/interrupt mismatch or already resolved (409).
            GoneError: The call expired (410).
        """
        with self._map_lock:
            session = self._live.get(session_id)
        if session is None:
            session = await self.adopt(session_id)
            self.emit("recovered", session_id)
        try:
            return await session.resume(run_id, interrupt_id, decision)
        finally:  # resolved, conflicted or expired: approval views refresh either way
            self.emit("approval", session_id, ckpt_id=None)

    def pending_calls(
        self, session_id: str | None = None, *, include_resolved: bool = False
    ) -> list[PendingToolCall]:
        """Tool calls waiting for a decision (overdue ones are reported as EXPIRED)."""
        return self.store.list_pending(session_id, include_resolved=include_resolved)

    def pending_dataframe(self, *, include_resolved: bool = True) -> pd.DataFrame:
        """Pending (and past) tool calls: session, tool, args, status, expires at, decided at."""
        import pandas as pd

        columns = [
            "interrupt_id",
            "session_id",
            "run_id",
            "tool_name",
            "tool_args",
            "status",
            "created_at",
            "expires_at",
            "decided_at",
            "result",
        ]
        rows = [
            c.model_dump(include=set(columns))
            for c in self.pending_calls(include_resolved=include_resolved)
        ]
        return pd.DataFrame(rows, columns=columns)

    def resume_sync(
        self, session_id: str, run_id: str, interrupt_id: str, decision: Decision | str
    ) -> TurnResult:
        """Blocking twin of :meth:`resume`."""
        return run_sync(self.resume(session_id, run_id, interrupt_id, decision))

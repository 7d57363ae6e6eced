"""Human approval, manager side: resume or settle a call in any session, list the calls.

The approval steps themselves (decisions, compare-and-set, executor leases, continuing the
turn) live with the turn in :mod:`agcore_lab.agent.approval`; this component adds the
cross-session view. Get it as ``manager.approvals``; the manager's ``resume``, ``settle``,
``pending_calls`` and ``pending_dataframe`` call it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agcore_lab.agent.approval import Decision
from agcore_lab.agent.events import TurnResult
from agcore_lab.aio import run_sync
from agcore_lab.store.pending import PendingToolCall

if TYPE_CHECKING:
    import pandas as pd

    from agcore_lab.agent.session import AgentSession
    from agcore_lab.engine.host import ManagerHost

__all__ = ["PENDING_COLUMNS", "Approvals"]

PENDING_COLUMNS = [
    "interrupt_id",
    "session_id",
    "run_id",
    "tool_name",
    "tool_args",
    "status",
    "in_doubt",
    "executor",
    "created_at",
    "expires_at",
    "decided_at",
    "result",
]


class Approvals:
    """Pending tool calls across the sessions of one manager."""

    def __init__(self, host: ManagerHost) -> None:
        self._host = host

    async def _session(self, session_id: str) -> AgentSession:
        # A session that is not live is loaded as stored — without recording anything: the
        # pending call belongs to the stored state, and a concurrent resume may be winning
        # elsewhere.
        session = self._host.live(session_id)
        if session is None:
            session = await self._host.adopt(session_id)
            self._host.emit("recovered", session_id)
        return session

    async def resume(
        self,
        session_id: str,
        run_id: str,
        interrupt_id: str,
        decision: Decision | str,
        *,
        wait: float = 0.0,
    ) -> TurnResult:
        """Decide a pending tool call and continue its turn (loading the session from the
        store if it is not live here). See :meth:`AgentSession.resume`."""
        session = await self._session(session_id)
        try:
            return await session.resume(run_id, interrupt_id, decision, wait=wait)
        finally:  # resolved, conflicted or expired: approval views refresh either way
            self._host.emit("approval", session_id, ckpt_id=None)

    async def settle(
        self,
        session_id: str,
        interrupt_id: str,
        *,
        result: str | None = None,
        wait: float = 0.0,
    ) -> TurnResult:
        """Resolve an in-doubt call and continue its turn. See :meth:`AgentSession.settle`."""
        session = await self._session(session_id)
        try:
            return await session.settle(interrupt_id, result=result, wait=wait)
        finally:
            self._host.emit("approval", session_id, ckpt_id=None)

    def pending_calls(
        self, session_id: str | None = None, *, include_resolved: bool = False
    ) -> list[PendingToolCall]:
        """Tool calls waiting for a decision (overdue ones are reported as EXPIRED), and
        approved calls that are in doubt (their executor died: ``call.in_doubt``)."""
        store = self._host.store
        calls = store.list_pending(session_id, include_resolved=True)
        if include_resolved:
            return calls
        return [c for c in calls if c.status == "PENDING_APPROVAL" or c.in_doubt]

    def pending_dataframe(self, *, include_resolved: bool = True) -> pd.DataFrame:
        """Pending (and past) tool calls: session, tool, args, status, whether in doubt, who
        ran it, expires at, decided at, result."""
        import pandas as pd

        rows = [
            {**c.model_dump(include=set(PENDING_COLUMNS)), "in_doubt": c.in_doubt}
            for c in self.pending_calls(include_resolved=include_resolved)
        ]
        return pd.DataFrame(rows, columns=PENDING_COLUMNS)

    def resume_sync(
        self,
        session_id: str,
        run_id: str,
        interrupt_id: str,
        decision: Decision | str,
        *,
        wait: float = 0.0,
    ) -> TurnResult:
        """Blocking twin of :meth:`resume`."""
        return run_sync(self.resume(session_id, run_id, interrupt_id, decision, wait=wait))

    def settle_sync(
        self,
        session_id: str,
        interrupt_id: str,
        *,
        result: str | None = None,
        wait: float = 0.0,
    ) -> TurnResult:
        """Blocking twin of :meth:`settle`."""
        return run_sync(self.settle(session_id, interrupt_id, result=result, wait=wait))

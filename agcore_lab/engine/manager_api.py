"""The manager's one-line façades over its approval, dispatch and checkpoint components.

``SessionManager`` inherits these so ``manager.resume(...)`` and ``manager.dispatch_all(...)``
keep working; each only forwards to ``manager.approvals`` or ``manager.dispatcher``, which hold
the logic and use the manager through :class:`~agcore_lab.engine.host.ManagerHost` only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from agcore_lab.aio import run_sync

if TYPE_CHECKING:
    import pandas as pd

    from agcore_lab.agent.agent import Agent
    from agcore_lab.agent.approval import Decision
    from agcore_lab.agent.events import TurnEvent, TurnResult
    from agcore_lab.engine.approvals import Approvals
    from agcore_lab.engine.checkpointer import Checkpointer
    from agcore_lab.engine.dispatch import Dispatcher
    from agcore_lab.engine.dispatch_types import (
        ChildCreated,
        Completed,
        DispatchConfig,
        DispatchError,
        DispatchProgress,
        SharedMemory,
        SubTaskError,
        SubTaskResult,
    )
    from agcore_lab.store.base import CkptMeta
    from agcore_lab.store.pending import PendingToolCall

__all__ = ["ManagerFacades"]


class ManagerFacades:
    """Approval and dispatch methods of ``SessionManager`` (each forwards to a component)."""

    approvals: Approvals
    dispatcher: Dispatcher
    checkpointer: Checkpointer

    # -- checkpoints --------------------------------------------------------------------------

    async def list_checkpoints(
        self, session_id: str, *, limit: int | None = None, before: str | int | None = None
    ) -> list[CkptMeta]:
        """The session's checkpoints, newest first, all or one page (see
        :meth:`Checkpointer.list_checkpoints <agcore_lab.engine.checkpointer.Checkpointer.
        list_checkpoints>`: ``limit``, and ``before`` a checkpoint id or a turn index).

        Raises:
            SessionNotFoundError: Unknown session.
            InvalidInputError: A bad ``limit`` or ``before``.
        """
        return await self.checkpointer.list_checkpoints(session_id, limit=limit, before=before)

    def list_checkpoints_sync(
        self, session_id: str, *, limit: int | None = None, before: str | int | None = None
    ) -> list[CkptMeta]:
        """Blocking twin of :meth:`list_checkpoints`."""
        return run_sync(self.list_checkpoints(session_id, limit=limit, before=before))

    # -- approvals ----------------------------------------------------------------------------

    async def resume(
        self,
        session_id: str,
        run_id: str,
        interrupt_id: str,
        decision: Decision | str,
        *,
        wait: float = 0.0,
    ) -> TurnResult:
        """Decide a pending tool call and continue its turn (see
        :meth:`AgentSession.resume`); a session not live here is loaded from the store.

        Raises:
            SessionNotFoundError: Unknown session (404).
            RunNotFoundError: Unknown run or interrupt (404).
            ConflictError: Run/interrupt mismatch or already resolved (409).
            GoneError: The call expired (410).
        """
        return await self.approvals.resume(session_id, run_id, interrupt_id, decision, wait=wait)

    async def settle(
        self,
        session_id: str,
        interrupt_id: str,
        *,
        result: str | None = None,
        wait: float = 0.0,
    ) -> TurnResult:
        """Resolve an in-doubt call — approved, but its executor died while the tool ran —
        with what a person knows (``result="it did run: ..."``) or, by default, an error
        result saying the outcome is unknown; then the turn continues so the model sees it.

        Raises:
            RunNotFoundError: Unknown interrupt in this session (404).
            ConflictError: The call is not in doubt: still running, or settled already (409).
        """
        return await self.approvals.settle(session_id, interrupt_id, result=result, wait=wait)

    def pending_calls(
        self, session_id: str | None = None, *, include_resolved: bool = False
    ) -> list[PendingToolCall]:
        """Tool calls waiting for a decision (overdue ones as EXPIRED) and in-doubt calls."""
        return self.approvals.pending_calls(session_id, include_resolved=include_resolved)

    def pending_dataframe(self, *, include_resolved: bool = True) -> pd.DataFrame:
        """Pending (and past) tool calls as a DataFrame, with an ``in_doubt`` column."""
        return self.approvals.pending_dataframe(include_resolved=include_resolved)

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

    # -- dispatch -----------------------------------------------------------------------------

    @property
    def last_dispatch(self) -> DispatchProgress | None:
        """The progress of the latest ``dispatch_all``."""
        return self.dispatcher.last_dispatch

    def shared_memory(self, parent_id: str, namespace: str) -> SharedMemory:
        """The sibling-shared memory area ``namespace`` of ``parent_id``'s children."""
        return self.dispatcher.shared_memory(parent_id, namespace)

    def child_memory(self, child_id: str) -> dict[str, JsonValue]:
        """A child's memory (values by key), read from the store."""
        return self.dispatcher.child_memory(child_id)

    async def dispatch(
        self, parent_id: str, sub_agent: Agent, task: str, config: DispatchConfig | None = None
    ) -> SubTaskResult:
        """Run ``task`` as one turn of a new child session (see :class:`Dispatcher`)."""
        return await self.dispatcher.dispatch(parent_id, sub_agent, task, config)

    async def dispatch_all(
        self,
        parent_id: str,
        tasks: Sequence[tuple[Agent, str]],
        config: DispatchConfig | None = None,
        *,
        on_progress: Callable[[DispatchProgress], None] | None = None,
    ) -> list[SubTaskResult | SubTaskError]:
        """Run many tasks as child sessions in parallel (see :meth:`Dispatcher.dispatch_all`)."""
        return await self.dispatcher.dispatch_all(parent_id, tasks, config, on_progress=on_progress)

    def dispatch_stream(
        self, parent_id: str, sub_agent: Agent, task: str, config: DispatchConfig | None = None
    ) -> AsyncIterator[ChildCreated | TurnEvent | Completed | DispatchError]:
        """Stream one sub-task (see :meth:`Dispatcher.dispatch_stream`)."""
        return self.dispatcher.dispatch_stream(parent_id, sub_agent, task, config)

    def dispatch_sync(
        self, parent_id: str, sub_agent: Agent, task: str, config: DispatchConfig | None = None
    ) -> SubTaskResult:
        """Blocking twin of :meth:`dispatch`."""
        return self.dispatcher.dispatch_sync(parent_id, sub_agent, task, config)

    def dispatch_all_sync(
        self,
        parent_id: str,
        tasks: Sequence[tuple[Agent, str]],
        config: DispatchConfig | None = None,
        *,
        on_progress: Callable[[DispatchProgress], None] | None = None,
    ) -> list[SubTaskResult | SubTaskError]:
        """Blocking twin of :meth:`dispatch_all` (Ctrl-C cancels the children cleanly)."""
        return self.dispatcher.dispatch_all_sync(parent_id, tasks, config, on_progress=on_progress)

    def dispatch_stream_sync(
        self, parent_id: str, sub_agent: Agent, task: str, config: DispatchConfig | None = None
    ) -> Any:
        """Blocking twin of :meth:`dispatch_stream` (a plain iterator)."""
        return self.dispatcher.dispatch_stream_sync(parent_id, sub_agent, task, config)

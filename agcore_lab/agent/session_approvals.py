"""The approval side of a session: the call it waits on, resume, settle, and continuing a
turn whose approved call ran (``AgentSession`` mixes these in; they are its methods)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agcore_lab.agent import approval as steps
from agcore_lab.agent.approval import Approve, Decision
from agcore_lab.agent.events import TurnResult
from agcore_lab.agent.lease import new_holder
from agcore_lab.agent.recording import recorder_for
from agcore_lab.agent.turn import TurnDraft, resume_turn
from agcore_lab.aio import run_sync
from agcore_lab.llm.messages import ToolMessage
from agcore_lab.store.pending import PendingToolCall

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager, AbstractContextManager

    from agcore_lab.agent.agent import Agent
    from agcore_lab.agent.bundle import RuntimeBundle
    from agcore_lab.agent.slots import ContextSlot
    from agcore_lab.aio import CrossLoopLock
    from agcore_lab.llm.usage import CostTracker
    from agcore_lab.store.aio import AsyncStore
    from agcore_lab.store.base import Store

__all__ = ["ApprovalOperations"]


class ApprovalOperations:
    """Approvals of an :class:`~agcore_lab.agent.session.AgentSession` (a mixin)."""

    session_id: str
    agent: Agent
    bundle: RuntimeBundle
    call_retries: list[int] | None
    turn_index: int
    cost_tracker: CostTracker
    pending_interrupt_id: str | None
    _lock: CrossLoopLock

    if TYPE_CHECKING:

        @property
        def store(self) -> Store: ...

        @property
        def astore(self) -> AsyncStore: ...

        @property
        def current_slot(self) -> ContextSlot: ...

        def _leased(self, wait: float) -> AbstractAsyncContextManager[None]: ...

        def _uncommitted(self, live: ContextSlot) -> AbstractContextManager[None]: ...

        def _raise_for_status(self, result: TurnResult) -> None: ...

        async def _commit_turn(
            self, draft: TurnDraft, *, run_id: str, continuing: bool = False, last: bool = False
        ) -> TurnResult: ...

        async def _after_turn(self, result: TurnResult) -> None: ...

    def pending_tool_call(self) -> PendingToolCall | None:
        """The call this session is waiting on, or ``None`` (an overdue one shows EXPIRED; an
        approved one whose executor died shows ``in_doubt``)."""
        if self.pending_interrupt_id is None:
            return None
        return self._pending_among(self.store.list_pending(self.session_id, include_resolved=True))

    async def _apending_tool_call(self) -> PendingToolCall | None:
        # pending_tool_call(), awaited through the async store.
        if self.pending_interrupt_id is None:
            return None
        calls = await self.astore.alist_pending(self.session_id, include_resolved=True)
        return self._pending_among(calls)

    def _pending_among(self, calls: list[PendingToolCall]) -> PendingToolCall | None:
        return next((c for c in calls if c.interrupt_id == self.pending_interrupt_id), None)

    async def resume(
        self, run_id: str, interrupt_id: str, decision: Decision | str, *, wait: float = 0.0
    ) -> TurnResult:
        """Decide a pending call and continue its turn to the model's next answer.

        Args:
            run_id: The interrupted turn (``result.pending_tool_call.run_id``).
            interrupt_id: The interrupt (``result.pending_tool_call.interrupt_id``).
            decision: ``"approve"``, ``"reject"``, ``Approve(arguments=...)`` or
                ``Reject(reason=...)``.
            wait: Seconds to wait while another writer holds the session's turn lease.

        Raises:
            RunNotFoundError: Unknown run or interrupt in this session (404).
            ConflictError: Run/interrupt mismatch, or already resolved — another resume won
                (409); ``SessionBusyError`` while another writer holds the session.
            GoneError: The call expired (410); it is moved to EXPIRED.
            InvalidInputError: Edited arguments that do not fit the tool; nothing changes.
        """
        choice = steps.as_decision(decision)
        async with self._lock, self._leased(wait):
            call = await steps.find_call(self.astore, self.session_id, interrupt_id, run_id)
            if isinstance(choice, Approve):
                answer = await steps.run_approved(
                    self.astore,
                    self.agent,
                    call,
                    run_id,
                    choice,
                    executor=new_holder(),
                    lease_seconds=self.bundle.lease_seconds,
                )
            else:
                answer = await steps.reject_call(self.astore, call, run_id, choice)
            result = await self._continue(call, answer)
        self._raise_for_status(result)
        return result

    async def settle(
        self, interrupt_id: str, *, result: str | None = None, wait: float = 0.0
    ) -> TurnResult:
        """Resolve an in-doubt call (its executor died while the tool ran) and continue the
        turn, so the model sees the outcome.

        Args:
            interrupt_id: The call.
            result: What the tool did, as far as a person knows (``"it did run: ..."``); by
                default the model is told the outcome is unknown.
            wait: Seconds to wait while another writer holds the session's turn lease.

        Raises:
            RunNotFoundError: Unknown interrupt in this session (404).
            ConflictError: The call is not in doubt — still running, or already settled (409).
        """
        async with self._lock, self._leased(wait):
            call = await steps.find_call(self.astore, self.session_id, interrupt_id)
            answer = await steps.settle_call(self.astore, call, result)
            turn = await self._continue(call, answer)
        self._raise_for_status(turn)
        return turn

    async def continue_executed(self, *, wait: float = 0.0) -> TurnResult | None:
        """Continue a turn whose approved call ran (``EXECUTED``) but whose process died
        before the model saw the result; ``None`` if there is none. Exactly once: of several
        concurrent callers (threads, processes) one continues, the others find it done."""
        async with self._lock, self._leased(wait):
            call = await self._apending_tool_call()
            if call is None or call.status != "EXECUTED":
                return None
            answer = ToolMessage(
                content=str(call.result), tool_call_id=call.tool_call_id, name=call.tool_name
            )
            turn = await self._continue(call, answer)
        self._raise_for_status(turn)
        return turn

    async def _continue(self, call: PendingToolCall, answer: ToolMessage) -> TurnResult:
        self.pending_interrupt_id = None
        live = self.current_slot
        draft = TurnDraft(slot=live.draft(), cost=self.cost_tracker.fork())
        with self._uncommitted(live):
            draft.recorder = recorder_for(self, draft.slot, turn_index=self.turn_index)
            try:
                remaining = list(call.remaining_calls)
                async for _event in resume_turn(self.agent, draft, answer, remaining):
                    pass
            except BaseException:
                # The decision is recorded (an approved tool has run): keep the answers so
                # far, or the model's call would stay unanswered for good. Then fail as the
                # model did.
                steps.answer_the_rest(draft, call.remaining_calls)
                await self._commit_turn(draft, run_id=call.run_id, continuing=True)
                raise
            result = await self._commit_turn(draft, run_id=call.run_id, continuing=True)
        await self._after_turn(result)
        return result

    # -- sync twins -------------------------------------------------------------------------

    def resume_sync(
        self, run_id: str, interrupt_id: str, decision: Decision | str, *, wait: float = 0.0
    ) -> TurnResult:
        """Blocking twin of :meth:`resume`."""
        return run_sync(self.resume(run_id, interrupt_id, decision, wait=wait))

    def settle_sync(
        self, interrupt_id: str, *, result: str | None = None, wait: float = 0.0
    ) -> TurnResult:
        """Blocking twin of :meth:`settle`."""
        return run_sync(self.settle(interrupt_id, result=result, wait=wait))

    def continue_executed_sync(self, *, wait: float = 0.0) -> TurnResult | None:
        """Blocking twin of :meth:`continue_executed`."""
        return run_sync(self.continue_executed(wait=wait))

"""Slot operations of :class:`~agcore_lab.agent.session.AgentSession`: fork, switch, diff, merge.

Kept apart from the turn machinery; ``AgentSession`` inherits them. Each write goes to the
store first and reaches the live slots only after it succeeded.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agcore_lab.agent.agent import Agent
from agcore_lab.agent.recording import recorder_for
from agcore_lab.agent.slot_diff import SlotDiff, diff_slots
from agcore_lab.agent.slots import ContextSlot, MergeStrategy, SlotMode, validate_slot_id
from agcore_lab.agent.summary import MERGE_SUMMARY_PROMPT, SummaryConfig, request_summary
from agcore_lab.aio import CrossLoopLock, run_sync
from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.messages import AssistantMessage, Message
from agcore_lab.llm.usage import CostTracker
from agcore_lab.store.base import SessionRecord, Store

if TYPE_CHECKING:
    from agcore_lab.agent.bundle import RuntimeBundle

__all__ = ["MergePreview", "SlotOperations"]


@dataclass(frozen=True)
class MergePreview:
    """What a merge would do, without doing it.

    Attributes:
        source: The slot merged from.
        target: The slot merged into.
        strategy: The strategy.
        before: The target's message count now.
        incoming: The messages that would be appended (Append), the new history (Replace), or
            the messages the model would condense into one (Summarize).
        after: The target's message count after the merge.
    """

    source: str
    target: str
    strategy: MergeStrategy
    before: int
    incoming: list[Message]
    after: int

    def describe(self) -> str:
        """One sentence for a confirmation prompt."""
        n = len(self.incoming)
        if self.strategy is MergeStrategy.Append:
            what = f"append {n} message(s) from {self.source!r} to {self.target!r}"
        elif self.strategy is MergeStrategy.Replace:
            what = (
                f"replace the {self.before} message(s) of {self.target!r} "
                f"with the {n} of {self.source!r}"
            )
        else:
            what = (
                f"condense {n} message(s) of {self.source!r} "
                f"into 1 summary message in {self.target!r}"
            )
        return f"This will {what} ({self.before} -> {self.after} messages)."


class SlotOperations:
    """Fork, switch, diff and merge context slots (mixed into ``AgentSession``)."""

    session_id: str
    agent: Agent
    bundle: RuntimeBundle
    call_retries: list[int] | None
    turn_index: int
    slots: dict[str, ContextSlot]
    current_slot_id: str
    cost_tracker: CostTracker
    _lock: CrossLoopLock

    if TYPE_CHECKING:

        @property
        def store(self) -> Store: ...

        def slot(self, slot_id: str) -> ContextSlot: ...

        def _record(self, **changes: Any) -> SessionRecord: ...

        def _commit(self, record: SessionRecord, *, change: str = "turn", **parts: Any) -> None: ...

        def _leased(self, wait: float) -> AbstractAsyncContextManager[None]: ...

    async def fork_slot(
        self,
        child_id: str,
        *,
        from_slot: str | None = None,
        switch: bool = False,
        strategy: MergeStrategy | str | None = None,
    ) -> ContextSlot:
        """Fork a slot (the current one by default) into a new slot ``child_id``.

        Args:
            child_id: The new slot's name.
            from_slot: The slot to fork; the current slot by default.
            switch: Make the new slot current.
            strategy: The strategy the branch will be merged back with; stored with the slot
                and used by :meth:`merge_slot` unless it is told otherwise.

        Raises:
            InvalidInputError: ``child_id`` is malformed or already used, or ``strategy`` is
                not a merge strategy.
            SlotNotFoundError: ``from_slot`` does not exist.

        Example:
            >>> from agcore_lab import Agent, AgentSession, ScriptedModel
            >>> session = AgentSession(Agent(name="a", model=ScriptedModel()))
            >>> session.fork_slot_sync("idea", strategy="replace").merge_strategy.value
            'replace'
        """
        async with self._lock:
            validate_slot_id(child_id)
            if child_id in self.slots:
                raise InvalidInputError(
                    f"slot {child_id!r} exists already; pick another name",
                    session_id=self.session_id,
                    slot_id=child_id,
                )
            child = self.slot(from_slot or self.current_slot_id).fork(child_id, strategy)
            current = child_id if switch else self.current_slot_id
            self._commit(
                self._record(current_slot_id=current),
                change="slot",
                slots=[child.to_record(self.session_id)],
            )
            self.slots[child_id] = child
            self.current_slot_id = current
            return child

    async def switch_slot(self, slot_id: str) -> ContextSlot:
        """Make ``slot_id`` the current slot. Raises ``SlotNotFoundError`` if it is unknown."""
        async with self._lock:
            slot = self.slot(slot_id)
            self._commit(self._record(current_slot_id=slot_id), change="slot")
            self.current_slot_id = slot_id
            return slot

    async def set_slot_mode(
        self,
        mode: SlotMode | str,
        *,
        slot_id: str | None = None,
        recent_window: int | None = None,
        summary_override: str | None = None,
    ) -> ContextSlot:
        """Set how a slot (the current one by default) builds the model's context.

        Args:
            mode: ``SlotMode.Full`` (every message) or ``SlotMode.Focused`` (summary override,
                pinned messages and the recent window).
            slot_id: The slot; the current slot by default.
            recent_window: How many recent messages Focused mode keeps (unchanged if None).
            summary_override: Replace the slot's summary override (unchanged if None).

        Raises:
            SlotNotFoundError: Unknown slot.
            InvalidInputError: Unknown mode, or ``recent_window`` below 1.
        """
        try:
            mode = SlotMode(mode)
        except ValueError:
            raise InvalidInputError(
                f"unknown slot mode {mode!r}; use 'full' or 'focused'", session_id=self.session_id
            ) from None
        if recent_window is not None and recent_window < 1:
            raise InvalidInputError("recent_window must be at least 1", session_id=self.session_id)
        async with self._lock:
            draft = self.slot(slot_id or self.current_slot_id).copy()
            draft.mode = mode
            if recent_window is not None:
                draft.recent_window = recent_window
            if summary_override is not None:
                draft.summary_override = summary_override
            return self._save_slot(draft)

    async def pin_message(
        self, message_id: str, *, slot_id: str | None = None, pinned: bool = True
    ) -> ContextSlot:
        """Pin a message so Focused mode always sends it (``pinned=False`` unpins it).

        Raises:
            SlotNotFoundError: Unknown slot.
            InvalidInputError: The slot has no message with that id.
        """
        async with self._lock:
            draft = self.slot(slot_id or self.current_slot_id).copy()
            if all(m.id != message_id for m in draft.messages):
                raise InvalidInputError(
                    f"slot {draft.slot_id!r} has no message {message_id!r}",
                    session_id=self.session_id,
                    slot_id=draft.slot_id,
                )
            draft.pinned_ids = [i for i in draft.pinned_ids if i != message_id]
            if pinned:
                draft.pinned_ids.append(message_id)
            return self._save_slot(draft)

    def _save_slot(self, draft: ContextSlot) -> ContextSlot:
        self._commit(self._record(), change="slot", slots=[draft.to_record(self.session_id)])
        self.slots[draft.slot_id] = draft
        return draft

    def diff_slots(self, left: str, right: str) -> SlotDiff:
        """Compare two slots message by message (see :func:`agcore_lab.agent.slot_diff.diff_slots`).

        Raises:
            SlotNotFoundError: Either slot is unknown.
        """
        return diff_slots(self.slot(left), self.slot(right))

    def merge_preview(
        self,
        child_id: str,
        *,
        into: str | None = None,
        strategy: MergeStrategy | str | None = None,
    ) -> MergePreview:
        """Describe what :meth:`merge_slot` would do, changing nothing."""
        child, target = self._merge_pair(child_id, into)
        strategy = child.resolve_strategy(strategy)
        before = len(target.messages)
        if strategy is MergeStrategy.Replace:
            incoming, after = list(child.messages), len(child.messages)
        elif strategy is MergeStrategy.Append:
            incoming = child.new_messages()
            after = before + len(incoming)
        else:
            incoming, after = child.new_messages(), before + 1
        return MergePreview(child.slot_id, target.slot_id, strategy, before, incoming, after)

    def _merge_pair(self, child_id: str, into: str | None) -> tuple[ContextSlot, ContextSlot]:
        child = self.slot(child_id)
        target = self.slot(into or child.parent_slot_id or self.current_slot_id)
        if target.slot_id == child.slot_id:
            raise InvalidInputError(
                "cannot merge a slot into itself", session_id=self.session_id, slot_id=child_id
            )
        return child, target

    async def merge_slot(
        self,
        child_id: str,
        *,
        into: str | None = None,
        strategy: MergeStrategy | str | None = None,
    ) -> ContextSlot:
        """Merge slot ``child_id`` into ``into`` (its parent slot by default).

        ``strategy`` defaults to the one given when the slot was forked
        (``fork_slot(..., strategy=...)``), else Append.

        Summarize asks the model (the summary model if configured) to condense the child's
        new messages into one assistant message; the request is recorded as a model call of
        kind ``merge`` (slot: the child), stored with the merge. Returns the updated target
        slot.

        Raises:
            SlotNotFoundError: Either slot is unknown.
            InvalidInputError: Merging a slot into itself, or an unknown strategy.
        """
        async with self._lock, self._leased(0.0):  # Summarize calls the model
            child, target = (s.copy() for s in self._merge_pair(child_id, into))
            strategy = child.resolve_strategy(strategy)
            summary: Message | None = None
            recorder = None
            cost = self.cost_tracker.fork()
            if strategy is MergeStrategy.Summarize:
                config = self.agent.summary_config or SummaryConfig()
                model = config.summary_model or self.agent.model
                # The request is recorded like a summary's (kind "merge", the child's slot).
                recorder = recorder_for(self, child, turn_index=self.turn_index, kind="merge")
                response = await request_summary(
                    model,
                    config,
                    child.new_messages(),
                    prompt=MERGE_SUMMARY_PROMPT,
                    recorder=recorder,
                )
                cost.record(response.model, response.usage)
                summary = AssistantMessage(
                    content=f"[Summary of slot {child.slot_id!r}] {response.message.content or ''}",
                    metadata={"merged_from": child.slot_id, "strategy": strategy.value},
                )
            links = target.merge(child, strategy, summary=summary)
            self._commit(
                self._record(spend=cost.by_model),
                change="slot",
                messages=[summary] if summary is not None else [],
                links=links,
                slots=[target.to_record(self.session_id), child.to_record(self.session_id)],
                calls=recorder.calls if recorder is not None else (),
            )
            self.slots[target.slot_id], self.slots[child.slot_id] = target, child
            self.cost_tracker = cost
            return target

    def fork_slot_sync(
        self,
        child_id: str,
        *,
        from_slot: str | None = None,
        switch: bool = False,
        strategy: MergeStrategy | str | None = None,
    ) -> ContextSlot:
        """Blocking twin of :meth:`fork_slot`."""
        return run_sync(
            self.fork_slot(child_id, from_slot=from_slot, switch=switch, strategy=strategy)
        )

    def switch_slot_sync(self, slot_id: str) -> ContextSlot:
        """Blocking twin of :meth:`switch_slot`."""
        return run_sync(self.switch_slot(slot_id))

    def set_slot_mode_sync(
        self,
        mode: SlotMode | str,
        *,
        slot_id: str | None = None,
        recent_window: int | None = None,
        summary_override: str | None = None,
    ) -> ContextSlot:
        """Blocking twin of :meth:`set_slot_mode`."""
        return run_sync(
            self.set_slot_mode(
                mode,
                slot_id=slot_id,
                recent_window=recent_window,
                summary_override=summary_override,
            )
        )

    def pin_message_sync(
        self, message_id: str, *, slot_id: str | None = None, pinned: bool = True
    ) -> ContextSlot:
        """Blocking twin of :meth:`pin_message`."""
        return run_sync(self.pin_message(message_id, slot_id=slot_id, pinned=pinned))

    def merge_slot_sync(
        self,
        child_id: str,
        *,
        into: str | None = None,
        strategy: MergeStrategy | str | None = None,
    ) -> ContextSlot:
        """Blocking twin of :meth:`merge_slot`."""
        return run_sync(self.merge_slot(child_id, into=into, strategy=strategy))

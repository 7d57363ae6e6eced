"""The approval panel's decisions: Approve, Edit, Reject, Settle — each a method of the panel.

A mixin of :class:`~agcore_lab.jupyter.ApprovalPanel`. Every decision runs
``manager.resume(session_id, run_id, interrupt_id, decision)`` (or ``manager.settle(...)`` for
an in-doubt call) through the panel's ``_act`` — one at a time, on agcore_lab's background
loop — and the card shows the outcome when it ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agcore_lab.agent.approval import Approve, Reject
from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter.approval._html import arguments_json
from agcore_lab.jupyter.approval.ops import (
    ApprovalOutcome,
    parse_arguments,
    resume_call,
    settle_call,
)
from agcore_lab.jupyter.common.text import error_line

if TYPE_CHECKING:
    from agcore_lab.jupyter.approval.book import CallBook
    from agcore_lab.jupyter.approval.card import CallCard
    from agcore_lab.jupyter.common.tasks import BackgroundTask
    from agcore_lab.store.pending import PendingToolCall

__all__ = ["Decisions"]


class Decisions:
    """Decisions on single calls (mixed into the panel, which owns the state)."""

    book: CallBook
    manager: Any
    confirm_bar: Any
    _lock: Any

    if TYPE_CHECKING:  # provided by the panel (and its ManagerView base)

        @property
        def notes(self) -> dict[str, str]: ...
        def card(self, interrupt_id: str) -> CallCard: ...
        def set_status(self, text: str) -> None: ...
        def show_error(self, exc: BaseException | None) -> None: ...
        def _act(self, coro: Any, what: str, done: Any) -> BackgroundTask[Any] | None: ...
        def _render(self) -> None: ...

    def _waiting_call(self, interrupt_id: str) -> PendingToolCall | None:
        call = self.book.get(interrupt_id)
        if call is None or not self.book.waits(call):
            what = "is not in this panel" if call is None else "waits no more"
            self.show_error(InvalidInputError(f"call {interrupt_id!r} {what}; nothing to decide"))
            return None
        return call

    def approve(
        self,
        interrupt_id: str,
        arguments: dict[str, Any] | None = None,
        *,
        rerun: bool = False,
    ) -> BackgroundTask[Any] | None:
        """Approve a call (optionally with edited arguments): the tool runs, the turn goes on.

        A call whose original already ran before a rollback asks first (Confirm runs it with
        ``Approve(rerun=True)``), unless ``rerun=True`` says so already. Returns the task, or
        ``None`` when nothing started.
        """
        call = self._waiting_call(interrupt_id)
        if call is None:
            return None
        if call.previously_executed and not rerun:
            edited = " with the edited arguments" if arguments is not None else ""
            self.confirm_bar.ask(
                f"{call.tool_name} already ran once for this call, before a rollback (as "
                f"{call.previous_interrupt_id}). Run it again{edited}?",
                lambda: self._decide(call, Approve(arguments=arguments, rerun=True)),
                action="rerun",
                confirm_label="Run it again",
                on_cancel=lambda: self.set_status("Not approved; the call still waits."),
            )
            self.set_status("Confirm or Cancel.")
            return None
        return self._decide(call, Approve(arguments=arguments, rerun=rerun))

    def edit(self, interrupt_id: str) -> None:
        """Open the arguments editor of a call (on the model's arguments)."""
        call = self._waiting_call(interrupt_id)
        if call is not None:
            self.card(interrupt_id).open_editor(arguments_json(call.tool_args))

    def approve_edited(self, interrupt_id: str, text: str | None = None) -> Any:
        """Approve with the arguments in the editor (or ``text``), checked as a JSON object
        first; an error stays on the call, which keeps waiting."""
        if self._waiting_call(interrupt_id) is None:
            return None
        card = self.card(interrupt_id)
        if text is not None:
            card.open_editor(text)
            card.editor.value = text
        try:
            arguments = parse_arguments(card.editor.value)
        except InvalidInputError as exc:
            with self._lock:
                self.notes[interrupt_id] = error_line(exc)
                self._render()
            return None
        return self.approve(interrupt_id, arguments)

    def ask_reject(self, interrupt_id: str) -> None:
        """Open the reason box of a call."""
        if self._waiting_call(interrupt_id) is not None:
            self.card(interrupt_id).open_reject()

    def reject(self, interrupt_id: str, reason: str | None = None) -> BackgroundTask[Any] | None:
        """Reject a call with ``reason`` (default: the reason box's text); the model sees it."""
        call = self._waiting_call(interrupt_id)
        if call is None:
            return None
        text = self.card(interrupt_id).reason_text.value if reason is None else reason
        return self._decide(call, Reject(reason=text.strip()))

    def confirm(self) -> BackgroundTask[Any] | None:
        """Run the decision asked about (a re-run); returns its task."""
        return self.confirm_bar.confirm()

    def cancel(self) -> None:
        """Close the question; the call keeps waiting."""
        self.confirm_bar.cancel()

    def settle(self, interrupt_id: str, result: str | None = None) -> BackgroundTask[Any] | None:
        """Settle an in-doubt call: ``manager.settle(...)`` with what happened — ``result``, or
        the text in the card's box; empty means the model is told the outcome is unknown. The
        turn goes on; the card shows the outcome (a 409 when it was settled already). Returns
        the task, or ``None`` when nothing started."""
        with self._lock:
            call = self.book.get(interrupt_id)
            if call is None or not self.book.doubts(call):
                what = "is not in this panel" if call is None else "is not in doubt"
                self.show_error(
                    InvalidInputError(f"call {interrupt_id!r} {what}; nothing to settle")
                )
                return None
            text = self.card(interrupt_id).settle_text.value if result is None else result

        def done(outcome: ApprovalOutcome) -> None:
            self._record(outcome)
            self.set_status(outcome.text)

        with self._lock:
            self.notes.pop(interrupt_id, None)
            self.book.deciding.add(interrupt_id)
        task = self._act(
            settle_call(self.manager, call, text or None), f"Settling {call.tool_name}", done
        )
        if task is None:
            self.book.deciding.discard(interrupt_id)
        return task

    def _record(self, outcome: ApprovalOutcome) -> None:
        with self._lock:
            if outcome.kind == "invalid":
                self.notes[outcome.interrupt_id] = outcome.text
            else:
                self.book.decide(outcome)

    def _decide(self, call: PendingToolCall, decision: Approve | Reject) -> Any:
        iid = call.interrupt_id
        verb = "Approving" if isinstance(decision, Approve) else "Rejecting"

        def done(outcome: ApprovalOutcome) -> None:
            self._record(outcome)
            self.set_status(outcome.text)

        with self._lock:
            self.notes.pop(iid, None)
            self.book.deciding.add(iid)
        task = self._act(
            resume_call(self.manager, call, decision), f"{verb} {call.tool_name}", done
        )
        if task is None:
            self.book.deciding.discard(iid)
        return task

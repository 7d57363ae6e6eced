"""Approve or reject a selection of calls at once, for the :class:`ApprovalPanel`.

Each waiting call has a box; the bulk bar ticks them all, approves the ticked ones, or opens a
reason box and rejects them. Every button has a method a user can call in a cell
(:meth:`BulkDecisions.select`, :meth:`~BulkDecisions.approve_all`,
:meth:`~BulkDecisions.reject_all`). The calls are decided one after another in one background
action (each is its own ``manager.resume``, so each can win or lose on its own); the confirm
flow of a single call still holds: a call whose original already ran before a rollback is
re-run only after Confirm.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from agcore_lab.agent.approval import Approve, Reject
from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter.approval.ops import ApprovalOutcome, resume_call
from agcore_lab.jupyter.common.history_parts import button
from agcore_lab.jupyter.common.text import plural

if TYPE_CHECKING:
    from agcore_lab.jupyter.approval.book import CallBook
    from agcore_lab.jupyter.approval.card import CallCard
    from agcore_lab.jupyter.common.history_parts import ConfirmBar
    from agcore_lab.jupyter.common.tasks import BackgroundTask
    from agcore_lab.store.pending import PendingToolCall

__all__ = ["BulkBar", "BulkDecisions"]


class BulkBar(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """Select all, Approve selected, Reject selected, and the reason box for the rejection."""

    def __init__(self) -> None:
        self.select_all = widgets.Checkbox(
            value=False,
            description="select all waiting",
            indent=False,
            layout=widgets.Layout(width="auto"),
        )
        self.approve_button = button(
            "Approve selected", style="success", tooltip="Run each selected tool once"
        )
        self.reject_button = button("Reject selected", style="danger")
        self.reason_text = widgets.Text(
            placeholder="Why not? Every selected call's model sees this reason.",
            layout=widgets.Layout(width="60%"),
        )
        self.send_reject_button = button("Confirm reject selected", style="danger")
        self.cancel_reject_button = button("Cancel", tooltip="Do not reject")
        self.reject_box = widgets.HBox(
            [self.reason_text, self.send_reject_button, self.cancel_reject_button],
            layout=widgets.Layout(display="none"),
        )
        row = widgets.HBox([self.select_all, self.approve_button, self.reject_button])
        row.add_class("agc-bulk")
        super().__init__([row, self.reject_box])
        self.add_class("agc-bulk-bar")

    @property
    def rejecting(self) -> bool:
        """Whether the reason box is open."""
        return self.reject_box.layout.display != "none"

    def show(self, selected: int, waiting: int, *, busy: bool) -> None:
        """Label and enable the buttons for ``selected`` ticked calls of ``waiting``."""
        self.layout.display = "" if waiting else "none"
        self.approve_button.description = f"Approve selected ({selected})"
        self.reject_button.description = f"Reject selected ({selected})"
        for b in (self.approve_button, self.reject_button, self.send_reject_button):
            b.disabled = busy or selected == 0
        self.select_all.disabled = busy or waiting == 0
        if selected == 0:
            self.reject_box.layout.display = "none"


class BulkDecisions:
    """The selection methods of :class:`ApprovalPanel` (mixed in; the panel owns the state)."""

    book: CallBook
    cards: dict[str, CallCard]
    bulk: BulkBar
    confirm_bar: ConfirmBar
    manager: Any
    _acting: bool

    if TYPE_CHECKING:  # provided by the panel (and its ManagerView base)

        def card(self, interrupt_id: str) -> CallCard: ...
        def set_status(self, text: str) -> None: ...
        def show_error(self, exc: BaseException | None) -> None: ...
        def _act(self, coro: Any, what: str, done: Any) -> BackgroundTask[Any] | None: ...
        def _record(self, outcome: ApprovalOutcome) -> None: ...
        def _render(self) -> None: ...

    def _wire_bulk(self) -> None:
        bar = self.bulk
        bar.select_all.observe(lambda change: self.select(value=bool(change["new"])), "value")
        bar.approve_button.on_click(lambda _: self.approve_all())
        bar.reject_button.on_click(lambda _: self.ask_reject_all())
        bar.send_reject_button.on_click(lambda _: self.reject_all())
        bar.cancel_reject_button.on_click(lambda _: self._close_bulk_reject())

    @property
    def selected(self) -> list[str]:
        """The interrupt ids of the ticked calls that still wait (oldest first)."""
        return [
            c.interrupt_id
            for c in self.book.calls
            if self.book.waits(c)
            and c.interrupt_id in self.cards
            and self.cards[c.interrupt_id].selected
        ]

    def select(self, interrupt_ids: Iterable[str] | None = None, *, value: bool = True) -> None:
        """Tick (or, ``value=False``, untick) calls; ``None``: every waiting call."""
        waiting = [c.interrupt_id for c in self.book.calls if self.book.waits(c)]
        ids = waiting if interrupt_ids is None else list(interrupt_ids)
        for iid in ids:
            if iid not in waiting:
                self.show_error(InvalidInputError(f"call {iid!r} does not wait; cannot select it"))
                continue
            self.card(iid).select_box.value = value
        self._render()

    def _chosen(self, interrupt_ids: Sequence[str] | None) -> list[PendingToolCall]:
        ids = self.selected if interrupt_ids is None else list(interrupt_ids)
        calls = []
        for iid in ids:
            call = self.book.get(iid)
            if call is None or not self.book.waits(call):
                what = "is not in this panel" if call is None else "waits no more"
                self.show_error(InvalidInputError(f"call {iid!r} {what}; nothing to decide"))
                return []
            calls.append(call)
        if not calls:
            self.set_status("Nothing selected: tick the calls to decide first.")
        return calls

    def approve_all(
        self, interrupt_ids: Sequence[str] | None = None, *, rerun: bool = False
    ) -> BackgroundTask[Any] | None:
        """Approve several calls (default: the selected ones), one after another.

        When some of them already ran once before a rollback, the panel asks first (Confirm
        runs them again) unless ``rerun=True`` says so already. Returns the task, or ``None``
        when nothing started.
        """
        calls = self._chosen(interrupt_ids)
        if not calls:
            return None
        again = [c for c in calls if c.previously_executed]
        if again and not rerun:
            ids = [c.interrupt_id for c in calls]
            self.confirm_bar.ask(
                f"{plural(len(again), 'selected call')} already ran once, before a rollback "
                f"({', '.join(c.tool_name for c in again)}). Approve all "
                f"{len(calls)} and run those again?",
                lambda: self.approve_all(ids, rerun=True),
                action="rerun",
                confirm_label="Run them again",
                on_cancel=lambda: self.set_status("Not approved; the calls still wait."),
            )
            self.set_status("Confirm or Cancel.")
            return None
        return self._decide_many(
            [(c, Approve(rerun=rerun and c.previously_executed)) for c in calls], "Approving"
        )

    def ask_reject_all(self) -> None:
        """Open the reason box for rejecting the selected calls."""
        if self.selected:
            self.bulk.reject_box.layout.display = "flex"
        else:
            self.set_status("Nothing selected: tick the calls to reject first.")

    def _close_bulk_reject(self) -> None:
        self.bulk.reject_box.layout.display = "none"

    def reject_all(
        self, interrupt_ids: Sequence[str] | None = None, reason: str | None = None
    ) -> BackgroundTask[Any] | None:
        """Reject several calls (default: the selected ones) with one ``reason`` (default: the
        bulk reason box's text); each call's model sees it."""
        calls = self._chosen(interrupt_ids)
        if not calls:
            return None
        text = (self.bulk.reason_text.value if reason is None else reason).strip()
        self._close_bulk_reject()
        return self._decide_many([(c, Reject(reason=text)) for c in calls], "Rejecting")

    def _decide_many(
        self, pairs: list[tuple[PendingToolCall, Approve | Reject]], verb: str
    ) -> BackgroundTask[Any] | None:
        async def run() -> list[ApprovalOutcome]:
            return [await resume_call(self.manager, call, choice) for call, choice in pairs]

        def done(outcomes: list[ApprovalOutcome]) -> None:
            for outcome in outcomes:
                self._record(outcome)
            self.bulk.select_all.value = False  # calls listed later start unticked
            went = sum(o.kind in ("executed", "rejected") for o in outcomes)
            failed = [o.text for o in outcomes if o.kind not in ("executed", "rejected")]
            tail = f"; {len(failed)} did not: {failed[0]}" if failed else ""
            self.set_status(f"{verb[:-3]}ed {went} of {plural(len(outcomes), 'call')}{tail}")

        for call, _ in pairs:
            self.book.notes.pop(call.interrupt_id, None)
            self.book.deciding.add(call.interrupt_id)
        task = self._act(run(), f"{verb} {plural(len(pairs), 'call')}", done)
        if task is None:
            for call, _ in pairs:
                self.book.deciding.discard(call.interrupt_id)
        return task

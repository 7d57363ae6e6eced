"""``ApprovalPanel``: tool calls waiting for a person's decision, across a manager's sessions.

A thin view over :meth:`SessionManager.pending_calls`, :meth:`SessionManager.resume` and
:meth:`SessionManager.settle`: every button runs ``manager.resume(session_id, run_id,
interrupt_id, decision)`` (or ``manager.settle(...)`` for an in-doubt call) on agcore_lab's
background loop, and has a method a user can call in a cell (:meth:`ApprovalPanel.approve`,
:meth:`~ApprovalPanel.approve_edited`, :meth:`~ApprovalPanel.reject`, ...). The panel follows
the manager's events — calls decided in a cell, a magic or another view update it at once —
and counts down to each call's expiry; :meth:`~ApprovalPanel.close` stops both.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from agcore_lab.agent.approval import Approve, Reject
from agcore_lab.aio import submit
from agcore_lab.errors import AgcoreError, InvalidInputError
from agcore_lab.jupyter.approval._html import APPROVAL_STYLE, arguments_json, render_calls_table
from agcore_lab.jupyter.approval.book import CallBook
from agcore_lab.jupyter.approval.bulk import BulkBar, BulkDecisions
from agcore_lab.jupyter.approval.card import CallCard
from agcore_lab.jupyter.approval.ops import (
    ApprovalOutcome,
    parse_arguments,
    resume_call,
    settle_call,
)
from agcore_lab.jupyter.approval.turn import render_turn, turn_of_call
from agcore_lab.jupyter.common.history_parts import button
from agcore_lab.jupyter.common.tasks import BackgroundTask
from agcore_lab.jupyter.common.text import error_line
from agcore_lab.jupyter.common.theme import style_tag
from agcore_lab.jupyter.common.view import ManagerView

if TYPE_CHECKING:
    from agcore_lab.engine.manager import SessionManager
    from agcore_lab.store.pending import PendingToolCall

__all__ = ["ApprovalPanel"]

DOUBT_EVERY = 5
"""Countdown ticks between reloads that find calls whose executor's lease ran out."""

logger = logging.getLogger("agcore_lab")


class ApprovalPanel(ManagerView, BulkDecisions):
    """Pending tool calls of every session in a manager, with Approve / Edit / Reject.

    Each call shows its tool, its arguments (escaped JSON), its session, run and interrupt, and
    the time left until it expires (counted down live). Buttons:

    - **Approve** — ``manager.resume(..., Approve())``: the tool runs once and the turn goes on;
      the tool's result and the turn's final reply appear under the call;
    - **Edit arguments** — a JSON editor; **Approve with these arguments** sends
      ``Approve(arguments=...)``. Text that is not a JSON object, or arguments the tool rejects,
      show an error on the call, which keeps waiting;
    - **Reject** — a reason box; **Confirm reject** sends ``Reject(reason=...)`` (the model sees
      the reason);
    - **Approve selected** / **Reject selected** — the same for every ticked call
      (:meth:`approve_all`, :meth:`reject_all`, :meth:`select`);
    - **Settle** — on a call *in doubt* (approved, but the process running the tool stopped:
      it may or may not have run): ``manager.settle(...)`` with what happened, typed in the
      box, or — box empty — "outcome unknown"; the turn goes on (:meth:`settle`).

    Cards are compact: the tool, status and ids on one line, short arguments on the next
    beside the buttons, and the conversation turn that led to the call folded under them.

    A call restored by a rollback whose original already ran (``previously_executed``) carries
    a warning; approving it asks first and then sends ``Approve(rerun=True)``. A resume that
    loses to another one shows ``409 Conflict``, an expired call ``410 Gone``. Calls decided
    elsewhere (a cell, ``%agcore approve``, another process) show how they ended.

    Args:
        manager: The session manager whose store holds the calls.
        page_size: Calls per page.
        tick: Seconds between countdown updates (``None``: no countdown).
        keep_decided: How many decided calls stay listed (newest first) until cleared.

    Example:
        >>> from agcore_lab import Agent, ScriptedModel, SessionManager, Tool, ToolCall
        >>> def transfer(to: str, amount: int) -> str:
        ...     return f"sent {amount} to {to}"
        >>> agent = Agent(name="bank", model=ScriptedModel(
        ...     [ToolCall(name="transfer", arguments={"to": "u2", "amount": 100}), "done"]),
        ...     tools=[Tool.from_function(transfer, requires_approval=True)])
        >>> manager = SessionManager()
        >>> sid = manager.create_sync(agent)
        >>> call = manager.submit_turn_sync(sid, "send 100 to u2").pending_tool_call
        >>> panel = ApprovalPanel(manager, tick=None)
        >>> [c.tool_name for c in panel.pending]
        ['transfer']
        >>> panel.approve(call.interrupt_id).wait(10), panel.wait(10)
        (True, True)
        >>> outcome = panel.outcomes[call.interrupt_id]
        >>> outcome.tool_result, outcome.reply
        ('sent 100 to u2', 'done')
        >>> panel.close()

    Notes:
        Manager events arrive on the thread that made the change; the panel only schedules a
        reload from them. ``panel.wait()`` blocks until reloads and the running decision are
        done. One decision runs at a time.
    """

    def __init__(
        self,
        manager: SessionManager,
        *,
        page_size: int = 10,
        tick: float | None = 1.0,
        keep_decided: int = 20,
    ) -> None:
        super().__init__(manager, page_size=page_size, prev_label="◀ Prev", next_label="Next ▶")
        self.book = CallBook(keep_decided)
        self.cards: dict[str, CallCard] = {}
        self.turns: dict[str, str] = {}  # the HTML of the turn that led to each call
        self.bulk = BulkBar()
        self._wire_bulk()
        self._ticks = 0
        self.tick = tick
        self._expiry_seen: set[str] = set()
        self.style_html.value = style_tag() + APPROVAL_STYLE
        self.cards_box = widgets.VBox()
        self.clear_button = button("Clear decided", tooltip="Remove decided calls from the list")
        self.clear_button.on_click(lambda _: self.clear_decided())
        controls = widgets.HBox(
            [
                self.prev_button,
                self.page_html,
                self.next_button,
                self.refresh_button,
                self.clear_button,
            ],
            layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
        )
        self.children = [
            self.style_html,
            self.header_html,
            self.bulk,
            self.confirm_bar,
            self.status_html,
            self.error_html,
            self.cards_box,
            controls,
        ]
        self.add_class("agc-approval-panel")
        self._loader(self._load, self._loaded)
        self._start()
        self._ticker: concurrent.futures.Future[None] | None = (
            submit(self._count_down(tick)) if tick else None
        )

    # -- loading ------------------------------------------------------------------------------

    async def _load(
        self,
    ) -> tuple[list[PendingToolCall], list[PendingToolCall], dict[str, str]]:
        waiting = self.manager.pending_calls()
        with self._lock:
            left = self.book.stopped_waiting({c.interrupt_id for c in waiting})
            known = set(self.turns)
        # How did they end? A call missing from the store (its turn rolled back, its session
        # destroyed) keeps its old copy.
        ended = [self.manager.store.get_pending(c.interrupt_id) or c for c in left]
        turns = {}
        for call in waiting:  # a turn never changes: read once per call
            if call.interrupt_id not in known:
                try:
                    turns[call.interrupt_id] = render_turn(turn_of_call(self.manager.store, call))
                except AgcoreError:  # a session gone meanwhile: the call shows without it
                    turns[call.interrupt_id] = ""
        return waiting, ended, turns

    def _loaded(
        self, loaded: tuple[list[PendingToolCall], list[PendingToolCall], dict[str, str]]
    ) -> None:
        waiting, ended, turns = loaded
        with self._lock:
            self.turns.update(turns)
            self.book.merge(waiting, ended)
            self._drop_cards()
            self._render()

    def _drop_cards(self) -> None:
        for iid in [i for i in self.cards if self.book.get(i) is None]:
            self.cards.pop(iid).close()
            self.turns.pop(iid, None)

    async def _count_down(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            try:
                self._tick()
            except Exception:  # a countdown must never stop on a rendering problem
                logger.exception("approval panel countdown failed")

    def _tick(self) -> None:
        # An approved call turns in doubt when its executor's lease runs out, which no event
        # announces: read the listing again every few ticks.
        self._ticks += 1
        due = self._ticks % DOUBT_EVERY == 0
        with self._lock:
            for card in list(self.cards.values()):
                card.tick()
            for call in self.pending:
                if call.expired():
                    due = due or call.interrupt_id not in self._expiry_seen
                    self._expiry_seen.add(call.interrupt_id)
        if due:  # the listing moves overdue calls to EXPIRED
            self.refresh()

    # -- what is shown ------------------------------------------------------------------------

    @property
    def calls(self) -> list[PendingToolCall]:
        """The calls shown: waiting (oldest first), then decided (newest first)."""
        return self.book.calls

    @property
    def pending(self) -> list[PendingToolCall]:
        """The calls still waiting for a decision (oldest first)."""
        return [c for c in self.book.calls if self.book.waits(c)]

    @property
    def in_doubt(self) -> list[PendingToolCall]:
        """Approved calls whose executor stopped while the tool ran, not settled yet."""
        return [c for c in self.book.calls if self.book.doubts(c)]

    @property
    def outcomes(self) -> dict[str, ApprovalOutcome]:
        """How each decided call ended, by interrupt id."""
        return self.book.outcomes

    @property
    def notes(self) -> dict[str, str]:
        """Inline errors of calls that still wait, by interrupt id."""
        return self.book.notes

    def _row_count(self) -> int:
        return len(self.calls)

    def page_calls(self) -> list[PendingToolCall]:
        """The calls on the current page."""
        start = self.page * self.page_size
        return self.calls[start : start + self.page_size]

    def card(self, interrupt_id: str) -> CallCard:
        """The widgets of one call (made on first use)."""
        with self._lock:
            card = self.cards.get(interrupt_id)
            if card is not None:
                return card
            call = self.book.get(interrupt_id)
            if call is None:
                raise InvalidInputError(f"no call {interrupt_id!r} in this panel")
            card = self.cards[interrupt_id] = CallCard(call)
            card.approve_button.on_click(lambda _: self.approve(interrupt_id))
            card.edit_button.on_click(lambda _: self.edit(interrupt_id))
            card.reject_button.on_click(lambda _: self.ask_reject(interrupt_id))
            card.send_edit_button.on_click(lambda _: self.approve_edited(interrupt_id))
            card.cancel_edit_button.on_click(lambda _: card.close_editor())
            card.send_reject_button.on_click(lambda _: self.reject(interrupt_id))
            card.cancel_reject_button.on_click(lambda _: card.close_reject())
            card.settle_button.on_click(lambda _: self.settle(interrupt_id))
            card.select_box.observe(lambda _: self._render_bulk(), "value")
            return card

    def _render(self) -> None:
        with self._lock:
            self._render_paging()
            cards = []
            for call in self.page_calls():
                card = self.card(call.interrupt_id)
                iid = call.interrupt_id
                card.show(
                    call,
                    self.outcomes.get(iid),
                    self.notes.get(iid),
                    busy=self._acting,
                    turn=self.turns.get(iid, ""),
                )
                cards.append(card)
            if list(self.cards_box.children) != cards:
                self.cards_box.children = cards
            waiting = len(self.pending)
            doubt = len(self.in_doubt)
            decided = len(self.calls) - waiting - doubt
            empty = "" if self.calls else " · nothing waits for a decision"
            doubts = f" · {doubt} in doubt" if doubt else ""
            self.header_html.value = (
                f'<div class="agc-head"><b>Tool calls waiting for approval</b>'
                f'<span class="agc-count">{waiting} waiting{doubts} · {decided} decided'
                f"{empty}</span></div>"
            )
            self.clear_button.disabled = decided == 0
            self._render_bulk()

    def _render_bulk(self) -> None:
        with self._lock:
            self.bulk.show(len(self.selected), len(self.pending), busy=self._acting)

    # -- decisions ----------------------------------------------------------------------------

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
        return self.confirm_bar.confirm()  # type: ignore[return-value]

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

    def _finished(self) -> None:
        with self._lock:
            self.book.deciding.clear()  # one decision at a time: the one that just ended
        super()._finished()

    def clear_decided(self) -> None:
        """Remove the decided calls from the list."""
        with self._lock:
            self.book.clear_decided()
            self._drop_cards()
            self._render()

    # -- lifetime and reprs -------------------------------------------------------------------

    def close(self) -> None:
        """Stop the countdown, stop following the manager and close the widget."""
        ticker = getattr(self, "_ticker", None)
        if ticker is not None:
            ticker.cancel()
        for card in list(getattr(self, "cards", {}).values()):
            card.close()
        super().close()

    def __repr__(self) -> str:
        waiting = len(self.pending)
        return f"ApprovalPanel({waiting} waiting, {len(self.calls) - waiting} decided)"

    def _repr_html_(self) -> str:
        # Static fallback for nbviewer / exported HTML: the calls as a table.
        table = render_calls_table(self.page_calls(), self.outcomes)
        return (
            f'{style_tag()}{APPROVAL_STYLE}<div class="agc-view">{self.header_html.value}'
            f"{table}</div>"
        )

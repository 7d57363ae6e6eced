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
from typing import TYPE_CHECKING

import ipywidgets as widgets

from agcore_lab.aio import submit
from agcore_lab.errors import AgcoreError, InvalidInputError
from agcore_lab.jupyter.approval._html import APPROVAL_STYLE, render_calls_table
from agcore_lab.jupyter.approval.book import CallBook
from agcore_lab.jupyter.approval.bulk import BulkBar, BulkDecisions
from agcore_lab.jupyter.approval.card import CallCard
from agcore_lab.jupyter.approval.decisions import Decisions
from agcore_lab.jupyter.approval.ops import (
    ApprovalOutcome,
)
from agcore_lab.jupyter.approval.turn import render_turn, turn_of_call
from agcore_lab.jupyter.common.history_parts import button
from agcore_lab.jupyter.common.theme import style_tag
from agcore_lab.jupyter.common.view import ManagerView

if TYPE_CHECKING:
    from agcore_lab.engine.manager import SessionManager
    from agcore_lab.store.pending import PendingToolCall

__all__ = ["ApprovalPanel"]

DOUBT_EVERY = 5
"""Countdown ticks between reloads that find calls whose executor's lease ran out."""

logger = logging.getLogger("agcore_lab")


class ApprovalPanel(Decisions, ManagerView, BulkDecisions):
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

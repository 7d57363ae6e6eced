"""What an approval view knows between reloads: the calls it shows, in order, and how each ended.

:class:`CallBook` is plain data (no widgets, no locking — the view holds its lock around it).
Each reload hands it the calls waiting now and the stored state of the calls that stopped
waiting; it keeps the view's own decisions, marks calls decided elsewhere, and turns an outcome
of a call that still waits (arguments the tool rejected, a re-run that needs confirming) into a
note on that call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agcore_lab.jupyter.approval.ops import ApprovalOutcome, resolved_elsewhere

if TYPE_CHECKING:
    from agcore_lab.store.pending import PendingToolCall

__all__ = ["CallBook"]

_PENDING = "PENDING_APPROVAL"
_UNSETTLED = (_PENDING, "APPROVED_EXECUTING")


class CallBook:
    """The shown calls — waiting (oldest first), being decided, then decided (newest first).

    Attributes:
        outcomes: How each decided call ended, by interrupt id.
        notes: Inline errors of calls that still wait, by interrupt id.
        deciding: Calls this view is deciding right now.
    """

    def __init__(self, keep_decided: int) -> None:
        self.keep_decided = max(0, keep_decided)
        self.outcomes: dict[str, ApprovalOutcome] = {}
        self.notes: dict[str, str] = {}
        self.deciding: set[str] = set()
        self._records: dict[str, PendingToolCall] = {}
        self._decided: list[str] = []  # newest first

    @property
    def calls(self) -> list[PendingToolCall]:
        """Every shown call, in order."""
        return list(self._records.values())

    def get(self, interrupt_id: str) -> PendingToolCall | None:
        """A shown call."""
        return self._records.get(interrupt_id)

    def waits(self, call: PendingToolCall) -> bool:
        """Whether a decision can still be made on ``call``."""
        return call.status == _PENDING and call.interrupt_id not in self.outcomes

    def doubts(self, call: PendingToolCall) -> bool:
        """Whether ``call`` is in doubt (approved, its executor died) and not settled here."""
        return call.in_doubt and call.interrupt_id not in self.outcomes

    def stopped_waiting(self, listed: set[str]) -> list[PendingToolCall]:
        """Calls shown as waiting (or running) that the latest listing no longer has: their
        stored state is read again until it is final, so a card shows what actually ran."""
        return [c for c in self.calls if c.status in _UNSETTLED and c.interrupt_id not in listed]

    def merge(self, waiting: list[PendingToolCall], left: list[PendingToolCall]) -> None:
        """Take a reload: the calls waiting now, and the stored state of those that left (a
        call missing from the store comes back unchanged, still ``PENDING_APPROVAL``)."""
        listed = {c.interrupt_id for c in waiting}
        for call in [*waiting, *left]:
            self._records[call.interrupt_id] = call
        for call in left:
            iid = call.interrupt_id
            if iid in self.deciding or iid in self.outcomes:
                continue  # this view's own decision: its outcome comes with the action
            if call.status == _PENDING:
                text = "No longer waiting: its turn was rolled back, or its session was destroyed."
                self.decide(ApprovalOutcome(iid, "not_found", text))
            else:
                self.decide(resolved_elsewhere(call))
        for iid in listed:  # an outcome of a call that still waits is only a note
            outcome = self.outcomes.pop(iid, None)
            if outcome is not None:
                self.notes[iid] = outcome.text
                self._decided = [i for i in self._decided if i != iid]
        busy = [i for i in self.deciding if i not in listed]
        order = [c.interrupt_id for c in sorted(waiting, key=lambda c: c.created_at)]
        order += busy + [i for i in self._decided if i not in listed and i not in busy]
        self._records = {i: self._records[i] for i in order if i in self._records}

    def decide(self, outcome: ApprovalOutcome) -> None:
        """Record how a call ended; only the newest ``keep_decided`` decided calls stay."""
        iid = outcome.interrupt_id
        self.outcomes[iid] = outcome
        self.notes.pop(iid, None)
        self._decided = [iid, *(i for i in self._decided if i != iid)]
        for old in self._decided[self.keep_decided :]:
            self.outcomes.pop(old, None)
            self._records.pop(old, None)
        self._decided = self._decided[: self.keep_decided]

    def clear_decided(self) -> None:
        """Forget the decided calls."""
        for iid in self._decided:
            self.outcomes.pop(iid, None)
        self._decided = []
        self._records = {i: c for i, c in self._records.items() if self.waits(c)}

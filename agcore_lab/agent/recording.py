"""Recording model calls: a ``CallRecorder`` per turn (or summary) notes each model call.

The hook is small on purpose: the one place a turn sends a request (``agent/turn.py``
``_ask``) and the one place a summary is asked for (``agent/summary.py``) call
:meth:`CallRecorder.begin` and then :meth:`CallProbe.done` or :meth:`CallProbe.fail`. The
recorder keeps the calls in memory as notes (:class:`~agcore_lab.llm.call_note.CallNote`:
references and integers, no record, no request hash); the session stores them in the same
transaction as the turn's commit (``Store.commit(calls=...)``), and the store derives the
request hash when a call is read. The calls of a turn that fails or is cancelled are stored in
a write of their own (:meth:`CallRecorder.abandon`), with their error. ``recorder.calls``
builds the :class:`~agcore_lab.llm.call_record.ModelCall` records on demand.

A turn's usual call (see ``CallRecorder.quick``: a Full slot's whole history, not streamed,
no request parameters, no redactor or listener) takes no probe at all: ``_ask`` keeps it as
one tuple in the recorder (:mod:`agcore_lab.llm.turn_calls`), which reads as the note its
probe would have made.

Storage cost: a call's history is not copied — the recorder notes the chain node the request's
history window ends at and how many messages it covers; only messages outside the stored
chains (system prompt, injected summary, messages of a turn that was never committed) are
stored by content, once each. A turn's usual call (answered with a message of the turn's
commit, no redactor or listener) is marked ``rides``: the store keeps it on its answer's row
(no row of its own, see :mod:`agcore_lab.store._calls_lean`).

Recording is on by default. ``Agent(record_calls=False)`` or
``RuntimeBundle(record_calls=False)`` (a manager's bundle: ``manager.record_calls = False``)
turns it off: then no recorder exists and a turn does no extra work. A redactor
(``RuntimeBundle(call_redactor=fn)``) sees every call before it is kept and returns the call to
keep (e.g. ``call.model_copy(update=...)``, see :func:`redact_tool_results`) or ``None`` to
drop it; the stored call keeps the request hash of the request as sent. Listeners
(``RuntimeBundle.call_listeners``: live views, telemetry) get each call's record as it ends;
with a redactor or a listener the recorder hashes each request as it is sent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias

from pydantic import JsonValue

from agcore_lab.agent.call_probe import CallProbe, error_text
from agcore_lab.agent.slots import ContextSlot
from agcore_lab.llm.base import ChatModel, ToolSpec
from agcore_lab.llm.call_note import CallNote, to_note
from agcore_lab.llm.call_record import CallKind, ModelCall
from agcore_lab.llm.messages import Message, ToolMessage
from agcore_lab.llm.turn_calls import QuickCall, TurnCalls, bare_note, quick_note
from agcore_lab.llm.usage import PriceTable
from agcore_lab.llm.window import MessageWindow

if TYPE_CHECKING:
    from agcore_lab.agent.agent import Agent
    from agcore_lab.agent.bundle import RuntimeBundle
    from agcore_lab.store.base import Store


class _Recording(Protocol):
    session_id: str
    agent: Agent
    bundle: RuntimeBundle
    call_retries: list[int] | None


__all__ = [
    "CallListener",
    "CallProbe",
    "CallRecorder",
    "CallRedactor",
    "recorder_for",
    "redact_tool_results",
]

logger = logging.getLogger("agcore_lab")

CallRedactor: TypeAlias = Callable[[ModelCall], ModelCall | None]
CallListener: TypeAlias = Callable[[ModelCall], None]


def redact_tool_results(call: ModelCall, replacement: str = "[redacted]") -> ModelCall:
    """A redactor that keeps every tool result out of the stored request.

    Example:
        >>> from agcore_lab import RuntimeBundle
        >>> bundle = RuntimeBundle(call_redactor=redact_tool_results)
    """
    messages = [
        m.model_copy(update={"content": replacement}) if isinstance(m, ToolMessage) else m
        for m in call.request_messages
    ]
    return call.model_copy(update={"request_messages": messages})


def model_params(model: ChatModel) -> dict[str, JsonValue]:
    """The request parameters a model sends (``request_params`` when it has them)."""
    params = getattr(model, "request_params", None)
    return dict(params) if isinstance(params, dict) else {}


_NO_PRICES = PriceTable()
_NO_LISTENERS: list[CallListener] = []  # shared, never appended to: a recorder only reads it


class CallRecorder(TurnCalls):
    """Collects the model calls of one turn (or one summary) of a session; as a sequence, its
    calls as notes (a :class:`~agcore_lab.llm.turn_calls.TurnCalls`: what the store writes).

    Made for every turn. The class holds the defaults of a turn's recorder with no redactor
    and no listener, so a turn's recorder sets only what it has of its own; the session,
    slot, turn index and kind are read from ``header``.

    Args:
        store: Where :meth:`abandon` writes the calls of a failed turn.
        session_id: The session.
        slot: The slot the turn works on, as it is before the turn (stored state).
        turn_index: The turn's number.
        kind: ``turn``, ``summary`` or ``merge``.
        prices: Prices for each call's cost.
        redactor: Sees each call first; returns the call to keep or ``None``.
        listeners: Called with each kept call (live views, telemetry).
        counter: The list HTTP backends count a usual call's retries in (see
            :data:`~agcore_lab.llm.call_record.RETRIES`); a new one by default.
    """

    store: Store
    base_head: str | None
    base_len: int
    counter: list[int]
    _slot_lens: list[int]
    prices: PriceTable = _NO_PRICES
    redactor: CallRedactor | None = None
    listeners: list[CallListener] = _NO_LISTENERS
    # A redactor or a listener sees a full record: hash each request as it is sent.
    eager_hash = False
    # A turn's usual calls need no probe: the turn notes them as bare tuples (``quick``:
    # whether it may), counting their retries in ``counter`` (see agent/turn.py).
    quick = True
    _written = False

    def __init__(
        self,
        store: Store,
        session_id: str,
        slot: ContextSlot,
        *,
        turn_index: int,
        kind: CallKind = "turn",
        prices: PriceTable | None = None,
        redactor: CallRedactor | None = None,
        listeners: Sequence[CallListener] = (),
        counter: list[int] | None = None,
    ) -> None:
        # Only what differs from the class's defaults is set: this runs for every turn.
        self.store = store
        self.header: tuple[str, str, int, CallKind] = (session_id, slot.slot_id, turn_index, kind)
        self.base_head = slot.head_node_id
        self.base_len = len(slot.messages)
        if prices is not None:
            self.prices = prices
        if redactor is not None or listeners:
            self.redactor = redactor
            if listeners:
                self.listeners = list(listeners)
            self.eager_hash = True
            self.quick = False
        elif kind != "turn":
            self.quick = False
        # ``counter``: the retry counter to use (a session's turns share one, see
        # :func:`recorder_for`); a new one by default.
        self.counter = [0] if counter is None else counter
        self.entries = []  # what the store writes (see CallNote, TurnCalls)
        self._slot_lens = []

    @property
    def session_id(self) -> str:
        """The session whose calls these are."""
        return self.header[0]

    @property
    def slot_id(self) -> str:
        """The slot the turn works on."""
        return self.header[1]

    @property
    def turn_index(self) -> int:
        """The turn's number."""
        return self.header[2]

    @property
    def kind(self) -> CallKind:
        """``turn``, ``summary`` or ``merge``."""
        return self.header[3]

    @property
    def notes(self) -> CallRecorder:
        """The kept calls, as notes (the recorder itself: see :class:`TurnCalls`)."""
        return self

    @property
    def calls(self) -> list[ModelCall]:
        """The kept calls as records (built on first access; the store does not need them)."""
        return [note.to_call() for note in self.notes]

    def begin(
        self,
        model: ChatModel,
        context: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        stream: bool = False,
        slot: ContextSlot | None = None,
        system_prompt: str = "",
    ) -> CallProbe:
        """A request is about to be sent; ``slot`` is the slot whose history it carries."""
        return CallProbe(
            self, model, context, tools, stream=stream, slot=slot, system_prompt=system_prompt
        )

    def keep_retried(self, entry: QuickCall, retries: int) -> None:
        """Keep a usual call (see ``quick``) that took ``retries`` retries, as its note."""
        note = quick_note(self.header, entry)
        note.retries = retries
        self.entries.append(note)
        self._slot_lens.append(entry[2])

    def quick_failed(
        self,
        request: MessageWindow,
        heads: tuple[Message, ...],
        tail: int,
        tools: Sequence[ToolSpec],
        model: str,
        anchor: str | None,
        started: int,
        perf: int,
        exc: BaseException,
    ) -> None:
        """A usual request (noted with no probe, see ``quick``) failed: keep it as its
        probe's :meth:`CallProbe.fail` would, and store the recorder's calls at once."""
        note = bare_note(self.header, request, heads, tail, tools, model, anchor, started)
        note.latency_ns = time.perf_counter_ns() - perf
        note.retries = self.counter[0]
        note.status, note.error = "error", error_text(exc)
        self.entries.append(note)
        self._slot_lens.append(tail)
        self.abandon()

    def keep(self, probe: CallProbe, *, response_in_chain: bool) -> None:
        """Keep ``probe``'s call (after the redactor), placed in the chains as it saw it."""
        stored = probe.response_stored = response_in_chain and probe.response is not None
        if self.redactor is None and not self.listeners:  # the usual case: keep it as it is
            # Answered with a message of the turn's commit, not redacted, no hash yet: the
            # store may keep it on its answer's row.
            probe.rides = stored and probe.status == "ok" and probe.tail is not None
            self.entries.append(probe)
            self._slot_lens.append(probe._slot_len)
            return
        note: CallNote = probe
        if self.redactor is not None:
            call = probe.to_call()
            try:
                redacted = self.redactor(call)
            except Exception:
                logger.exception("call redactor failed; the call is not recorded")
                return
            if redacted is None:
                return
            if redacted is not call:
                note = _redacted_note(probe, call, redacted)
        self.entries.append(note)
        self._slot_lens.append(probe._slot_len)
        for listener in self.listeners:
            try:
                listener(note.to_call())
            except Exception:
                logger.exception("model-call listener %r failed", listener)

    def abandon(self) -> None:
        """Store the calls now: their turn failed or was cancelled and will not commit.

        Their history tails are cut back to what is stored (the messages the turn added are
        kept by content instead), and their responses are kept by content.
        """
        if self._written or not self.entries:
            return
        self._written = True
        # The slot's length at each call: noted for every note; a usual call's (a tuple, see
        # TurnCalls) is its request's history.
        lens = iter(self._slot_lens)
        for index, entry in enumerate(self.entries):
            if type(entry) is tuple:
                slot_len = entry[2]
            else:
                slot_len = next(lens)
            note = self[index]
            tail = note.tail[1] if note.tail is not None else 0
            added = max(0, slot_len - self.base_len)
            note.tail = (self.base_head, max(0, tail - added)) if self.base_head else None
            note.response_stored = note.rides = False
        try:
            self.store.insert_calls(self)
        except Exception:
            logger.exception("could not store the calls of a failed turn in %s", self.session_id)


def _redacted_note(probe: CallProbe, call: ModelCall, redacted: ModelCall) -> CallNote:
    """The note of what a redactor kept: the history tail is read from the chains only
    where the redactor left the messages as they were; the hash stays the one of the
    request as sent (a replay of the same request must find it)."""
    note = to_note(redacted)
    anchor, tail = probe.tail if probe.tail is not None else (None, 0)
    for offset in range(tail):
        if redacted.request_messages[-1 - offset] is not call.request_messages[-1 - offset]:
            tail = offset
            break
    note.tail = (anchor, tail) if anchor else None
    note.response_stored = probe.response_stored and redacted.response is call.response
    return note


def recorder_for(
    session: _Recording, slot: ContextSlot, *, turn_index: int, kind: CallKind = "turn"
) -> CallRecorder | None:
    """A recorder for the next turn (or summary) of ``session``, or ``None`` when the agent
    or the bundle has recording off."""
    bundle = session.bundle
    if not (bundle.record_calls and session.agent.record_calls):
        return None
    counter = None
    if kind == "turn":
        # A session's turns share one retry counter (they never overlap; a turn of another
        # session, in another task, sets its own), so the context variable HTTP backends
        # count retries in is set once per task, not for every turn.
        counter = session.call_retries
        if counter is None:
            counter = session.call_retries = [0]
    return CallRecorder(
        bundle.store,
        session.session_id,
        slot,
        turn_index=turn_index,
        kind=kind,
        prices=bundle.prices,
        redactor=bundle.call_redactor,
        listeners=bundle.call_listeners,
        counter=counter,
    )

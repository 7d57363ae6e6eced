"""``TurnCalls``: the model calls of one turn, the usual ones kept as bare tuples.

A turn's usual call — one request over a Full slot's whole history, answered, not streamed,
no retry, no request parameters, no redactor and no listener — is the call every turn makes,
and recording it must cost the turn next to nothing. So the turn notes it as one tuple, a
:data:`QuickCall` (the request window, the tools, the model name, the node the history ends
at, the wall clock at its start, its latency, the response and its cost): no note object, no
analysis of the request. Everything a :class:`~agcore_lab.llm.call_note.CallNote` would hold
follows from these (see :func:`quick_note`): the request's head is the system prompt (when
there is one) and the rest is the slot's whole history, so the tail is the window's history
length; the call id is the start's clock and the answer's random digits.

SQLite writes such a call straight from the tuple onto its answer's row
(:mod:`agcore_lab.store._calls_lean`); any other reader (another store, a failed turn's own
write, ``recorder.calls``) sees it as the note :func:`quick_note` builds — the very note the
call's probe would have made — through the :class:`TurnCalls` sequence, which builds each note
once, in place.

Example:
    >>> from agcore_lab.llm.base import ChatResponse
    >>> from agcore_lab.llm.messages import AssistantMessage, UserMessage
    >>> from agcore_lab.llm.usage import Usage
    >>> from agcore_lab.llm.window import MessageWindow
    >>> calls = TurnCalls(("ses_1", "main", 1, "turn"))
    >>> window = MessageWindow((), [UserMessage(content="hi")], 1)
    >>> answer = ChatResponse(
    ...     message=AssistantMessage(content="hello"), model="m", usage=Usage(requests=1)
    ... )
    >>> entry = (window, (), 1, (), "m", "msg_x", 1_000_000_000, 5_000, answer, 0.0)
    >>> calls.entries.append(entry)
    >>> calls[0].tail, calls[0].latency_ns, calls[0].response.content
    (('msg_x', 1), 5000, 'hello')
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeAlias, overload

from agcore_lab.ids import new_id_value
from agcore_lab.llm.base import ChatResponse, ToolSpec
from agcore_lab.llm.call_note import SYSTEM_PROMPT_ONLY, CallNote
from agcore_lab.llm.call_record import CallKind
from agcore_lab.llm.messages import Message
from agcore_lab.llm.replay import REPLAYED_KEY
from agcore_lab.llm.window import MessageWindow

__all__ = ["QuickCall", "TurnCalls", "bare_note", "quick_note"]

#: ``(request, its head messages, its history's length, tools, model name, anchor node,
#: started ns (wall clock), latency ns, response, cost)``: a turn's usual call (see the module
#: docstring).
QuickCall: TypeAlias = tuple[
    MessageWindow,
    tuple[Message, ...],
    int,
    Sequence[ToolSpec],
    str,
    str | None,
    int,
    int,
    ChatResponse,
    float,
]
Header: TypeAlias = tuple[str, str, int, CallKind]

_MASK = (1 << 20) - 1


_VALUES = {c: v for v, c in enumerate("0123456789abcdefghjkmnpqrstvwxyz")}  # ids' digits


def _digits(message_id: str) -> int | None:
    # The random digits of a new_id("msg") id (its last 4 of 17 base-32 digits), or None.
    if type(message_id) is not str or len(message_id) != 21 or not message_id.startswith("msg_"):
        return None
    values = _VALUES
    value = 0
    for char in message_id[17:]:
        digit = values.get(char)
        if digit is None:
            return None
        value = value << 5 | digit
    return value


def quick_note(header: Header, entry: QuickCall) -> CallNote:
    """The note of ``entry``: the one the call's probe would have made (same fields).

    The call id is ``started << 20 | the answer id's random digits``, so the same call gets
    the same id however often it is built (SQLite writes it without building the note)."""
    request, heads, tail, tools, model, anchor, started, latency, response, cost = entry
    message = response.message
    note = bare_note(
        header, request, heads, tail, tools, model, anchor, started, _digits(message.id)
    )
    note.latency_ns = latency
    note.response = message
    note.finish_reason = response.finish_reason
    note.usage = response.usage
    note.cost = cost
    note.replayed = REPLAYED_KEY in message.metadata
    note.response_stored = header[3] == "turn"
    note.rides = note.response_stored and note.tail is not None
    return note


def bare_note(
    header: Header,
    request: MessageWindow,
    heads: tuple[Message, ...],
    tail: int,
    tools: Sequence[ToolSpec],
    model: str,
    anchor: str | None,
    started: int,
    digits: int | None = None,
) -> CallNote:
    """The note of a usual request as it is sent (no answer yet): what its probe notes
    at the start (``heads``: the request's messages before its ``tail`` of history).
    ``digits``: the call id's random digits (drawn when ``None``)."""
    note = CallNote(
        "",
        *header,
        model,
        request,
        tools,
        injected=SYSTEM_PROMPT_ONLY if heads else None,
        started_ns=started,
        tail=(anchor, tail) if anchor else None,
    )
    note._call_id = None
    note.id_value = started << 20 | (digits if digits is not None else new_id_value() & _MASK)
    return note


class TurnCalls(Sequence[CallNote]):
    """The calls of one recorder, in call order: notes, and usual calls as bare tuples.

    As a sequence it holds notes only: an entry that is a tuple is built into its note
    (:func:`quick_note`) when first read, and replaced by it. ``entries`` is the raw list, for
    code that can write a tuple as it is (SQLite) and for the recorder.

    Args:
        header: ``(session id, slot id, turn index, kind)`` of every call.
    """

    __slots__ = ("entries", "header")

    def __init__(self, header: Header) -> None:
        self.header = header
        self.entries: list[CallNote | QuickCall] = []

    def __len__(self) -> int:
        return len(self.entries)

    @overload
    def __getitem__(self, index: int) -> CallNote: ...

    @overload
    def __getitem__(self, index: slice) -> list[CallNote]: ...

    def __getitem__(self, index: int | slice) -> CallNote | list[CallNote]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self.entries)))]
        entry = self.entries[index]
        if isinstance(entry, CallNote):
            return entry
        note = self.entries[index] = quick_note(self.header, entry)
        return note

    def __iter__(self) -> Iterator[CallNote]:
        for index in range(len(self.entries)):
            yield self[index]

    def __repr__(self) -> str:
        return f"TurnCalls({self.header!r}, {len(self.entries)} calls)"

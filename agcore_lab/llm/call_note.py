"""``CallNote``: a model call as the recorder notes it while a turn runs — references only.

Recording must cost a turn next to nothing, and the calls it records are read rarely. So a
call is first a note: the objects the request and the answer already are (the request's
message window, the tools offered, the response message, its usage), a few integers (wall
clock and latencies in nanoseconds) and where its history is in the stored chains. No record
is validated, no message copied, no timestamp object made, and the request hash is not
computed: the store derives it when the call is read, from the stored parts (the same value,
see :func:`~agcore_lab.llm.call_record.request_hash`). The
:class:`~agcore_lab.llm.call_record.ModelCall` record is built only when someone asks for it
(:meth:`CallNote.to_call`: a listener, a redactor, ``recorder.calls``).

Example:
    >>> from agcore_lab.llm.messages import UserMessage
    >>> note = CallNote("call_1", "ses_1", "main", 1, "turn", "m", [UserMessage(content="hi")])
    >>> call = note.to_call()
    >>> call.request_hash == request_hash(call.request_messages, (), "m", {})
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from pydantic import JsonValue

from agcore_lab.ids import id_text
from agcore_lab.llm.base import ToolSpec
from agcore_lab.llm.call_record import (
    CallKind,
    CallStatus,
    ModelCall,
    construct_call,
    request_hash,
)
from agcore_lab.llm.messages import AssistantMessage, Message
from agcore_lab.llm.usage import Usage

__all__ = ["SYSTEM_PROMPT_ONLY", "CallNote", "to_note"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NO_USAGE = Usage()
# The labels of the usual request's head (just the system prompt): one shared dict, which no
# note changes (a record gets a copy), so the store can tell it at a glance.
SYSTEM_PROMPT_ONLY: dict[int, str] = {0: "system_prompt"}


class CallNote:
    """One recorded model call, not yet a record (see the module docstring).

    Attributes are those of :class:`~agcore_lab.llm.call_record.ModelCall` with times as
    integers (``started_ns``: wall clock, ns since the epoch; ``latency_ns``, ``ttft_ns``),
    ``params`` ``None`` for none, ``request_hash`` ``None`` until someone computes it (the
    store then derives it at read time), and the chain placement the store needs: ``tail``
    (the node the request's history ends at and how many request messages it covers) and
    ``response_stored`` (the response is a message of the turn's commit). ``id_value``: the
    number the call id is made of (:func:`~agcore_lab.ids.new_id_value`) when the recorder
    made it; ``rides``: the recorder's word that this is a turn's common call (answered, not
    redacted, no hash stored as sent), which the store may keep on its answer's row.
    """

    # Defaults are class attributes: a note sets only what differs (it is made per call).
    id_value: int | None = None
    _call_id: str | None = None
    rides = False
    tools: Sequence[ToolSpec] = ()
    params: dict[str, JsonValue] | None = None
    injected: dict[int, str] | None = None
    window_start = 0
    started_ns = 0
    streamed = False
    tail: tuple[str, int] | None = None
    latency_ns = 0
    ttft_ns: int | None = None
    retries = 0
    status: CallStatus = "ok"
    error: str | None = None
    response: AssistantMessage | None = None
    response_stored = False
    finish_reason: str | None = None
    usage = _NO_USAGE
    cost = 0.0
    replayed = False
    request_hash: str | None = None
    _call: ModelCall | None = None

    def __init__(
        self,
        call_id: str,
        session_id: str,
        slot_id: str,
        turn_index: int,
        kind: CallKind,
        model: str,
        request: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        params: dict[str, JsonValue] | None = None,
        injected: dict[int, str] | None = None,
        window_start: int = 0,
        started_ns: int = 0,
        streamed: bool = False,
        tail: tuple[str, int] | None = None,
    ) -> None:
        self._call_id = call_id
        self.session_id = session_id
        self.slot_id = slot_id
        self.turn_index = turn_index
        self.kind: CallKind = kind
        self.model = model
        self.request = request
        self.tools = tools
        self.params = params
        self.injected = injected
        self.window_start = window_start
        self.started_ns = started_ns
        self.streamed = streamed
        self.tail = tail

    @property
    def call_id(self) -> str:
        """The call's id (made from ``id_value`` when first asked for, if the note has one:
        a turn's common call is stored by that number)."""
        text = self._call_id
        if text is None:
            assert self.id_value is not None, "a note has an id or an id value"
            text = self._call_id = id_text("call", self.id_value)
        return text

    def hash(self) -> str:
        """The request hash (computed once, from the request as it was sent)."""
        if self.request_hash is None:
            self.request_hash = request_hash(
                self.request, self.tools, self.model, self.params or {}
            )
        return self.request_hash

    def to_call(self) -> ModelCall:
        """The :class:`~agcore_lab.llm.call_record.ModelCall` record of this call (built
        once; later changes to the note are not seen by it)."""
        if self._call is not None:
            return self._call
        call = construct_call(
            {
                "call_id": self.call_id,
                "session_id": self.session_id,
                "slot_id": self.slot_id,
                "turn_index": self.turn_index,
                "kind": self.kind,
                "model": self.model,
                "params": dict(self.params) if self.params else {},
                "request_messages": self.request,
                "tools": list(self.tools),
                "injected": dict(self.injected) if self.injected else {},
                "window_start": self.window_start,
                "response": self.response,
                "finish_reason": self.finish_reason,
                "usage": self.usage,
                "cost": self.cost,
                "started_at": _EPOCH + timedelta(microseconds=self.started_ns // 1000),
                "latency_s": self.latency_ns / 1e9,
                "ttft_s": self.ttft_ns / 1e9 if self.ttft_ns is not None else None,
                "streamed": self.streamed,
                "retries": self.retries,
                "status": self.status,
                "error": self.error,
                "replayed": self.replayed,
                "request_hash": self.hash(),
            }
        )
        private = call.__pydantic_private__
        assert private is not None
        private["_tail"] = self.tail
        private["_response_stored"] = self.response_stored
        self._call = call
        return call

    def __repr__(self) -> str:
        return f"CallNote({self.call_id!r}, turn={self.turn_index}, kind={self.kind!r})"


def to_note(call: ModelCall | CallNote) -> CallNote:
    """``call`` as a note (a record's fields as they are, its hash kept)."""
    if isinstance(call, CallNote):
        return call
    moment = call.started_at if call.started_at.tzinfo else call.started_at.replace(tzinfo=UTC)
    note = CallNote(
        call.call_id,
        call.session_id,
        call.slot_id,
        call.turn_index,
        call.kind,
        call.model,
        call.request_messages,
        call.tools,
        params=call.params or None,
        injected=call.injected or None,
        window_start=call.window_start,
        started_ns=(moment - _EPOCH) // timedelta(microseconds=1) * 1000,
        streamed=call.streamed,
        tail=call._tail,
    )
    note.latency_ns = round(call.latency_s * 1e9)
    note.ttft_ns = round(call.ttft_s * 1e9) if call.ttft_s is not None else None
    note.retries = call.retries
    note.status = call.status
    note.error = call.error
    note.response = call.response
    note.response_stored = call._response_stored
    note.finish_reason = call.finish_reason
    note.usage = call.usage
    note.cost = call.cost
    note.replayed = call.replayed
    note.request_hash = call.request_hash
    note._call = call
    return note

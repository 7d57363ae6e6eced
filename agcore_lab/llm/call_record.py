"""``ModelCall``: the record of one request sent to a model, and its stable request hash.

A ``ModelCall`` holds exactly what the model saw (the request messages in order, the tools
offered, the model's name and parameters) and what came back (the response message, finish
reason, usage, cost, latency, time to first token when streamed), or the error when it failed.
Sessions record one per request (see :mod:`agcore_lab.agent.recording`); the store keeps them
without copying the messages its chains already hold.

The request hash (:func:`request_hash`) is a digest of the wire form of the messages, the tools
and the parameters — never of message ids or times — so the same request made again, in another
session or another process, has the same hash. :class:`~agcore_lab.llm.replay.ReplayModel`
answers by it.

Example:
    >>> from agcore_lab.llm.messages import UserMessage
    >>> a = request_hash([UserMessage(content="hi")], (), "gpt-4o", {})
    >>> b = request_hash([UserMessage(content="hi")], (), "gpt-4o", {})
    >>> a == b and len(a) == 32
    True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, PrivateAttr

from agcore_lab.errors import InvalidInputError
from agcore_lab.ids import utcnow
from agcore_lab.llm.base import ToolSpec
from agcore_lab.llm.messages import AssistantMessage, Message, to_openai
from agcore_lab.llm.usage import Usage, format_cost

__all__ = [
    "CallKind",
    "CallStatus",
    "EMPTY_FOLD",
    "Fold",
    "RETRIES",
    "ModelCall",
    "construct_call",
    "describe_call",
    "finish_hash",
    "fold",
    "join_folds",
    "load_calls",
    "message_digest",
    "note_retry",
    "request_hash",
    "wire_form",
]

CallKind = Literal["turn", "summary", "merge"]
CallStatus = Literal["ok", "error"]


# The retry counter of the model call in flight (set by the call recorder, bumped by HTTP
# backends each time they retry), so a call's record says how many retries it took.
RETRIES: ContextVar[list[int] | None] = ContextVar("agcore_call_retries", default=None)


def note_retry() -> None:
    """Count one retry of the model call in flight (backends call it before retrying)."""
    counter = RETRIES.get()
    if counter is not None:
        counter[0] += 1


def wire_form(message: Message) -> dict[str, JsonValue]:
    """What of a message the model sees (the OpenAI wire form: no id, time or metadata)."""
    wire: dict[str, JsonValue] = to_openai(message)
    return wire


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _canonical(value: object) -> str:
    return _ENCODER.encode(value)


# The request hash folds per-message digests d_i into R = sum(d_i * B**i) modulo a Mersenne
# prime, kept with B**len as a fold state, so a request that extends a known one (the next
# call of a tool loop, the next turn) is hashed in O(what it adds), and a short head (the
# system prompt) joins a long history cheaply: R(a + b) = R(a) + B**len(a) * R(b).
# Collisions are about len / 2**127 likely: fine for matching requests, not a cryptographic
# commitment.
_P = (1 << 127) - 1
_B = 0x5BD1E9955BD1E9955BD1E9955BD1E995 % _P
_DIGESTS: dict[int, tuple[object, int]] = {}
_DIGESTS_MAX = 50_000
Fold = tuple[int, int]  # (R, B**len) of a message sequence
EMPTY_FOLD: Fold = (0, 1)


def _wire_text(message: Message) -> str:
    # What the model sees of a message, as one string. Fields are read from the instance
    # dict: a missing attribute on a pydantic model costs an exception.
    fields = message.__dict__
    content = fields.get("content")
    calls = fields.get("tool_calls") or ()
    return "\x1f".join(
        (
            fields["role"],
            "" if content is None else "=" + str(content),
            fields.get("tool_call_id") or "",
            fields.get("name") or "",
            _canonical([c.to_openai() for c in calls]) if calls else "",
        )
    )


def message_digest(message: Message) -> int:
    """The digest of a message's wire form (cached per message object: messages are
    immutable)."""
    cached = _DIGESTS.get(id(message))
    if cached is not None and cached[0] is message:
        return cached[1]
    raw = hashlib.blake2b(_wire_text(message).encode(), digest_size=16).digest()
    value = int.from_bytes(raw, "big") % _P
    if len(_DIGESTS) >= _DIGESTS_MAX:
        _DIGESTS.clear()
    _DIGESTS[id(message)] = (message, value)
    return value


def fold(messages: Sequence[Message], start: Fold = EMPTY_FOLD) -> Fold:
    """The fold of ``start``'s messages followed by ``messages``."""
    value, power = start
    for message in messages:
        value = (value + power * message_digest(message)) % _P
        power = power * _B % _P
    return value, power


def join_folds(head: Fold, tail: Fold) -> Fold:
    """The fold of ``head + tail`` from the folds of both parts."""
    return (head[0] + head[1] * tail[0]) % _P, head[1] * tail[1] % _P


_TOOLS: dict[tuple[int, ...], tuple[tuple[ToolSpec, ...], str]] = {}


def _tools_text(tools: Sequence[ToolSpec]) -> str:
    # Cached per set of tool objects: an agent offers the same ToolSpec objects every call.
    key = tuple(id(t) for t in tools)
    cached = _TOOLS.get(key)
    if cached is not None and all(a is b for a, b in zip(cached[0], tools, strict=True)):
        return cached[1]
    text = _canonical([t.to_openai() for t in tools])
    if len(_TOOLS) >= 1_000:
        _TOOLS.clear()
    _TOOLS[key] = (tuple(tools), text)
    return text


def finish_hash(
    folded: Fold,
    count: int,
    tools: Sequence[ToolSpec],
    model: str,
    params: dict[str, JsonValue],
) -> str:
    """The request hash from the fold of its ``count`` messages, its tools, model and params."""
    body = _canonical(params) if params else "{}"
    text = f"{folded[0]:032x}:{count}:{_tools_text(tools)}:{len(model)}:{model}:{body}"
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def request_hash(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    model: str,
    params: dict[str, JsonValue],
) -> str:
    """A stable digest (32 hex digits) of a request: messages, tools, model and parameters.

    Message ids, times and metadata do not count: they never reach the model.
    """
    return finish_hash(fold(messages), len(messages), tools, model, params)


class ModelCall(BaseModel):
    """One request a session sent to a model, and what came back.

    Attributes:
        call_id: Time-ordered id (``call_...``).
        session_id: The session that sent it.
        slot_id: The slot whose context was sent.
        turn_index: The turn it belongs to (for a summary: the turn after which it was made).
        kind: ``turn`` (a turn's tool-loop step), ``summary``, or ``merge`` (the request a
            Summarize-strategy slot merge sends).
        model: The model's name.
        params: The model's parameters that were sent (temperature, max tokens, ...).
        request_messages: The exact messages sent, in order (system prompt, injected
            summary, pinned messages, the history window).
        tools: The tools offered.
        injected: Indices into ``request_messages`` of messages the engine added that are
            not in the slot's history, with what they are (``system_prompt``, ``summary``,
            ``pinned``).
        window_start: Index in the slot's history where the sent window starts (0 in Full
            mode; larger when a Focused window cut earlier messages).
        response: The answer (text and tool calls); ``None`` when the call failed.
        finish_reason: Why the model stopped, when it says.
        usage: Tokens used.
        cost: USD, priced by the session's price table.
        started_at: When the request was sent.
        latency_s: Seconds until the whole answer was there.
        ttft_s: Seconds until the first streamed piece (streaming only).
        streamed: Whether it was a streaming request.
        retries: Retries the backend made for this call (HTTP backends count them).
        status: ``ok`` or ``error``.
        error: The error's type and message when it failed.
        replayed: The answer came from a recording (usage and cost are the recorded ones).
        request_hash: The stable hash of the request (see :func:`request_hash`).
        ckpt_id: The checkpoint the call led to (the session's next checkpoint), once written.
        abandoned: The call is on a branch a rollback left (read from the store).
    """

    model_config = ConfigDict(frozen=True)

    call_id: str
    session_id: str
    slot_id: str = "main"
    turn_index: int = 0
    kind: CallKind = "turn"
    model: str
    params: dict[str, JsonValue] = Field(default_factory=dict)
    request_messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    injected: dict[int, str] = Field(default_factory=dict)
    window_start: int = 0
    response: AssistantMessage | None = None
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0
    started_at: datetime = Field(default_factory=utcnow)
    latency_s: float = 0.0
    ttft_s: float | None = None
    streamed: bool = False
    retries: int = 0
    status: CallStatus = "ok"
    error: str | None = None
    replayed: bool = False
    request_hash: str
    ckpt_id: str | None = None
    abandoned: bool = False
    # Where the request's history tail is in the stored chains: the node it ends at and how
    # many request messages it covers (0: the call is only anchored there). Set by the
    # recorder; not part of the record.
    _tail: tuple[str, int] | None = PrivateAttr(default=None)
    _response_stored: bool = PrivateAttr(default=False)

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.usage.total_tokens

    def __repr__(self) -> str:
        what = (
            f"error={self.error!r}"
            if self.status == "error"
            else f"finish={self.finish_reason!r}, tokens={self.total_tokens}"
        )
        return (
            f"ModelCall({self.call_id!r}, turn={self.turn_index}, kind={self.kind!r}, "
            f"model={self.model!r}, messages={len(self.request_messages)}, {what}, "
            f"latency={self.latency_s * 1000:.1f} ms)"
        )


def load_calls(path: str | Path) -> list[ModelCall]:
    """Read calls written by ``manager.export_calls(path)`` (JSON lines).

    Raises:
        InvalidInputError: The file is missing or a line is not a model-call record (the
            message names the line).
    """
    source = Path(path)
    if not source.is_file():
        raise InvalidInputError(
            f"no recorded calls at {str(source)!r}; write one with manager.export_calls(path)",
            path=str(source),
        )
    calls = []
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            calls.append(ModelCall.model_validate(json.loads(line)))
        except ValueError as exc:
            raise InvalidInputError(
                f"line {number} of {str(source)!r} is not a model-call record: {exc}",
                path=str(source),
            ) from exc
    return calls


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in (text.splitlines() or [""]))


def describe_call(call: ModelCall) -> str:
    """The full request of ``call`` as text, role by role, injected parts marked, then the
    response (what ``%agcore prompt CALL_ID`` prints).

    Example:
        >>> from agcore_lab.llm.messages import UserMessage
        >>> call = ModelCall(call_id="call_1", session_id="ses_1", model="m",
        ...     request_messages=[UserMessage(content="hi")], request_hash="0" * 32)
        >>> print(describe_call(call).splitlines()[2])
        [0] user
    """
    state = "abandoned branch" if call.abandoned else call.status
    lines = [
        f"call {call.call_id} · session {call.session_id} · slot {call.slot_id} · "
        f"turn {call.turn_index} · {call.kind} · {state}",
        f"model {call.model} · {call.usage.prompt_tokens} prompt + "
        f"{call.usage.completion_tokens} completion tokens · {call.latency_s * 1000:.1f} ms · "
        f"{format_cost(call.cost)}" + (" · replayed" if call.replayed else ""),
    ]
    for index, message in enumerate(call.request_messages):
        label = call.injected.get(index)
        name = getattr(message, "name", None)
        extra = f" ({name})" if isinstance(name, str) and name else ""
        lines.append(f"[{index}] {message.role}{extra}" + (f"  <{label}>" if label else ""))
        if message.text:
            lines.append(_indent(message.text))
        for tool_call in getattr(message, "tool_calls", ()):
            lines.append(_indent(f"-> {tool_call.name}({json.dumps(tool_call.arguments)})"))
    if call.window_start:
        lines.append(f"(the window starts at history message {call.window_start})")
    if call.tools:
        lines.append("tools: " + ", ".join(t.name for t in call.tools))
    if call.response is not None:
        lines.append(f"--- response ({call.finish_reason or 'no finish reason'})")
        if call.response.content:
            lines.append(_indent(call.response.content))
        for tool_call in call.response.tool_calls:
            lines.append(_indent(f"-> {tool_call.name}({json.dumps(tool_call.arguments)})"))
    if call.error:
        lines.append(f"--- error: {call.error}")
    return "\n".join(lines)


_DEFAULTS = {
    name: info.get_default(call_default_factory=True)
    for name, info in ModelCall.model_fields.items()
    if not info.is_required()
}


def construct_call(fields: dict[str, Any]) -> ModelCall:
    """A ``ModelCall`` from trusted, typed fields, without validation (the recorder and the
    store build thousands; a request may hold a whole history of message objects)."""
    data = {**_DEFAULTS, "params": {}, "tools": [], "injected": {}, **fields}
    call = ModelCall.__new__(ModelCall)
    object.__setattr__(call, "__dict__", data)
    object.__setattr__(call, "__pydantic_fields_set__", set(fields))
    object.__setattr__(call, "__pydantic_extra__", None)
    object.__setattr__(call, "__pydantic_private__", {"_tail": None, "_response_stored": False})
    return call

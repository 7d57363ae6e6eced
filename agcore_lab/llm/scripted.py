"""``ScriptedModel``: the embedded offline default model.

Deterministic: two runs of the same script over the same conversation give identical replies,
tool-call ids and token counts. Every test, notebook and the demo run on it.

A script is a list whose items are consumed one per model call, or one function called for every
call. An item (or a function's return value) may be:

- a ``str`` — a plain text reply;
- a :class:`ToolCall` or a list of them — the model calls those tools (empty ids are filled
  with ``call_0001``, ``call_0002``, … counted per model);
- an :class:`AssistantMessage` — used as it is;
- a callable ``(messages) -> any of the above`` (list items only).

**Fallback** when the script runs out (or is empty): the reply is
``"[scripted] " + <the last user message, first 200 characters>``, so a conversation never
stalls and the output still depends only on the input.

Usage is estimated (see :mod:`agcore_lab.llm.tokens`, CJK counted per character). ``latency``
adds an ``asyncio.sleep`` before each answer, for benchmarks and demonstrating parallel work;
``stream`` sends the text in chunks of ``chunk_size`` characters.

Example:
    >>> import asyncio
    >>> from agcore_lab.llm.messages import UserMessage
    >>> model = ScriptedModel(["hello"])
    >>> asyncio.run(model.complete([UserMessage(content="hi")])).message.content
    'hello'
    >>> asyncio.run(model.complete([UserMessage(content="again")])).message.content
    '[scripted] again'
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import TypeAlias

from agcore_lab.checks import check_count
from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.base import (
    ChatResponse,
    ModelStreamEvent,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
)
from agcore_lab.llm.messages import AssistantMessage, Message, ToolCall, UserMessage
from agcore_lab.llm.tokens import estimate_messages_tokens, estimate_tokens
from agcore_lab.llm.usage import Usage

__all__ = ["FALLBACK_PREFIX", "ScriptItem", "ScriptedModel"]

FALLBACK_PREFIX = "[scripted] "

Reply: TypeAlias = str | ToolCall | list[ToolCall] | AssistantMessage
ScriptItem: TypeAlias = Reply | Callable[[Sequence[Message]], Reply]


class ScriptedModel:
    """A deterministic offline chat model driven by a script.

    Args:
        script: A list of items consumed one per call, or a function of the messages called
            every time. ``None`` means always the fallback reply.
        latency: Seconds to ``asyncio.sleep`` before each answer.
        chunk_size: Characters per text delta when streaming.
        model_name: The name used for pricing and records.

    Notes:
        The script cursor and the tool-call counter are shared by every session using this
        model instance (guarded by a lock, so concurrent sessions each get a distinct item).
    """

    def __init__(
        self,
        script: Sequence[ScriptItem] | Callable[[Sequence[Message]], Reply] | None = None,
        *,
        latency: float = 0.0,
        chunk_size: int = 8,
        model_name: str = "scripted",
    ) -> None:
        if (
            isinstance(latency, bool)
            or not isinstance(latency, int | float)
            or not math.isfinite(latency)
            or latency < 0
        ):
            raise InvalidInputError(
                f"latency must be a finite number >= 0 seconds, got {latency!r}"
            )
        check_count(chunk_size, "chunk_size")
        if script is not None and not callable(script) and isinstance(script, str | bytes):
            raise InvalidInputError("script must be a list of items or a function, not a string")
        if script is not None and not callable(script) and not isinstance(script, Iterable):
            raise InvalidInputError(
                f"script must be a list of items or a function, got {type(script).__name__}"
            )
        self._function = script if callable(script) else None
        self._items: list[ScriptItem] = [] if script is None or callable(script) else list(script)
        self.latency = latency
        self.chunk_size = chunk_size
        self._name = model_name
        self._cursor = 0
        self._call_counter = 0
        self._lock = threading.Lock()
        # (length, tokens, probe messages) of the last conversation: see _prompt_tokens.
        self._memo: tuple[int, int, tuple[Message, ...]] = (0, 0, ())
        # the memos of earlier conversations by the id of their last message: see _earlier.
        self._totals: dict[str, tuple[int, int, tuple[Message, ...]]] = {}
        self._tool_tokens: dict[int, tuple[ToolSpec, int]] = {}
        self.calls = 0

    @property
    def model_name(self) -> str:
        """The model's name (``"scripted"`` by default)."""
        return self._name

    @property
    def remaining(self) -> int:
        """Script items not yet used (0 for a function script)."""
        return max(0, len(self._items) - self._cursor)

    def __repr__(self) -> str:
        kind = "function" if self._function else f"{len(self._items)} items"
        return f"ScriptedModel({kind}, latency={self.latency}, model_name={self._name!r})"

    def _next_reply(self, messages: Sequence[Message]) -> AssistantMessage:
        with self._lock:
            self.calls += 1
            if self._function is not None:
                item: ScriptItem = self._function
            elif self._cursor < len(self._items):
                item = self._items[self._cursor]
                self._cursor += 1
            else:
                return AssistantMessage(content=_fallback(messages))
            reply = item(messages) if callable(item) else item
            return self._to_message(reply)

    def _to_message(self, reply: Reply) -> AssistantMessage:
        if isinstance(reply, AssistantMessage):
            calls = reply.tool_calls
            if any(not c.id for c in calls):
                return reply.model_copy(update={"tool_calls": self._with_ids(calls)})
            return reply
        if isinstance(reply, str):
            return AssistantMessage(content=reply)
        if isinstance(reply, ToolCall):
            return AssistantMessage(tool_calls=self._with_ids([reply]))
        if isinstance(reply, list) and all(isinstance(c, ToolCall) for c in reply):
            return AssistantMessage(tool_calls=self._with_ids(reply))
        raise InvalidInputError(
            f"a script item must be a str, ToolCall, list of ToolCall or AssistantMessage; "
            f"got {type(reply).__name__}"
        )

    def _with_ids(self, calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
        out = []
        for call in calls:
            if not call.id:
                self._call_counter += 1
                call = call.model_copy(update={"id": f"call_{self._call_counter:04d}"})
            out.append(call)
        return tuple(out)

    def _usage(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], reply: AssistantMessage
    ) -> Usage:
        prompt = self._prompt_tokens(messages) + sum(map(self._tool_estimate, tools))
        return Usage(
            prompt_tokens=prompt,
            completion_tokens=estimate_messages_tokens([reply]),
            requests=1,
        )

    def _tool_estimate(self, tool: ToolSpec) -> int:
        # An agent offers the same ToolSpec objects on every call: serialize each once.
        cached = self._tool_tokens.get(id(tool))
        if cached is None or cached[0] is not tool:
            if len(self._tool_tokens) >= 1_000:
                self._tool_tokens.clear()
            cached = (tool, estimate_tokens(json.dumps(tool.to_openai())))
            self._tool_tokens[id(tool)] = cached
        return cached[1]

    def _prompt_tokens(self, messages: Sequence[Message]) -> int:
        # Conversations grow by appending, so remember the last one: when this one extends it
        # (the same message objects at its first, middle and last positions: messages are
        # immutable and a history is only ever appended to, so the engine's contexts share
        # them exactly) only the new messages are estimated. O(what was added), not
        # O(history): a turn does not get slower as the history grows.
        # A conversation that does not extend the last one (after a rollback, or another
        # session's) may extend an earlier one: each conversation's total is also kept by its
        # last message, and the last few messages are looked up there.
        count = len(messages)
        if count <= _SHORT:  # cheaper to add up (each message keeps its estimate) than to look up
            return estimate_messages_tokens(messages)
        with self._lock:
            known, total, probes = self._memo
            if not (known and count >= known and _same(probes, _probes(messages, known))):
                known, total = self._earlier(messages)
            if count > known:
                total += estimate_messages_tokens(messages[known:])
            self._memo = (count, total, _probes(messages, count))
            if count:
                if len(self._totals) >= _TOTALS_MAX:
                    self._totals.clear()
                self._totals[messages[-1].id] = self._memo
        return total

    def _earlier(self, messages: Sequence[Message], look_back: int = 8) -> tuple[int, int]:
        # (length, tokens) of the longest earlier conversation among the last ``look_back``
        # prefixes of ``messages`` (by the id of its last message; the probes compare equal
        # also for the same messages read back from a store), else (0, 0).
        for end in range(len(messages), max(len(messages) - look_back, 0), -1):
            entry = self._totals.get(messages[end - 1].id)
            if entry is not None and entry[0] == end and _same(entry[2], _probes(messages, end)):
                return entry[0], entry[1]
        return 0, 0

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        """Answer with the next script item (or the fallback)."""
        if self.latency:
            await asyncio.sleep(self.latency)
        reply = self._next_reply(messages)
        return ChatResponse(
            message=reply,
            usage=self._usage(messages, tools, reply),
            model=self._name,
            finish_reason="tool_calls" if reply.tool_calls else "stop",
        )

    async def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[ModelStreamEvent]:
        """Answer as a stream: text in ``chunk_size`` pieces, each tool call as a name delta
        followed by argument fragments, then ``ResponseDone``."""
        response = await self.complete(messages, tools=tools)
        text = response.message.content or ""
        for start in range(0, len(text), self.chunk_size):
            yield TextDelta(text=text[start : start + self.chunk_size])
            await asyncio.sleep(0)
        for index, call in enumerate(response.message.tool_calls):
            yield ToolCallDelta(index=index, id=call.id, name=call.name)
            arguments = json.dumps(call.arguments)
            for start in range(0, len(arguments), self.chunk_size):
                yield ToolCallDelta(
                    index=index, arguments=arguments[start : start + self.chunk_size]
                )
        yield ResponseDone(response=response)


_TOTALS_MAX = 50_000  # earlier conversations remembered (each holds three messages)
_SHORT = 8  # conversations this short are estimated directly, neither looked up nor kept


def _probes(messages: Sequence[Message], count: int) -> tuple[Message, ...]:
    # Identity probes of a conversation's first ``count`` messages (compared with ``==`` on a
    # tuple, which checks identity first: frozen messages compare equal only to themselves
    # or to an identical copy, either way the same estimate).
    if not count:
        return ()
    return (messages[0], messages[count // 2], messages[count - 1])


def _same(one: tuple[Message, ...], other: tuple[Message, ...]) -> bool:
    # ``one == other``, but messages of different ids are told apart by their ids (a model
    # comparison costs microseconds; another session's conversation never matches).
    return len(one) == len(other) and all(
        a is b or (a.id == b.id and a == b) for a, b in zip(one, other, strict=True)
    )


def _fallback(messages: Sequence[Message]) -> str:
    last_user = next((m.text for m in reversed(messages) if isinstance(m, UserMessage)), "")
    return FALLBACK_PREFIX + last_user[:200]

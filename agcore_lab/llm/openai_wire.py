"""The OpenAI chat-completions wire format: parsing answers and assembling streams.

Pure functions and small state objects with no HTTP in them, used by
:class:`~agcore_lab.llm.openai.OpenAIChatModel`. Anything that breaks the format raises
:class:`~agcore_lab.errors.ModelProtocolError`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agcore_lab.errors import ModelError, ModelProtocolError
from agcore_lab.llm.base import ChatResponse, TextDelta, ToolCallDelta, ToolSpec
from agcore_lab.llm.messages import AssistantMessage, Message, ToolCall
from agcore_lab.llm.tokens import estimate_messages_tokens, estimate_tokens
from agcore_lab.llm.usage import Usage

__all__ = ["StreamState", "load_chunk", "parse_completion"]


def parse_completion(
    payload: object,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    *,
    default_model: str,
) -> ChatResponse:
    """Turn a non-streamed chat-completions JSON body into a ``ChatResponse``."""
    choice, wire = _first_choice(payload)
    message = AssistantMessage(
        content=_content(wire.get("content")), tool_calls=_tool_calls(wire.get("tool_calls"))
    )
    body = payload if isinstance(payload, dict) else {}
    return ChatResponse(
        message=message,
        usage=_usage(body.get("usage")) or _estimate(messages, tools, message),
        model=_str(body.get("model")) or default_model,
        finish_reason=_str(choice.get("finish_reason")),
    )


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamState:
    """What a stream has said so far, assembled into a ``ChatResponse`` at the end."""

    model: str
    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    usage: Usage | None = None
    finish_reason: str | None = None

    def feed(self, chunk: object) -> list[TextDelta | ToolCallDelta]:
        if not isinstance(chunk, dict):
            raise ModelProtocolError(f"a stream chunk is not a JSON object: {chunk!r:.200}")
        if chunk.get("error"):
            raise ModelError(f"the chat completions stream reported an error: {chunk['error']}")
        self.model = _str(chunk.get("model")) or self.model
        self.usage = _usage(chunk.get("usage")) or self.usage
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise ModelProtocolError(f"stream chunk 'choices' is not a list: {choices!r:.200}")
        deltas: list[TextDelta | ToolCallDelta] = []
        for choice in choices:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                deltas.extend(self._feed_choice(choice))
        return deltas

    def _feed_choice(self, choice: dict[str, Any]) -> list[TextDelta | ToolCallDelta]:
        self.finish_reason = _str(choice.get("finish_reason")) or self.finish_reason
        delta = choice.get("delta") or {}
        calls = (delta.get("tool_calls") or []) if isinstance(delta, dict) else None
        if not isinstance(delta, dict) or not isinstance(calls, list):
            raise ModelProtocolError(f"malformed stream delta: {delta!r:.200}")
        deltas: list[TextDelta | ToolCallDelta] = []
        content = delta.get("content")
        if isinstance(content, str) and content:
            self.text.append(content)
            deltas.append(TextDelta(text=content))
        for position, call in enumerate(calls):
            deltas.append(self._feed_call(position, call))
        return deltas

    def _feed_call(self, position: int, call: object) -> ToolCallDelta:
        function = (call.get("function") or {}) if isinstance(call, dict) else None
        index = call.get("index", position) if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(function, dict) or type(index) is not int:
            raise ModelProtocolError(f"malformed tool-call delta: {call!r:.200}")
        arguments = function.get("arguments") or ""
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)  # some servers send an object, not its JSON text
        partial = self.calls.setdefault(index, _PartialCall())
        call_id, name = _str(call.get("id")), _str(function.get("name"))
        partial.id = partial.id or call_id or ""
        partial.name += name or ""
        partial.arguments.append(arguments)
        return ToolCallDelta(index=index, id=call_id, name=name, arguments=arguments)

    def finish(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ChatResponse:
        wire = [
            {"id": p.id, "function": {"name": p.name, "arguments": "".join(p.arguments) or "{}"}}
            for _, p in sorted(self.calls.items())
        ]
        message = AssistantMessage(content="".join(self.text) or None, tool_calls=_tool_calls(wire))
        return ChatResponse(
            message=message,
            usage=self.usage or _estimate(messages, tools, message),
            model=self.model,
            finish_reason=self.finish_reason,
        )


def load_chunk(data: str) -> object:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise ModelProtocolError(
            f"the chat completions stream sent a chunk that is not valid JSON: {data[:200]!r}"
        ) from exc


def _first_choice(payload: object) -> tuple[dict[str, Any], dict[str, Any]]:
    choices = payload.get("choices") if isinstance(payload, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    wire = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or not isinstance(wire, dict):
        raise ModelProtocolError(
            f"chat completions returned no choices[0].message: {payload!r:.200}"
        )
    return choice, wire


def _tool_calls(raw: object) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(call, dict) for call in raw):
        raise ModelProtocolError(f"'tool_calls' is not a list of objects: {raw!r:.200}")
    try:
        return tuple(ToolCall.from_openai(call) for call in raw)
    except (ValueError, TypeError, AttributeError) as exc:  # InvalidInputError, ValidationError
        raise ModelProtocolError(f"the model sent a malformed tool call: {exc}") from exc


def _content(raw: object) -> str | None:
    if raw is None or isinstance(raw, str):
        return raw
    if isinstance(raw, list):  # content parts
        return "".join(str(p.get("text", "")) for p in raw if isinstance(p, dict))
    raise ModelProtocolError(f"message content is neither text nor parts: {raw!r:.200}")


def _usage(raw: object) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
    if type(prompt) is not int or type(completion) is not int or min(prompt, completion) < 0:
        return None
    return Usage(prompt_tokens=prompt, completion_tokens=completion, requests=1)


def _estimate(
    messages: Sequence[Message], tools: Sequence[ToolSpec], message: AssistantMessage
) -> Usage:
    prompt = estimate_messages_tokens(messages)
    prompt += sum(estimate_tokens(json.dumps(tool.to_openai())) for tool in tools)
    completion = estimate_tokens(message.content or "")
    for call in message.tool_calls:
        completion += estimate_tokens(call.name) + estimate_tokens(json.dumps(call.arguments))
    return Usage(prompt_tokens=prompt, completion_tokens=completion, requests=1)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None

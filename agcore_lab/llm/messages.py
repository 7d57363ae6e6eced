"""Typed chat messages and their OpenAI chat wire format.

Four roles, one pydantic model each, joined in the :data:`Message` union (tagged by ``role``).
Messages are immutable; each carries an ``id`` (so the store can keep it once and point at it
from every slot and checkpoint that contains it) and ``metadata`` that never goes on the wire.

Example:
    >>> from agcore_lab.llm.messages import UserMessage, to_openai, message_from_openai
    >>> wire = to_openai(UserMessage(content="hi"))
    >>> wire
    {'role': 'user', 'content': 'hi'}
    >>> message_from_openai(wire).content
    'hi'
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import cached_property
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import ConfigDict, Field, JsonValue, TypeAdapter

from agcore_lab.checks import CheckedModel
from agcore_lab.errors import InvalidInputError
from agcore_lab.ids import new_id, utcnow

__all__ = [
    "AssistantMessage",
    "Message",
    "MessageAdapter",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "UserMessage",
    "message_from_openai",
    "messages_from_openai",
    "messages_to_openai",
    "to_openai",
]


class ToolCall(CheckedModel):
    """A model's request to call one tool.

    Args:
        name: The tool's name.
        arguments: The arguments as a JSON object.
        id: The call id; empty means "let the model fill it in" (``ScriptedModel`` gives
            deterministic ids such as ``call_0001``).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    id: str = ""

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI wire form: arguments as a JSON string."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments)},
        }

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> ToolCall:
        """Parse the OpenAI wire form; malformed arguments are a clear error."""
        function = data.get("function") or {}
        raw = function.get("arguments") or "{}"
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                f"tool call arguments are not valid JSON: {raw[:200]!r}",
                tool_name=function.get("name"),
            ) from exc
        if not isinstance(arguments, dict):
            raise InvalidInputError(
                "tool call arguments must be a JSON object", tool_name=function.get("name")
            )
        return cls(id=data.get("id") or "", name=function.get("name") or "", arguments=arguments)


class _MessageBase(CheckedModel):
    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=lambda: new_id("msg"))
    created_at: datetime = Field(default_factory=utcnow)
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    @cached_property
    def token_estimate(self) -> int:
        """Estimated tokens of this message (computed once: messages are immutable)."""
        from agcore_lab.llm.tokens import estimate_message_tokens

        return estimate_message_tokens(self)  # type: ignore[arg-type]

    @property
    def text(self) -> str:
        """The message's text ('' when it has none)."""
        content = getattr(self, "content", None)
        return content if isinstance(content, str) else ""


class SystemMessage(_MessageBase):
    """Instructions for the model."""

    role: Literal["system"] = "system"
    content: str


class UserMessage(_MessageBase):
    """What the person (or a parent agent) said."""

    role: Literal["user"] = "user"
    content: str
    name: str | None = None


class AssistantMessage(_MessageBase):
    """The model's answer: text, tool calls, or both."""

    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


class ToolMessage(_MessageBase):
    """The result of one tool call, answering ``tool_call_id``.

    ``is_error`` marks a failed call (the tool raised, was unknown, or got invalid
    arguments); the model sees the error text as the content.
    """

    role: Literal["tool"] = "tool"
    content: str
    tool_call_id: str
    name: str | None = None
    is_error: bool = False


Message: TypeAlias = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]
MessageAdapter: TypeAdapter[Message] = TypeAdapter(Message)


def to_openai(message: Message) -> dict[str, Any]:
    """Convert a message to the OpenAI chat-completions wire format."""
    if isinstance(message, AssistantMessage):
        wire: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            wire["tool_calls"] = [call.to_openai() for call in message.tool_calls]
        return wire
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if isinstance(message, UserMessage) and message.name:
        return {"role": "user", "content": message.content, "name": message.name}
    return {"role": message.role, "content": message.content}


def _content_text(content: Any) -> str:
    # The wire format also allows a list of content parts; keep their text.
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    raise InvalidInputError(f"message content must be a string or a list, got {content!r}")


def message_from_openai(data: dict[str, Any]) -> Message:
    """Parse one message in the OpenAI chat-completions wire format.

    Raises:
        InvalidInputError: Unknown role or malformed fields.
    """
    role = data.get("role")
    if role == "system" or role == "developer":
        return SystemMessage(content=_content_text(data.get("content")))
    if role == "user":
        return UserMessage(content=_content_text(data.get("content")), name=data.get("name"))
    if role == "assistant":
        calls = tuple(ToolCall.from_openai(c) for c in data.get("tool_calls") or [])
        content = data.get("content")
        return AssistantMessage(
            content=None if content is None else _content_text(content), tool_calls=calls
        )
    if role == "tool":
        return ToolMessage(
            content=_content_text(data.get("content")),
            tool_call_id=str(data.get("tool_call_id") or ""),
        )
    raise InvalidInputError(
        f"unknown message role {role!r}; expected system, user, assistant or tool"
    )


def messages_to_openai(messages: list[Message]) -> list[dict[str, Any]]:
    """Convert a conversation to the wire format."""
    return [to_openai(m) for m in messages]


def messages_from_openai(data: list[dict[str, Any]]) -> list[Message]:
    """Parse a conversation in the wire format."""
    return [message_from_openai(d) for d in data]

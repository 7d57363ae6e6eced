"""The ``ChatModel`` protocol every model backend implements, and its stream events.

A backend answers a conversation with :meth:`ChatModel.complete` (one ``ChatResponse``) or
:meth:`ChatModel.stream` (an async iterator of ``TextDelta`` / ``ToolCallDelta`` events ending
with exactly one ``ResponseDone`` that carries the assembled response and its usage).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict

from agcore_lab.llm.messages import AssistantMessage, Message
from agcore_lab.llm.usage import Usage

__all__ = [
    "ChatModel",
    "ChatResponse",
    "ModelStreamEvent",
    "ResponseDone",
    "TextDelta",
    "ToolCallDelta",
    "ToolSpec",
]


class ToolSpec(BaseModel):
    """What the model is told about a tool: name, description and JSON schema."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    parameters: dict[str, object]

    def to_openai(self) -> dict[str, object]:
        """The OpenAI ``tools`` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ChatResponse(BaseModel):
    """One complete model answer."""

    model_config = ConfigDict(frozen=True)

    message: AssistantMessage
    usage: Usage
    model: str
    finish_reason: str | None = None


class TextDelta(BaseModel):
    """A piece of the answer's text."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["text_delta"] = "text_delta"
    text: str


class ToolCallDelta(BaseModel):
    """A piece of a tool call: the first for an ``index`` carries its id and name, later ones
    add to ``arguments`` (a fragment of the JSON text)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["tool_call_delta"] = "tool_call_delta"
    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class ResponseDone(BaseModel):
    """The end of a stream: the assembled answer and its usage."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["response_done"] = "response_done"
    response: ChatResponse


ModelStreamEvent: TypeAlias = TextDelta | ToolCallDelta | ResponseDone


@runtime_checkable
class ChatModel(Protocol):
    """A chat model backend.

    Implementations: :class:`~agcore_lab.llm.scripted.ScriptedModel` (offline, deterministic)
    and :class:`~agcore_lab.llm.openai.OpenAIChatModel` (any OpenAI-compatible endpoint).
    """

    @property
    def model_name(self) -> str:
        """The model's name, used for pricing and records."""
        ...

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> ChatResponse:
        """Answer the conversation in one piece."""
        ...

    def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] = ()
    ) -> AsyncIterator[ModelStreamEvent]:
        """Answer the conversation as a stream of events ending with ``ResponseDone``."""
        ...

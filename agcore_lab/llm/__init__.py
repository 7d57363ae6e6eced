"""The LLM layer: messages, tools, usage and cost, the ChatModel protocol and its backends.

``OpenAIChatModel`` is imported lazily (it pulls in httpx).
"""

from typing import TYPE_CHECKING, Any

from agcore_lab.llm.base import (
    ChatModel,
    ChatResponse,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
)
from agcore_lab.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    message_from_openai,
    messages_from_openai,
    messages_to_openai,
    to_openai,
)
from agcore_lab.llm.scripted import ScriptedModel
from agcore_lab.llm.tools import Tool
from agcore_lab.llm.usage import CostTracker, ModelPrice, PriceTable, Usage

if TYPE_CHECKING:
    from agcore_lab.llm.openai import OpenAIChatModel

__all__ = [
    "AssistantMessage",
    "ChatModel",
    "ChatResponse",
    "CostTracker",
    "Message",
    "ModelPrice",
    "OpenAIChatModel",
    "PriceTable",
    "ResponseDone",
    "ScriptedModel",
    "SystemMessage",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "message_from_openai",
    "messages_from_openai",
    "messages_to_openai",
    "to_openai",
]


def __getattr__(name: str) -> Any:
    if name == "OpenAIChatModel":
        from agcore_lab.llm.openai import OpenAIChatModel

        return OpenAIChatModel
    raise AttributeError(f"module 'agcore_lab.llm' has no attribute {name!r}")

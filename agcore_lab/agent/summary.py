"""Automatic conversation summaries.

After a turn, when the current slot's history passes the watermark
(``trigger_token_ratio * max_context_tokens`` estimated tokens) and the debounce allows it
(at least ``debounce_turns`` turns since the last summary; the first summary is always allowed),
the model writes a summary. It is always written to the session-memory entry
``conversation_summary``. It becomes the slot's summary override only when the slot is in
Focused mode (later turns then send the summary plus the recent window); a Full slot stays
Full and keeps sending the whole history — a summary never switches a slot's mode.

The prompt is a template: ``{messages}`` in it is replaced by the formatted transcript and the
whole text is sent as one user message. A prompt without the placeholder is sent as the system
message, with the transcript as a separate user message. The default prompt follows
``SummaryConfig(language=...)``: English (``"en"``, the default) or Chinese (``"zh"``).

The transcript given to the model renders each message as a line of text; tool results are cut
to ``max_tool_result_chars``, and the whole transcript to ``max_transcript_chars`` (30,000 by
default), keeping the most recent part.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict, Field

from agcore_lab.checks import CheckedModel
from agcore_lab.llm.base import ChatModel, ChatResponse
from agcore_lab.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    UserMessage,
)

if TYPE_CHECKING:
    from agcore_lab.agent.recording import CallRecorder

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "DEFAULT_SUMMARY_PROMPT_ZH",
    "MERGE_SUMMARY_PROMPT",
    "MESSAGES_PLACEHOLDER",
    "SUMMARY_PROMPTS",
    "SummaryLanguage",
    "SummaryConfig",
    "render_transcript",
    "request_summary",
]

MESSAGES_PLACEHOLDER = "{messages}"
DEFAULT_SUMMARY_PROMPT = (
    "You are summarizing a conversation between a user and an AI assistant so the assistant "
    "can continue it with less context. Keep facts, decisions, names, numbers, tool results "
    "that matter and open questions. Write plain prose, at most 200 words.\n\n"
    "Conversation:\n{messages}\n\nSummary:"
)
DEFAULT_SUMMARY_PROMPT_ZH = (
    "你正在为用户与 AI 助手之间的对话撰写摘要，以便助手在更少的上下文中继续对话。"
    "请保留事实、决定、名称、数字、重要的工具结果以及尚未解决的问题。"
    "请用简洁的段落书写，不超过 300 字。\n\n"
    "对话内容：\n{messages}\n\n摘要："
)
SummaryLanguage = Literal["en", "zh"]
SUMMARY_PROMPTS: dict[str, str] = {"en": DEFAULT_SUMMARY_PROMPT, "zh": DEFAULT_SUMMARY_PROMPT_ZH}
MERGE_SUMMARY_PROMPT = (
    "Condense the work done in this side branch of a conversation into one message for the "
    "main conversation: what was tried, what was found, what was decided. Plain prose, at most "
    "150 words."
)
CUT_MARK = "[... earlier conversation cut ...]\n"


class SummaryConfig(CheckedModel):
    """When and how a session summarizes its conversation.

    Attributes:
        trigger_token_ratio: Summarize when history tokens pass this share of the budget.
        max_context_tokens: The model's context budget in (estimated) tokens.
        summary_prompt: The prompt of the summarizing call; ``None`` (the default) picks the
            default prompt of ``language``. ``{messages}`` in it is replaced by the transcript
            (sent as one user message); without the placeholder it is the system message and
            the transcript follows as a user message.
        language: The default prompt's language: ``"en"`` (English) or ``"zh"`` (Chinese).
        debounce_turns: At least this many turns between two summaries.
        summary_model: The model that summarizes; ``None`` means the agent's own model.
        max_tool_result_chars: Tool results are cut to this in the transcript.
        max_transcript_chars: The whole transcript is cut to this, keeping the most recent.

    Example:
        >>> SummaryConfig(language="zh").prompt == DEFAULT_SUMMARY_PROMPT_ZH
        True
        >>> "{messages}" in SummaryConfig().prompt
        True
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    trigger_token_ratio: float = Field(default=0.75, gt=0, le=1)
    max_context_tokens: int = Field(default=32_000, gt=0)
    summary_prompt: str | None = None
    language: SummaryLanguage = "en"
    debounce_turns: int = Field(default=3, ge=0)
    summary_model: Any = None
    max_tool_result_chars: int = Field(default=500, ge=0)
    max_transcript_chars: int = Field(default=30_000, gt=0)

    @property
    def prompt(self) -> str:
        """The prompt in use: ``summary_prompt``, or the default of ``language``."""
        return self.summary_prompt or SUMMARY_PROMPTS[self.language]

    @property
    def watermark(self) -> int:
        """The token count that triggers a summary."""
        return int(self.trigger_token_ratio * self.max_context_tokens)

    def is_due(self, tokens: int, turn_index: int, last_summary_turn: int | None) -> bool:
        """Whether a summary should be written now."""
        if tokens < self.watermark:
            return False
        return last_summary_turn is None or turn_index - last_summary_turn >= self.debounce_turns


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} chars cut]"


def render_transcript(
    messages: Sequence[Message], *, max_tool_result_chars: int = 500, max_chars: int = 30_000
) -> str:
    """Render messages as text lines for a summary prompt (most recent kept when cut)."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            label = f"tool {message.name}" if message.name else "tool"
            lines.append(f"{label}: {_cut(message.content, max_tool_result_chars)}")
        elif isinstance(message, AssistantMessage):
            if message.content:
                lines.append(f"assistant: {message.content}")
            for call in message.tool_calls:
                lines.append(f"assistant called {call.name}({json.dumps(call.arguments)})")
        elif isinstance(message, UserMessage | SystemMessage):
            lines.append(f"{message.role}: {message.content}")
    text = "\n".join(lines)
    if len(text) <= max_chars:
        return text
    tail = text[len(text) - (max_chars - len(CUT_MARK)) :]
    # Start at a line boundary when one is near, so no line is shown half-cut.
    newline = tail.find("\n")
    if 0 <= newline < 200:
        tail = tail[newline + 1 :]
    return CUT_MARK + tail


async def request_summary(
    model: ChatModel,
    config: SummaryConfig,
    messages: Sequence[Message],
    previous_summary: str | None = None,
    *,
    prompt: str | None = None,
    recorder: CallRecorder | None = None,
) -> ChatResponse:
    """Ask ``model`` to summarize ``messages``; return its response (text and usage).

    Args:
        model: The summarizing model.
        config: Limits for the transcript, and the default prompt.
        messages: The conversation to summarize.
        previous_summary: An earlier summary the new one should build on.
        prompt: A prompt other than ``config.prompt`` (a ``{messages}`` template, or a
            system prompt followed by the transcript).
        recorder: Records the request as a model call (kind ``summary``).
    """
    transcript = render_transcript(
        messages,
        max_tool_result_chars=config.max_tool_result_chars,
        max_chars=config.max_transcript_chars,
    )
    if previous_summary:
        transcript = f"Previous summary: {previous_summary}\n\nConversation:\n{transcript}"
    template = prompt or config.prompt
    request: list[Message]
    if MESSAGES_PLACEHOLDER in template:
        request = [UserMessage(content=template.replace(MESSAGES_PLACEHOLDER, transcript))]
    else:
        request = [SystemMessage(content=template), UserMessage(content=transcript)]
    if recorder is None:
        return await model.complete(request)
    probe = recorder.begin(model, request)
    try:
        response = await model.complete(request)
    except BaseException as exc:
        probe.fail(exc)
        raise
    probe.done(response)
    return response

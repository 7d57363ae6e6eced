"""Token-count estimates for when no tokenizer is at hand.

CJK characters (and other wide scripts: kana, hangul) count one token each; other text counts
one token per four characters, rounded up; each message adds a small fixed overhead, as the
chat wire format does.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Iterable

from agcore_lab.llm.messages import AssistantMessage, Message

__all__ = ["estimate_message_tokens", "estimate_messages_tokens", "estimate_tokens"]

_WIDE = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
    "\u3000-\u303f\U00020000-\U0002fa1f]"
)
MESSAGE_OVERHEAD = 4
_CACHED = operator.attrgetter("token_estimate")


def estimate_tokens(text: str) -> int:
    """Estimated tokens in ``text``: wide characters one each, the rest one per four."""
    if not text:
        return 0
    wide = len(_WIDE.findall(text))
    return wide + math.ceil((len(text) - wide) / 4)


def estimate_message_tokens(message: Message) -> int:
    """Estimated tokens of one message, tool calls and overhead included."""
    tokens = MESSAGE_OVERHEAD + estimate_tokens(message.text)
    if isinstance(message, AssistantMessage):
        for call in message.tool_calls:
            tokens += estimate_tokens(call.name) + estimate_tokens(json.dumps(call.arguments))
    return tokens


def estimate_messages_tokens(messages: Iterable[Message]) -> int:
    """Estimated tokens of a conversation (each message's estimate is cached on it, and a
    :class:`~agcore_lab.llm.history.MessageHistory` keeps those of its columns)."""
    from agcore_lab.llm.history import MessageHistory

    if isinstance(messages, MessageHistory):
        return messages.estimate_tokens()
    return sum(map(_CACHED, messages))

"""The conversation turn that led to a pending tool call, read from the store, and its HTML.

The approval panel shows it collapsed under each call, so a person can see what the user asked
and what the model said before deciding. The messages are read once per call from the stored
slot chains (no session is loaded or activated); every piece of text is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agcore_lab.jupyter.common.messages import render_message
from agcore_lab.llm.messages import AssistantMessage, Message, UserMessage

if TYPE_CHECKING:
    from agcore_lab.store.base import Store
    from agcore_lab.store.pending import PendingToolCall

__all__ = ["MAX_TURN_MESSAGES", "render_turn", "turn_of_call"]

MAX_TURN_MESSAGES = 12
"""Messages of one turn shown at most (the newest, ending with the call)."""


def _asks(message: Message, tool_call_id: str) -> bool:
    return isinstance(message, AssistantMessage) and any(
        c.id == tool_call_id for c in message.tool_calls
    )


def turn_of_call(store: Store, call: PendingToolCall) -> list[Message]:
    """The messages from the user's message that started the turn up to the model's answer
    that asked for ``call`` (oldest first); ``[]`` when no slot of the session holds it."""
    for slot in store.load_slots(call.session_id):
        if slot.head_node_id is None:
            continue
        messages = [m for _, m in store.load_chain(slot.head_node_id)]
        end = next(
            (i for i in range(len(messages) - 1, -1, -1) if _asks(messages[i], call.tool_call_id)),
            None,
        )
        if end is None:
            continue
        start = next((i for i in range(end, -1, -1) if isinstance(messages[i], UserMessage)), 0)
        return messages[max(start, end + 1 - MAX_TURN_MESSAGES) : end + 1]
    return []


def render_turn(messages: Sequence[Message]) -> str:
    """The turn as a collapsed ``<details>``: one compact row per message."""
    if not messages:
        return ""
    rows = "".join(render_message(m, None, kind="turn") for m in messages)
    label = "message" if len(messages) == 1 else "messages"
    return (
        '<details class="agc-turn"><summary class="agc-meta">the turn that led to this call '
        f"({len(messages)} {label})</summary>"
        f'<div class="agc-turn-rows">{rows}</div></details>'
    )

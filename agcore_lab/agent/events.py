"""What a turn returns and, when streamed, the events it yields.

A streamed turn yields the model's ``TextDelta`` / ``ToolCallDelta`` events as they come,
``ToolCallStarted`` and ``ToolResultReady`` around each tool call, and finally ``TurnDone``
with the :class:`TurnResult` — only after the turn was committed to the store.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict

from agcore_lab.llm.base import TextDelta, ToolCallDelta
from agcore_lab.llm.messages import Message, ToolCall, ToolMessage
from agcore_lab.llm.usage import Usage
from agcore_lab.store.pending import PendingToolCall

__all__ = ["ToolCallStarted", "ToolResultReady", "TurnDone", "TurnEvent", "TurnResult"]


class TurnResult(BaseModel):
    """The outcome of one turn.

    Attributes:
        session_id: The session the turn ran in.
        slot_id: The slot the turn went to.
        turn_index: This turn's number in the session (1 for the first turn).
        reply: The final assistant text ('' when the turn stopped early).
        tool_calls: Every tool call the model made in the turn, in order.
        tool_results: The tool messages answering them, in order.
        messages: All messages the turn added (user message first).
        usage: Tokens of every model call in the turn.
        cost: USD of those calls at the session's prices.
        status: ``"completed"``; ``"interrupted"`` when a tool call waits for approval (see
            ``pending_tool_call``); ``"max_tool_rounds"`` when the tool loop hit its limit.
        run_id: Identifies the turn (an interrupted turn keeps it when resumed).
        pending_tool_call: The call waiting for a person's decision, when interrupted.
    """

    model_config = ConfigDict(frozen=True)

    session_id: str
    slot_id: str
    turn_index: int
    reply: str
    tool_calls: list[ToolCall]
    tool_results: list[ToolMessage]
    messages: list[Message]
    usage: Usage
    cost: float
    status: Literal["completed", "max_tool_rounds", "interrupted"] = "completed"
    run_id: str = ""
    pending_tool_call: PendingToolCall | None = None


class ToolCallStarted(BaseModel):
    """A tool call is about to run."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["tool_call_started"] = "tool_call_started"
    call: ToolCall


class ToolResultReady(BaseModel):
    """A tool call finished (``message.is_error`` when it failed)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["tool_result"] = "tool_result"
    message: ToolMessage


class TurnDone(BaseModel):
    """The turn is committed; the last event of a streamed turn."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["turn_done"] = "turn_done"
    result: TurnResult


TurnEvent: TypeAlias = TextDelta | ToolCallDelta | ToolCallStarted | ToolResultReady | TurnDone

"""Agents and their sessions: turns, tool loop, context slots, memory, summaries."""

from agcore_lab.agent.agent import Agent
from agcore_lab.agent.bundle import RuntimeBundle, TurnHook
from agcore_lab.agent.events import (
    ToolCallStarted,
    ToolResultReady,
    TurnDone,
    TurnEvent,
    TurnResult,
)
from agcore_lab.agent.memory import SessionMemory
from agcore_lab.agent.session import AgentSession
from agcore_lab.agent.slot_diff import SlotDiff, diff_slots
from agcore_lab.agent.slot_ops import MergePreview
from agcore_lab.agent.slots import ContextSlot, MergeStrategy, SlotMode
from agcore_lab.agent.summary import SummaryConfig

__all__ = [
    "Agent",
    "AgentSession",
    "ContextSlot",
    "MergePreview",
    "MergeStrategy",
    "RuntimeBundle",
    "SessionMemory",
    "SlotDiff",
    "SlotMode",
    "SummaryConfig",
    "ToolCallStarted",
    "ToolResultReady",
    "TurnDone",
    "TurnEvent",
    "TurnHook",
    "TurnResult",
    "diff_slots",
]

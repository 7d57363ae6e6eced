"""``Agent``: what an agent is (a name, instructions, a model and tools)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agcore_lab.agent.summary import SummaryConfig
from agcore_lab.checks import check_count
from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.base import ChatModel, ToolSpec
from agcore_lab.llm.scripted import ScriptedModel
from agcore_lab.llm.tools import Tool, as_tools

__all__ = ["Agent"]

_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


@dataclass(kw_only=True)
class Agent:
    """An agent: a name, instructions, a model and tools.

    Args:
        name: 1-64 letters, digits, ``_ . : -``; sessions store it, and a session manager
            finds the agent again by it after a restart.
        system_prompt: Instructions sent first in every model call.
        model: Any :class:`~agcore_lab.llm.base.ChatModel`; the offline ``ScriptedModel`` by
            default.
        tools: Plain functions (sync or async) or :class:`~agcore_lab.llm.tools.Tool` objects.
        max_tool_rounds: Rounds of tool calls allowed in one turn before it stops with
            :class:`~agcore_lab.errors.MaxToolRoundsError`.
        summary_config: Turn on automatic conversation summaries.
        record_calls: Record every model request of this agent's sessions as a
            :class:`~agcore_lab.llm.call_record.ModelCall` (on by default).

    Example:
        >>> def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> Agent(name="calc", tools=[add]).tool_specs[0].name
        'add'
    """

    name: str
    system_prompt: str = ""
    model: ChatModel = field(default_factory=ScriptedModel)
    tools: Sequence[Tool | Callable[..., Any]] = ()
    max_tool_rounds: int = 8
    summary_config: SummaryConfig | None = None
    record_calls: bool = True
    tool_map: dict[str, Tool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise InvalidInputError(
                f"agent name {self.name!r} must be 1-64 letters, digits, '_', '.', ':' or '-'"
            )
        if not isinstance(self.model, ChatModel):
            raise InvalidInputError(
                f"model must implement ChatModel (complete, stream, model_name); "
                f"got {type(self.model).__name__}",
                agent_name=self.name,
            )
        check_count(self.max_tool_rounds, "max_tool_rounds", minimum=0)
        self.tool_map = as_tools(list(self.tools))

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """What the model is told about the tools."""
        return [tool.spec for tool in self.tool_map.values()]


def require_agent(value: object) -> Agent:
    """``value`` if it is an :class:`Agent`; ``InvalidInputError`` otherwise."""
    if not isinstance(value, Agent):
        raise InvalidInputError(
            f"expected an Agent, got {type(value).__name__}; make one with "
            "Agent(name=..., model=...)"
        )
    return value

"""Shared pieces for the approval tests: a bank whose ``transfer`` tool needs a person's yes.

``Bank`` counts every run of the tool body and records every message list the model was given,
so a test can say "the tool ran exactly once" and "the model saw the rejection reason".
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    Message,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    Tool,
    ToolCall,
    TurnResult,
    UserMessage,
)
from agcore_lab.llm.scripted import Reply

Policy = bool | Callable[[ToolCall], bool]


def transfer_call(to: str = "u2", amount: int = 100) -> ToolCall:
    return ToolCall(name="transfer", arguments={"to": to, "amount": amount})


@dataclass
class Bank:
    """A manager on a SQLite file with one ``bank`` agent and counters."""

    path: Path
    script: list[Any] | Callable[[Sequence[Message]], Reply]
    requires_approval: Policy = True
    approval_timeout: float | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seen: list[list[Message]] = field(default_factory=list)
    paused: threading.Event = field(default_factory=threading.Event)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.agent = self.make_agent()
        self.manager = self.new_manager()

    # The tool bodies: each run is counted.
    def _transfer(self, to: str, amount: int) -> str:
        with self._guard:
            self.runs.append({"to": to, "amount": amount})
        return f"sent {amount} to {to}"

    def _notify(self, text: str) -> str:
        self.notes.append(text)
        return f"notified: {text}"

    def _lookup(self, who: str) -> str:
        return f"{who} has account 42"

    def _answer(self, reply: Reply) -> Callable[[Sequence[Message]], Reply]:
        def answer(messages: Sequence[Message]) -> Reply:
            self.seen.append(list(messages))
            return reply(messages) if callable(reply) else reply

        return answer

    def make_agent(self) -> Agent:
        def transfer(to: str, amount: int) -> str:
            """Move money."""
            return self._transfer(to, amount)

        def notify(text: str) -> str:
            """Tell the customer."""
            return self._notify(text)

        def lookup(who: str) -> str:
            """Find an account."""
            return self._lookup(who)

        async def pause(seconds: float) -> str:
            """Wait a while (a slow tool)."""
            self.paused.set()
            await asyncio.sleep(seconds)
            return "paused"

        tools = [
            Tool.from_function(
                transfer,
                requires_approval=self.requires_approval,
                approval_timeout=self.approval_timeout,
            ),
            Tool.from_function(notify),
            Tool.from_function(lookup),
            Tool.from_function(pause),
        ]
        script = self.script
        if callable(script):
            model = ScriptedModel(lambda messages: self._answer(script(messages))(messages))
        else:
            model = ScriptedModel([self._answer(r) for r in script])
        return Agent(name="bank", model=model, tools=tools)

    def new_manager(self) -> SessionManager:
        """Another manager (its own connection) on the same file, knowing the agent."""
        return SessionManager(SqliteStore(self.path), agents=[self.agent])

    def interrupted(self, text: str = "send 100 to u2") -> tuple[str, TurnResult]:
        """A new session whose first turn stopped at a pending call."""
        sid = self.manager.create_sync(self.agent)
        result = self.manager.submit_turn_sync(sid, text)
        assert result.status == "interrupted" and result.pending_tool_call is not None
        return sid, result

    def stored_messages(self, sid: str) -> list[Message]:
        """The session's current-slot history as stored (read on its own connection)."""
        store = SqliteStore(self.path)
        try:
            return AgentSession.load(sid, self.agent, store=store).messages
        finally:
            store.close()


def every_turn_transfers(messages: Sequence[Message]) -> Reply:
    """A script for many sessions: a user message asks for a transfer, a tool answer ends it."""
    return transfer_call() if isinstance(messages[-1], UserMessage) else "done"


@pytest.fixture
def bank_factory(tmp_path: Path) -> Callable[..., Bank]:
    made: list[Bank] = []

    def make(script: Any = None, **options: Any) -> Bank:
        bank = Bank(
            tmp_path / f"bank{len(made)}.db", script or [transfer_call(), "done"], **options
        )
        made.append(bank)
        return bank

    return make


@pytest.fixture
def bank(bank_factory: Callable[..., Bank]) -> Bank:
    return bank_factory()


@pytest.fixture(name="every_turn_transfers")
def every_turn_transfers_fixture() -> Callable[[Sequence[Message]], Reply]:
    return every_turn_transfers

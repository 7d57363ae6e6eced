"""Defects 3, 4 and 7 (tools): strict argument validation by default, approval policies see
only valid arguments, a failing policy is a tool-error message, and impossible approval
timeouts are refused when the tool is made."""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest

from agcore_lab import Agent, AgentSession, ScriptedModel, SqliteStore, Tool, ToolCall
from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.tools import MAX_APPROVAL_TIMEOUT, approval_gate


def count(n: int, ratio: float = 1.0, tags: tuple[str, ...] = ()) -> str:
    """Count.

    Args:
        n: How many.
        ratio: A factor.
        tags: Labels.
    """
    return f"{n * ratio}:{','.join(tags)}"


@pytest.mark.parametrize("bad", ["2", True, 2.0, None, [2]])
def test_strict_mode_refuses_coercible_values_for_an_int(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="strict validation") as caught:
        Tool.from_function(count).validate({"n": bad})
    assert "n:" in caught.value.message


def test_strict_mode_keeps_what_json_can_say() -> None:
    tool = Tool.from_function(count)
    assert tool.validate({"n": 2, "ratio": 3, "tags": ["a", "b"]}) == {
        "n": 2,
        "ratio": 3.0,
        "tags": ("a", "b"),
    }


def test_lax_coercion_is_a_per_tool_opt_out() -> None:
    tool = Tool.from_function(count, strict=False)
    assert tool.validate({"n": "2"})["n"] == 2
    assert tool.validate({"n": 2.0})["n"] == 2


def test_arguments_that_are_not_an_object_are_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match="expected a JSON object"):
        Tool.from_function(count).validate(["n", 2])  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [math.nan, math.inf, -math.inf, 1e300, 0, -5, "60", True])
def test_impossible_approval_timeouts_are_refused_when_the_tool_is_made(timeout: object) -> None:
    with pytest.raises(InvalidInputError, match="approval_timeout"):
        Tool.from_function(count, requires_approval=True, approval_timeout=timeout)  # type: ignore[arg-type]
    tool = Tool.from_function(count)
    with pytest.raises(InvalidInputError, match="approval_timeout"):
        Tool(
            name="x",
            description="",
            function=count,
            arguments_model=tool.arguments_model,
            approval_timeout=timeout,  # type: ignore[arg-type]
        )


def test_the_longest_approval_timeout_is_accepted() -> None:
    tool = Tool.from_function(count, requires_approval=True, approval_timeout=MAX_APPROVAL_TIMEOUT)
    assert tool.approval_timeout == MAX_APPROVAL_TIMEOUT


class Bank:
    """A tool whose approval policy reads its argument as a number."""

    def __init__(self, policy: Any = None) -> None:
        self.sent: list[int] = []
        self.asked: list[dict[str, Any]] = []
        self.policy = policy or self.big_amounts

    def big_amounts(self, call: ToolCall) -> bool:
        self.asked.append(dict(call.arguments))
        return bool(call.arguments["amount"] > 100)

    def transfer(self, to: str, amount: int) -> str:
        """Send money."""
        self.sent.append(amount)
        return f"sent {amount} to {to}"

    def session(self, *calls: ToolCall) -> AgentSession:
        tool = Tool.from_function(self.transfer, requires_approval=self.policy)
        model = ScriptedModel([*calls, "done"])
        agent = Agent(name="bank", model=model, tools=[tool])
        return AgentSession(agent, store=SqliteStore(":memory:"))


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"to": "u2", "amount": "500"}, "amount: Input should be a valid integer"),
        ({"to": "u2"}, "amount: Field required"),
        ({"to": "u2", "amount": 5, "extra": 1}, "extra: Extra inputs are not permitted"),
    ],
)
def test_a_policy_is_never_asked_about_invalid_arguments(
    arguments: dict[str, Any], expected: str
) -> None:
    bank = Bank()
    session = bank.session(ToolCall(id="c1", name="transfer", arguments=arguments))
    result = session.submit_turn_sync("pay")
    assert result.reply == "done" and result.pending_tool_call is None
    (message,) = result.tool_results
    assert message.is_error and expected in message.content
    assert bank.asked == [] and bank.sent == []


def test_a_policy_that_raises_is_an_error_tool_message_logged_and_the_turn_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(call: ToolCall) -> bool:
        raise RuntimeError("policy bug")

    bank = Bank(policy=broken)
    session = bank.session(
        ToolCall(id="c1", name="transfer", arguments={"to": "u2", "amount": 5}),
    )
    with caplog.at_level(logging.ERROR, logger="agcore_lab.llm.tools"):
        result = session.submit_turn_sync("pay")
    assert result.reply == "done" and result.pending_tool_call is None
    (message,) = result.tool_results
    assert message.is_error and "approval policy" in message.content
    assert "policy bug" in message.content and bank.sent == []
    assert any("approval policy" in r.getMessage() and r.exc_info for r in caplog.records)
    assert session.submit_turn_sync("again").reply  # the session is still usable


def test_a_valid_call_still_asks_the_policy() -> None:
    bank = Bank()
    small = ToolCall(id="c1", name="transfer", arguments={"to": "u2", "amount": 5})
    big = ToolCall(id="c2", name="transfer", arguments={"to": "u2", "amount": 500})
    tools = {"transfer": Tool.from_function(bank.transfer, requires_approval=bank.big_amounts)}
    assert approval_gate(small, tools) is False
    assert approval_gate(big, tools) is True
    assert bank.asked == [{"to": "u2", "amount": 5}, {"to": "u2", "amount": 500}]
    assert approval_gate(ToolCall(id="c3", name="nope", arguments={}), tools) is False

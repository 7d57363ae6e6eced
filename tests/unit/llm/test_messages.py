"""Messages and the OpenAI chat wire format."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.messages import (
    AssistantMessage,
    MessageAdapter,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    message_from_openai,
    messages_from_openai,
    messages_to_openai,
    to_openai,
)

WIRE: list[dict[str, Any]] = [
    {"role": "system", "content": "You add numbers."},
    {"role": "user", "content": "What is 2 + 3?"},
    {"role": "user", "content": "and 4?", "name": "ada"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"q": {"k": [1, null]}}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "5"},
    {"role": "assistant", "content": "2 + 3 = 5"},
]


def test_wire_conversation_round_trips_exactly() -> None:
    messages = messages_from_openai(WIRE)
    assert [type(m) for m in messages] == [
        SystemMessage,
        UserMessage,
        UserMessage,
        AssistantMessage,
        ToolMessage,
        AssistantMessage,
    ]
    assert messages_to_openai(messages) == WIRE


def test_each_role_parses_to_typed_fields() -> None:
    system, user, named, calls, tool, answer = messages_from_openai(WIRE)
    assert isinstance(named, UserMessage) and named.name == "ada"
    assert isinstance(calls, AssistantMessage) and calls.content is None
    assert calls.tool_calls[0] == ToolCall(id="call_1", name="add", arguments={"a": 2, "b": 3})
    assert calls.tool_calls[1].arguments == {"q": {"k": [1, None]}}
    assert isinstance(tool, ToolMessage) and tool.tool_call_id == "call_1"
    assert tool.is_error is False
    assert answer.text == "2 + 3 = 5" and calls.text == ""


def test_tool_call_arguments_go_on_the_wire_as_a_json_string() -> None:
    call = ToolCall(id="c", name="f", arguments={"text": "二加三", "n": 1.5, "ok": True})
    wire = to_openai(AssistantMessage(content="calling", tool_calls=(call,)))
    arguments = wire["tool_calls"][0]["function"]["arguments"]
    assert isinstance(arguments, str)
    assert json.loads(arguments) == {"text": "二加三", "n": 1.5, "ok": True}
    assert wire["tool_calls"][0]["type"] == "function"
    assert ToolCall.from_openai(wire["tool_calls"][0]) == call


def test_tool_call_arguments_may_also_arrive_as_an_object_or_be_missing() -> None:
    as_object = {"id": "c", "function": {"name": "f", "arguments": {"x": 1}}}
    assert ToolCall.from_openai(as_object).arguments == {"x": 1}
    assert ToolCall.from_openai({"id": "c", "function": {"name": "f"}}).arguments == {}


def test_list_content_parts_keep_their_text() -> None:
    wire = {
        "role": "user",
        "content": [
            {"type": "text", "text": "look at "},
            {"type": "image_url", "image_url": {"url": "http://x/y.png"}},
            {"type": "text", "text": "this"},
        ],
    }
    assert message_from_openai(wire).text == "look at this"


def test_developer_role_is_read_as_system() -> None:
    message = message_from_openai({"role": "developer", "content": "rules"})
    assert isinstance(message, SystemMessage) and message.content == "rules"


def test_unknown_role_is_a_clear_error() -> None:
    with pytest.raises(InvalidInputError, match="unknown message role 'robot'"):
        message_from_openai({"role": "robot", "content": "beep"})


@pytest.mark.parametrize("arguments", ['{"a": 2', "not json", "[1, 2]", '"text"'])
def test_malformed_tool_call_arguments_are_a_clear_error(arguments: str) -> None:
    wire = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "function": {"name": "add", "arguments": arguments}}],
    }
    with pytest.raises(InvalidInputError) as info:
        message_from_openai(wire)
    assert info.value.context["tool_name"] == "add"
    assert "arguments" in str(info.value)


def test_content_of_a_wrong_type_is_a_clear_error() -> None:
    with pytest.raises(InvalidInputError, match="content must be a string or a list"):
        message_from_openai({"role": "user", "content": 42})


def test_metadata_and_ids_never_go_on_the_wire() -> None:
    message = UserMessage(content="hi", metadata={"secret": "x"})
    assert to_openai(message) == {"role": "user", "content": "hi"}


def test_messages_are_immutable_and_have_unique_time_ordered_ids() -> None:
    first, second = UserMessage(content="a"), UserMessage(content="b")
    assert first.id != second.id and first.id < second.id
    assert first.id.startswith("msg_")
    with pytest.raises(ValueError):
        first.content = "changed"  # type: ignore[misc]


def test_messages_round_trip_through_json_with_their_role_tag() -> None:
    call = ToolCall(id="c", name="f", arguments={"x": [1]})
    for message in [
        SystemMessage(content="s"),
        UserMessage(content="u", name="n"),
        AssistantMessage(content=None, tool_calls=(call,)),
        ToolMessage(content="boom", tool_call_id="c", name="f", is_error=True),
    ]:
        again = MessageAdapter.validate_json(message.model_dump_json())
        assert again == message and type(again) is type(message)

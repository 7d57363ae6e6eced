"""Tools from plain functions: schemas, validation, and errors the model sees."""

from __future__ import annotations

import asyncio
from typing import Any, Literal, Optional

import pytest
from pydantic import BaseModel

from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.messages import ToolCall
from agcore_lab.llm.tools import Tool, as_tools, run_tool_call


def add(a: int, b: int = 1) -> int:
    """Add two integers.

    The second defaults to one.

    Args:
        a: The first number.
        b: The second number,
            which may span lines.

    Returns:
        The sum.
    """
    return a + b


class Point(BaseModel):
    x: int
    y: int = 0


def plot(
    points: list[Point],
    style: Literal["line", "dots"] = "line",
    title: Optional[str] = None,  # noqa: UP045 - the old spelling must work too
    scale: float | None = None,
    labels: list[str] | None = None,
) -> str:
    """Plot points."""
    return f"{len(points)} {style} {title} {scale} {labels}"


def _run(call: ToolCall, *tools: Any) -> Any:
    return asyncio.run(run_tool_call(call, as_tools(list(tools))))


def _props(tool: Tool) -> dict[str, Any]:
    properties = tool.spec.parameters["properties"]
    assert isinstance(properties, dict)
    return properties


def test_schema_from_type_hints_and_google_docstring() -> None:
    tool = Tool.from_function(add)
    assert tool.name == "add"
    assert tool.description == "Add two integers."
    assert _props(tool) == {
        "a": {"type": "integer", "description": "The first number."},
        "b": {
            "type": "integer",
            "default": 1,
            "description": "The second number, which may span lines.",
        },
    }
    assert tool.spec.parameters["required"] == ["a"]
    assert tool.spec.parameters["type"] == "object"
    assert "Returns" not in str(tool.spec.parameters)


def test_spec_is_the_openai_tools_entry() -> None:
    entry = Tool.from_function(add).spec.to_openai()
    assert entry["type"] == "function"
    function = entry["function"]
    assert isinstance(function, dict)
    assert function["name"] == "add" and function["description"] == "Add two integers."


def test_optional_list_literal_and_model_parameters() -> None:
    tool = Tool.from_function(plot)
    props = _props(tool)
    assert tool.spec.parameters["required"] == ["points"]
    assert props["style"]["enum"] == ["line", "dots"] and props["style"]["default"] == "line"
    assert {"type": "null"} in props["title"]["anyOf"]
    assert {"type": "string"} in props["title"]["anyOf"]
    assert {"type": "number"} in props["scale"]["anyOf"]
    assert props["points"]["type"] == "array"
    assert props["points"]["items"] == {"$ref": "#/$defs/Point"}
    assert "x" in tool.spec.parameters["$defs"]["Point"]["properties"]  # type: ignore[index]


def test_model_parameters_arrive_as_model_instances() -> None:
    seen: list[Any] = []

    def move(to: Point, by: list[int]) -> str:
        seen.append((to, by))
        return "moved"

    outcome = _run(ToolCall(id="c", name="move", arguments={"to": {"x": 3}, "by": [1, 2]}), move)
    assert outcome.message.content == "moved"
    assert seen == [(Point(x=3, y=0), [1, 2])]


def test_name_and_description_overrides() -> None:
    tool = Tool.from_function(add, name="plus", description="Sum.")
    assert (tool.spec.name, tool.spec.description) == ("plus", "Sum.")


def test_unannotated_parameters_accept_any_json() -> None:
    def echo(value):  # type: ignore[no-untyped-def]
        """Echo."""
        return value

    outcome = _run(ToolCall(id="c", name="echo", arguments={"value": {"k": [1]}}), echo)
    assert outcome.value == {"k": [1]}
    assert outcome.message.content == '{"k": [1]}'


def test_a_tool_result_is_rendered_as_text_for_the_model() -> None:
    def point() -> Point:
        """A point."""
        return Point(x=1, y=2)

    def many() -> dict[str, Any]:
        """A dict."""
        return {"b": "二", "a": [1.5, None]}

    assert _run(ToolCall(id="c", name="point"), point).message.content == '{"x":1,"y":2}'
    assert _run(ToolCall(id="c", name="many"), many).message.content == (
        '{"b": "二", "a": [1.5, null]}'
    )


def test_async_tools_are_awaited() -> None:
    async def slow_add(a: int, b: int) -> int:
        """Add, slowly."""
        await asyncio.sleep(0)
        return a + b

    outcome = _run(ToolCall(id="c1", name="slow_add", arguments={"a": 2, "b": 3}), slow_add)
    assert outcome.value == 5
    assert outcome.message.content == "5"
    assert outcome.message.tool_call_id == "c1" and outcome.message.name == "slow_add"
    assert outcome.message.is_error is False


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"a": "two"}, "a"),
        ({}, "a"),
        ({"a": 1, "c": 3}, "c"),
        ({"a": 1, "b": [1]}, "b"),
    ],
)
def test_invalid_arguments_become_an_error_message_naming_the_field(
    arguments: dict[str, Any], field: str
) -> None:
    called: list[int] = []

    def checked(a: int, b: int = 0) -> int:
        """Checked."""
        called.append(a)
        return a

    outcome = _run(ToolCall(id="c", name="checked", arguments=arguments), checked)
    assert outcome.message.is_error
    assert outcome.message.tool_call_id == "c"
    assert "invalid arguments for tool 'checked'" in outcome.message.content
    assert f"{field}:" in outcome.message.content
    assert called == []  # validation happens before the call


def test_validate_raises_invalid_input_with_the_tool_name() -> None:
    with pytest.raises(InvalidInputError) as info:
        Tool.from_function(add).validate({"a": "x"})
    assert info.value.context["tool_name"] == "add"
    assert Tool.from_function(add, strict=False).validate({"a": "4"}) == {"a": 4, "b": 1}


def test_an_unknown_tool_lists_the_available_tools() -> None:
    outcome = _run(ToolCall(id="c", name="mul", arguments={}), add, plot)
    assert outcome.message.is_error
    assert outcome.message.content == "Error: unknown tool 'mul'. Available tools: add, plot."


def test_a_raising_tool_becomes_an_error_message() -> None:
    def explode(reason: str) -> None:
        """Fail."""
        raise RuntimeError(reason)

    outcome = _run(ToolCall(id="c", name="explode", arguments={"reason": "disk full"}), explode)
    assert outcome.message.is_error
    assert "RuntimeError('disk full')" in outcome.message.content
    assert outcome.value is None


@pytest.mark.parametrize("name", ["has space", "x" * 65, "semi;colon", "é"])
def test_tool_names_are_validated(name: str) -> None:
    with pytest.raises(InvalidInputError, match="tool name"):
        Tool.from_function(add, name=name)


def test_a_lambda_needs_a_name() -> None:
    with pytest.raises(InvalidInputError):
        Tool.from_function(lambda x: x)
    assert Tool.from_function(lambda x: x, name="ident").name == "ident"


def test_star_args_and_kwargs_are_rejected() -> None:
    def star(*values: int) -> int:
        """Sum."""
        return sum(values)

    def kw(**options: str) -> str:
        """Options."""
        return ""

    for fn in (star, kw):
        with pytest.raises(InvalidInputError, match="named parameters only"):
            Tool.from_function(fn)


def test_duplicate_tool_names_are_rejected() -> None:
    with pytest.raises(InvalidInputError, match="two tools are named 'add'"):
        as_tools([add, Tool.from_function(plot, name="add")])

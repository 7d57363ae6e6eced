"""Tools from plain Python functions.

``Tool.from_function(fn)`` reads the signature's type hints and the Google-style docstring into
a JSON schema the model sees, and validates the model's arguments with pydantic before the call.
A tool that raises, an unknown tool, or invalid arguments become a tool-error message that the
model sees; the turn goes on.

Example:
    >>> def add(a: int, b: int) -> int:
    ...     '''Add two integers.
    ...
    ...     Args:
    ...         a: The first number.
    ...         b: The second number.
    ...     '''
    ...     return a + b
    >>> tool = Tool.from_function(add)
    >>> tool.spec.parameters["properties"]["a"]
    {'description': 'The first number.', 'type': 'integer'}
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.base import ToolSpec
from agcore_lab.llm.messages import ToolCall, ToolMessage

__all__ = ["Tool", "ToolCallOutcome", "as_tools", "run_tool_call"]

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary paragraph and the ``Args:`` descriptions of a Google-style docstring."""
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    summary: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        header = re.fullmatch(r"(\w[\w ]*):", stripped)
        if header and not line.startswith(" "):
            section, current = header.group(1).lower(), None
            continue
        if section is None:
            summary.append(stripped)
        elif section in ("args", "arguments", "parameters"):
            match = re.match(r"^\s{1,8}(\*{0,2}\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
            if match and line.startswith(" ") and not line.startswith(" " * 9):
                current = match.group(1).lstrip("*")
                args[current] = match.group(2).strip()
            elif current and stripped:
                args[current] = f"{args[current]} {stripped}".strip()
    text = "\n".join(summary).strip()
    return text.split("\n\n")[0].replace("\n", " "), args


def _arguments_model(fn: Callable[..., Any], name: str, docs: Mapping[str, str]) -> type[BaseModel]:
    signature = inspect.signature(fn)
    try:
        hints = get_type_hints(fn)
    except Exception as exc:  # unresolvable forward references
        raise InvalidInputError(
            f"cannot read the type hints of tool {name!r}: {exc}", tool_name=name
        ) from exc
    fields: dict[str, Any] = {}
    for pname, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise InvalidInputError(
                f"tool {name!r} takes *{pname}; tools need named parameters only", tool_name=name
            )
        annotation = hints.get(pname, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, FieldInfo(default=default, description=docs.get(pname)))
    model: type[BaseModel] = create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # Titles are noise to a model; keep the schema small.
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


@dataclass
class Tool:
    """A function the model may call.

    Build one with :meth:`from_function`; ``Agent(tools=[fn])`` does it for plain functions.

    Attributes:
        name: The name the model calls it by.
        description: What it does (the docstring's summary by default).
        function: The Python callable, sync or async.
        arguments_model: The pydantic model that validates the arguments.
        requires_approval: ``True`` if a person must approve every call, or a policy function
            ``(call) -> bool`` that decides per call.
        approval_timeout: Seconds a call may wait for a decision before it expires
            (``None``: it never expires).
    """

    name: str
    description: str
    function: Callable[..., Any]
    arguments_model: type[BaseModel]
    requires_approval: bool | Callable[[ToolCall], bool] = False
    approval_timeout: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    _spec: tuple[Any, ToolSpec] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        requires_approval: bool | Callable[[ToolCall], bool] = False,
        approval_timeout: float | None = None,
    ) -> Tool:
        """Make a tool from a plain function (sync or async).

        Args:
            fn: The function; its parameters need type hints (unannotated means any JSON).
            name: Override the function's ``__name__``.
            description: Override the docstring's summary.
            requires_approval: ``True``, or a policy ``(call) -> bool``: the call waits for a
                person's approval before it runs.
            approval_timeout: Seconds a call may wait before it expires.

        Raises:
            InvalidInputError: The name is not valid for the wire format, or the function takes
                ``*args`` / ``**kwargs``.
        """
        tool_name = str(name or getattr(fn, "__name__", ""))
        if approval_timeout is not None and approval_timeout <= 0:
            raise InvalidInputError("approval_timeout must be > 0 seconds", tool_name=tool_name)
        if not _NAME.match(tool_name):
            raise InvalidInputError(
                f"tool name {tool_name!r} must be 1-64 letters, digits, '_', '.' or '-'",
                tool_name=tool_name,
            )
        summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        return cls(
            name=tool_name,
            description=description if description is not None else summary,
            function=fn,
            arguments_model=_arguments_model(fn, tool_name, arg_docs),
            requires_approval=requires_approval,
            approval_timeout=approval_timeout,
        )

    def needs_approval(self, call: ToolCall) -> bool:
        """Whether this call must wait for a person's decision."""
        policy = self.requires_approval
        return bool(policy(call)) if callable(policy) else bool(policy)

    @property
    def spec(self) -> ToolSpec:
        """What the model is told about this tool (built once, then reused)."""
        key = (self.name, self.description, self.arguments_model)
        if self._spec is None or self._spec[0] != key:
            schema = _clean_schema(self.arguments_model.model_json_schema())
            spec = ToolSpec(name=self.name, description=self.description, parameters=schema)
            self._spec = (key, spec)
        return self._spec[1]

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate the model's arguments; return them as keyword arguments for the call.

        Raises:
            InvalidInputError: The arguments do not fit the schema (the message lists why).
        """
        try:
            parsed = self.arguments_model.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                for e in exc.errors()
            )
            raise InvalidInputError(
                f"invalid arguments for tool {self.name!r}: {problems}", tool_name=self.name
            ) from exc
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}

    async def call(self, arguments: Mapping[str, Any]) -> Any:
        """Validate the arguments and run the function (awaiting it when async)."""
        result = self.function(**self.validate(arguments))
        if inspect.isawaitable(result):
            result = await result
        return result


def as_tools(items: Sequence[Tool | Callable[..., Any]]) -> dict[str, Tool]:
    """Tools by name, making plain functions into tools; duplicate names are an error."""
    tools: dict[str, Tool] = {}
    for item in items:
        tool = item if isinstance(item, Tool) else Tool.from_function(item)
        if tool.name in tools:
            raise InvalidInputError(f"two tools are named {tool.name!r}", tool_name=tool.name)
        tools[tool.name] = tool
    return tools


def _render_result(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


@dataclass(frozen=True)
class ToolCallOutcome:
    """What one tool call produced: the message for the model and the raw value (if any)."""

    message: ToolMessage
    value: Any = None


async def run_tool_call(call: ToolCall, tools: Mapping[str, Tool]) -> ToolCallOutcome:
    """Run one tool call; every failure becomes an ``is_error`` tool message, never a raise.

    The error text tells the model what went wrong so it can correct itself: the unknown name
    with the tools that exist, the invalid arguments, or the exception the tool raised.
    """
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        text = f"Error: unknown tool {call.name!r}. Available tools: {known}."
        return ToolCallOutcome(_error(call, text))
    try:
        value = await tool.call(call.arguments)
    except InvalidInputError as exc:
        return ToolCallOutcome(_error(call, f"Error: {exc.message}"))
    except Exception as exc:
        return ToolCallOutcome(_error(call, f"Error: tool {call.name!r} raised {exc!r}"))
    message = ToolMessage(content=_render_result(value), tool_call_id=call.id, name=call.name)
    return ToolCallOutcome(message, value)


def _error(call: ToolCall, text: str) -> ToolMessage:
    return ToolMessage(content=text, tool_call_id=call.id, name=call.name, is_error=True)

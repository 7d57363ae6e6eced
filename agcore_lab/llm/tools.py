"""Tools from plain Python functions.

``Tool.from_function(fn)`` reads the signature's type hints and the Google-style docstring into
a JSON schema the model sees, and validates the model's arguments with pydantic before the call.
A tool that raises, an unknown tool, or invalid arguments become a tool-error message that the
model sees; the turn goes on.

Arguments are validated in *strict* mode by default: the model must send the JSON types the
schema asks for (``"2"``, ``true`` and ``2.0`` are not an ``int``; an ``int`` is a fine
``float``). ``Tool.from_function(fn, strict=False)`` opts one tool out, into pydantic's lax
coercion. An approval policy is only asked about calls whose arguments are valid; a policy that
raises is an error tool message too (and is logged), and the turn goes on.

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
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from agcore_lab.errors import InvalidInputError
from agcore_lab.llm.base import ToolSpec
from agcore_lab.llm.messages import ToolCall, ToolMessage

__all__ = [
    "MAX_APPROVAL_TIMEOUT",
    "Tool",
    "ToolCallOutcome",
    "approval_gate",
    "as_tools",
    "run_tool_call",
]

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

MAX_APPROVAL_TIMEOUT = 366 * 24 * 3600.0
"""The longest ``approval_timeout`` accepted: one year, in seconds."""


def _check_approval_timeout(value: object, tool_name: str) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 < value <= MAX_APPROVAL_TIMEOUT
    ):
        raise InvalidInputError(
            f"approval_timeout must be a number of seconds > 0 and at most "
            f"{MAX_APPROVAL_TIMEOUT:.0f} (one year), or None for no expiry; got {value!r}",
            tool_name=tool_name,
        )
    return float(value)


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
            (``None``: it never expires; at most :data:`MAX_APPROVAL_TIMEOUT`).
        strict: Validate the model's arguments without coercion (the default); ``False``
            lets pydantic coerce ``"2"`` to ``2``.
    """

    name: str
    description: str
    function: Callable[..., Any]
    arguments_model: type[BaseModel]
    requires_approval: bool | Callable[[ToolCall], bool] = False
    approval_timeout: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    strict: bool = True
    _spec: tuple[Any, ToolSpec] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.approval_timeout = _check_approval_timeout(self.approval_timeout, self.name)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        requires_approval: bool | Callable[[ToolCall], bool] = False,
        approval_timeout: float | None = None,
        strict: bool = True,
    ) -> Tool:
        """Make a tool from a plain function (sync or async).

        Args:
            fn: The function; its parameters need type hints (unannotated means any JSON).
            name: Override the function's ``__name__``.
            description: Override the docstring's summary.
            requires_approval: ``True``, or a policy ``(call) -> bool``: the call waits for a
                person's approval before it runs.
            approval_timeout: Seconds a call may wait before it expires (finite, > 0, at most
                a year).
            strict: Refuse arguments of the wrong JSON type instead of coercing them.

        Raises:
            InvalidInputError: The name is not valid for the wire format, the function takes
                ``*args`` / ``**kwargs``, or ``approval_timeout`` is NaN, infinite, <= 0 or
                more than a year.
        """
        tool_name = str(name or getattr(fn, "__name__", ""))
        _check_approval_timeout(approval_timeout, tool_name)
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
            strict=strict,
        )

    def needs_approval(self, call: ToolCall) -> bool:
        """Whether this call must wait for a person's decision.

        The policy is only asked about valid arguments (use :func:`approval_gate` in a tool
        loop: it also turns invalid arguments and a failing policy into error messages).

        Raises:
            InvalidInputError: The call's arguments do not fit the schema.
        """
        policy = self.requires_approval
        if not policy:
            return False
        self.validate(call.arguments)
        return bool(policy(call)) if callable(policy) else True

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
        if not isinstance(arguments, Mapping):
            raise InvalidInputError(
                f"invalid arguments for tool {self.name!r}: expected a JSON object, got "
                f"{type(arguments).__name__}",
                tool_name=self.name,
            )
        try:
            parsed = self._parse(dict(arguments))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                for e in exc.errors()
            )
            mode = (
                " (strict validation: send each value with the JSON type the schema asks for, "
                'e.g. 2 for an integer, not "2", 2.0 or true)'
                if self.strict
                else ""
            )
            raise InvalidInputError(
                f"invalid arguments for tool {self.name!r}: {problems}{mode}", tool_name=self.name
            ) from exc
        except RecursionError as exc:
            raise InvalidInputError(
                f"invalid arguments for tool {self.name!r}: nested too deeply",
                tool_name=self.name,
            ) from exc
        return {name: getattr(parsed, name) for name in type(parsed).model_fields}

    def _parse(self, arguments: dict[str, Any]) -> BaseModel:
        if not self.strict:
            return self.arguments_model.model_validate(arguments)
        try:
            text = json.dumps(arguments, allow_nan=False)
        except (TypeError, ValueError):  # Python values (an edit in a cell): strict Python mode
            return self.arguments_model.model_validate(arguments, strict=True)
        # Strict JSON mode: the types a JSON value can have, no coercion between them.
        return self.arguments_model.model_validate_json(text, strict=True)

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


def approval_gate(call: ToolCall, tools: Mapping[str, Tool]) -> bool | ToolMessage:
    """Ask the tool's approval policy about ``call``, after validating its arguments.

    Returns ``True`` if the call must wait for a person, ``False`` if it may run now (also for
    an unknown tool, which :func:`run_tool_call` then answers), or the error tool message the
    model sees when the arguments are invalid or the policy raised (logged; the call does not
    run and the turn goes on).
    """
    tool = tools.get(call.name)
    if tool is None or not tool.requires_approval:
        return False
    try:
        tool.validate(call.arguments)
    except InvalidInputError as exc:
        return _error(call, f"Error: {exc.message}")
    policy = tool.requires_approval
    if not callable(policy):
        return True
    try:
        return bool(policy(call))
    except Exception as exc:
        logger.exception("the approval policy of tool %r raised", call.name)
        return _error(
            call,
            f"Error: the approval policy of tool {call.name!r} raised {exc!r}; "
            "the call was not executed.",
        )


def _error(call: ToolCall, text: str) -> ToolMessage:
    return ToolMessage(content=text, tool_call_id=call.id, name=call.name, is_error=True)

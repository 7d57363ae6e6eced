"""Checks every public entry point shares: typed construction errors and JSON limits.

- :class:`CheckedModel`: a pydantic model whose constructor raises
  :class:`~agcore_lab.errors.InvalidInputError` (a ``ValueError``) instead of pydantic's
  ``ValidationError``; the pydantic error list is kept as ``error.errors`` and the
  ``ValidationError`` as ``__cause__``.
- :func:`check_json`: JSON values agcore_lab stores (memory values, metadata) must be finite
  (no NaN or infinity: they are not JSON) and nested at most :data:`MAX_JSON_DEPTH` levels.

Example:
    >>> from agcore_lab.errors import InvalidInputError
    >>> class Point(CheckedModel):
    ...     x: int
    >>> try:
    ...     Point(x="not a number")
    ... except InvalidInputError as exc:
    ...     print(exc.errors[0]["loc"])
    ('x',)
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from pydantic import BaseModel, ValidationError

from agcore_lab.errors import InvalidInputError

__all__ = [
    "MAX_JSON_DEPTH",
    "CheckedModel",
    "check_count",
    "check_json",
    "check_text",
    "invalid_input",
]

MAX_JSON_DEPTH = 100
"""The deepest nesting of lists and objects accepted in stored JSON values."""


def invalid_input(exc: ValidationError, what: str) -> InvalidInputError:
    """An ``InvalidInputError`` listing each problem of ``exc`` (kept as ``.errors``)."""
    problems = exc.errors(include_url=False, include_input=False)
    listed = "; ".join(
        f"{'.'.join(str(p) for p in e['loc'][:6]) or '(value)'}: {e['msg']}" for e in problems[:5]
    )
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    error = InvalidInputError(f"invalid {what}: {listed}{more}")
    error.errors = problems
    return error


class CheckedModel(BaseModel):
    """A pydantic model whose constructor raises ``InvalidInputError`` on bad input."""

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise invalid_input(exc, type(self).__name__) from exc
        except RecursionError as exc:
            raise InvalidInputError(
                f"invalid {type(self).__name__}: a value is nested too deeply "
                f"(at most {MAX_JSON_DEPTH} levels)"
            ) from exc


def check_json(value: Any, what: str, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse NaN / infinity anywhere in ``value`` and nesting deeper than ``max_depth``.

    Raises:
        InvalidInputError: Naming ``what`` and the path to the bad value.
    """
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise InvalidInputError(
                f"{what}{path} is {item}: NaN and infinity are not JSON; store null or a "
                "string instead"
            )
        if isinstance(item, (dict, list, tuple)):
            if depth >= max_depth:
                raise InvalidInputError(
                    f"{what} is nested more than {max_depth} levels deep (at {path[:80]}...); "
                    "flatten it"
                )
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((v, depth + 1, f"{path}[{k!r}]") for k, v in pairs)


def check_count(
    value: object,
    name: str,
    *,
    minimum: int = 1,
    optional: bool = False,
    maximum: int | None = None,
) -> Any:
    """An int ``>= minimum`` (and ``<= maximum`` when given; or ``None`` when ``optional``);
    ``InvalidInputError`` otherwise.

    ``bool``, floats and strings are refused, even ``2.0`` or ``"2"``.
    """
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(
            f"{name} must be an int >= {minimum}, got {type(value).__name__} {value!r:.40}"
        )
    if value < minimum:
        raise InvalidInputError(f"{name} must be >= {minimum}, got {value}")
    count = int(value)
    if maximum is not None and count > maximum:
        raise InvalidInputError(f"{name} must be <= {maximum:,}, got {count:,}")
    return count


def check_text(value: object, name: str) -> str:
    """``value`` if it is a ``str``; ``InvalidInputError`` naming ``name`` otherwise."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    return value

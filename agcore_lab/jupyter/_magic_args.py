"""Argument parsing shared by the ``%agcore`` commands (the ``magic_arguments`` way).

A usage mistake raises :class:`CommandError`; the magic shows it as one ``agcore:`` line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from IPython.core.error import UsageError
from IPython.core.magic_arguments import magic_arguments, parse_argstring

__all__ = ["CommandError", "command", "parse"]


class CommandError(Exception):
    """A usage mistake in a magic line: shown as one ``agcore:`` line."""


def command(name: str, usage: str, *arguments: Any) -> Callable[..., Any]:
    """An argument spec for one command, for ``parse_argstring`` (the magic_arguments way)."""

    def spec(line: str) -> None:
        pass

    spec.__doc__ = usage
    # Decorators apply bottom-up; applying in reverse keeps the arguments in the given order.
    for arg in reversed(arguments):
        spec = arg(spec)
    return cast(Callable[..., Any], magic_arguments(name=f"agcore {name}")(spec))


def parse(spec: Callable[..., Any], line: str) -> Any:
    """Parse ``line`` with ``spec``; usage mistakes become :class:`CommandError`."""
    try:
        return parse_argstring(spec, line)
    except UsageError as exc:
        raise CommandError(str(exc)) from None
    except SystemExit:
        # argparse exits after printing --help; the usage is already on screen.
        raise CommandError("see the usage above") from None

"""What every view shares: the one-line error text and the height cap.

Views import these from here (never from one another), so a view module holds one view.
"""

from __future__ import annotations

from typing import Any

from agcore_lab.errors import AgcoreError

__all__ = ["MAX_HEIGHT", "cap_height", "error_line", "plural"]

MAX_HEIGHT = 600
"""Pixels: no view grows taller; its content scrolls (or pages) inside."""


def error_line(exc: BaseException) -> str:
    """One line for an error: ``agcore: <message>`` (the type name for non-agcore errors).

    Example:
        >>> error_line(ValueError("bad   value"))
        'agcore: ValueError: bad value'
    """
    if isinstance(exc, AgcoreError):
        text = exc.message
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return "agcore: " + " ".join(text.split())


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``"1 turn"``, ``"2 turns"``, ``"0 turns"`` (``many`` for irregular plurals).

    Example:
        >>> plural(1, "turn"), plural(3, "entity", "entities")
        ('1 turn', '3 entities')
    """
    return f"{count:,} {noun if count == 1 else (many or noun + 's')}"


def cap_height(widget: Any, height: int = MAX_HEIGHT) -> None:
    """Give ``widget`` a maximum height; what does not fit scrolls inside it."""
    widget.layout.max_height = f"{height}px"
    widget.layout.overflow_y = "auto"
    widget.layout.overflow_x = "hidden"

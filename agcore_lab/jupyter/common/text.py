"""What every view shares: the one-line error text, plurals, status badges and the height cap.

Views import these from here (never from one another), so a view module holds one view.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import Any

from agcore_lab.errors import AgcoreError
from agcore_lab.llm.usage import format_cost

__all__ = [
    "format_cost",
    "format_tokens",
    "MAX_HEIGHT",
    "ago",
    "badge",
    "cap_height",
    "error_line",
    "plural",
]

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


def ago(moment: datetime, now: datetime | None = None) -> str:
    """How long ago ``moment`` was, in words: ``just now``, ``40 s ago``, ``3 min ago``,
    ``5 h ago``, ``2 days ago``; older than 30 days, the date (``2026-10-01``). (``tree.js``
    formats the same way in the browser, so a table left open stays right.)

    Example:
        >>> from datetime import timedelta
        >>> now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
        >>> [ago(now - timedelta(seconds=s), now) for s in (3, 40, 200, 7200, 90000)]
        ['just now', '40 s ago', '3 min ago', '2 h ago', '1 day ago']
    """
    now = now or datetime.now(UTC)
    seconds = (now - moment).total_seconds()
    if seconds < 10:
        return "just now"
    if seconds < 60:
        return f"{int(seconds)} s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    if seconds < 30 * 86400:
        return plural(int(seconds // 86400), "day") + " ago"
    return moment.strftime("%Y-%m-%d")


def badge(status: str) -> str:
    """A coloured status label (the colour by status: ``agc-badge-<status>``, spaces as ``_``).

    Example:
        >>> badge("waiting for approval")
        '<span class="agc-badge agc-badge-waiting_for_approval">waiting for approval</span>'
    """
    slug = escape(status.replace(" ", "_"))
    return f'<span class="agc-badge agc-badge-{slug}">{escape(status)}</span>'


def cap_height(widget: Any, height: int = MAX_HEIGHT) -> None:
    """Give ``widget`` a maximum height; what does not fit scrolls inside it."""
    widget.layout.max_height = f"{height}px"
    widget.layout.overflow_y = "auto"
    widget.layout.overflow_x = "hidden"


def format_tokens(tokens: int) -> str:
    """``12,345`` style."""
    return f"{tokens:,}"

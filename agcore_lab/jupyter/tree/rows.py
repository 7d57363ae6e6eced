"""What the session tree shows, without widgets: columns, sort keys, status tones, search and
collapse over flattened rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from agcore_lab.jupyter.common.history_parts import format_cost, format_tokens, full_time
from agcore_lab.jupyter.common.text import ago
from agcore_lab.jupyter.tree._html import TreeRow

__all__ = [
    "COLUMNS",
    "SORT_KEYS",
    "open_rows",
    "search_rows",
    "short_time",
    "status_text",
    "table_row",
    "tone",
]

COLUMNS: list[dict[str, str]] = [
    {"key": "agent", "label": "agent", "align": "left"},
    {"key": "id", "label": "session", "align": "left"},
    {"key": "turns", "label": "turns", "align": "right"},
    {"key": "tokens", "label": "tokens", "align": "right"},
    {"key": "cost", "label": "cost", "align": "right"},
    {"key": "status", "label": "status", "align": "left"},
    {"key": "updated", "label": "updated", "align": "left"},
    {"key": "created", "label": "created (UTC)", "align": "left"},
]
"""The tree table's columns (the first one carries the indentation)."""

SORT_KEYS: dict[str, Callable[[Any], Any]] = {
    "agent": lambda n: (n.agent_name.lower(), n.session_id),
    "id": lambda n: n.session_id,
    "turns": lambda n: (n.turn_index, n.session_id),
    "tokens": lambda n: (n.total_tokens, n.session_id),
    "cost": lambda n: (n.cost_usd, n.session_id),
    "status": lambda n: (str(n.status), n.orphan, n.session_id),
    "updated": lambda n: (n.updated_at, n.session_id),
    "created": lambda n: (n.created_at, n.session_id),
}
"""How siblings are ordered by each column."""

_TONES = (
    ("failed", "error"),
    ("timed out", "error"),
    ("cancelled", "warn"),
    ("waiting for approval", "wait"),
    ("running", "info"),
    ("orphan", "warn"),
    ("completed", "ok"),
    ("done", "ok"),
    ("live", "ok"),
    ("stored", "muted"),
)


def tone(status: str) -> str:
    """The colour family of a status text (its most telling word wins)."""
    return next((t for word, t in _TONES if word in status), "muted")


def short_time(moment: datetime) -> str:
    """``2026-12-01 08:39`` (UTC)."""
    return moment.strftime("%Y-%m-%d %H:%M")


def search_rows(rows: Sequence[TreeRow], query: str) -> list[TreeRow]:
    """Rows whose session id or agent contains ``query`` (any case), with their ancestors so
    every match is seen in place."""
    query = query.lower()
    keep: set[str] = set()
    parent = {r.node.session_id: r.node.parent_id for r in rows}
    for row in rows:
        node = row.node
        if query in node.session_id.lower() or query in node.agent_name.lower():
            sid: str | None = node.session_id
            while sid is not None and sid not in keep:
                keep.add(sid)
                sid = parent.get(sid)
    return [r for r in rows if r.node.session_id in keep]


def open_rows(rows: Sequence[TreeRow], collapsed: set[str]) -> list[TreeRow]:
    """Rows not hidden under a collapsed ancestor (``rows`` in depth-first order)."""
    shown: list[TreeRow] = []
    hide_below: int | None = None
    for row in rows:
        if hide_below is not None:
            if row.depth > hide_below:
                continue
            hide_below = None
        shown.append(row)
        if row.node.session_id in collapsed and row.node.children:
            hide_below = row.depth
    return shown


def status_text(node: Any, extra: str | None, waiting: set[str]) -> str:
    """``failed · live``, ``waiting for approval · stored · orphan``...: ``extra`` (a
    dispatch's status) first, then a waiting approval, then live/stored, then orphan."""
    parts = []
    if extra and extra != "waiting":
        parts.append(extra.replace("_", " "))
    if node.session_id in waiting and "waiting for approval" not in parts:
        parts.append("waiting for approval")
    parts.append(str(node.status))
    if getattr(node, "orphan", False):
        parts.append("orphan")
    return " · ".join(parts)


def table_row(
    row: TreeRow, status: str, collapsed: set[str], now: datetime | None = None
) -> dict[str, Any]:
    """One row for the tree table (see :class:`~agcore_lab.jupyter.tree.table.TreeTable`).

    ``updated`` is relative (``3 min ago``, from ``now``); its exact time is the cell's hover
    text, and ``stamps`` gives the browser the moment so it keeps the words current.
    """
    node = row.node
    return {
        "id": node.session_id,
        "depth": row.depth,
        "kids": len(node.children),
        "open": node.session_id not in collapsed,
        "tone": tone(status),
        "title": f"{node.session_id} · {status}",
        "cells": {
            "agent": node.agent_name,
            "id": node.session_id,
            "turns": f"{node.turn_index:,}",
            "tokens": format_tokens(node.total_tokens),
            "cost": format_cost(node.cost_usd),
            "status": status,
            "updated": ago(node.updated_at, now),
            "created": short_time(node.created_at),
        },
        "titles": {"updated": f"{full_time(node.updated_at)} UTC"},
        "stamps": {"updated": node.updated_at.timestamp() * 1000},
    }

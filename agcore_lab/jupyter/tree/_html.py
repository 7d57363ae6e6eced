"""The session tree flattened into rows, as plain text and as the static HTML snapshot.

A tree of any size is walked once, depth first, into :class:`TreeRow` objects; views page
through those rows (never a 10,000-row widget). The text prefix uses box-drawing characters and
no-break spaces, so it survives where plain spaces collapse (HTML, option text).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from agcore_lab.jupyter.common.history_parts import format_cost, format_tokens, full_time
from agcore_lab.jupyter.common.text import ago

__all__ = [
    "TreeRow",
    "find_node",
    "flatten",
    "node_status",
    "render_details",
    "render_tree",
    "row_text",
]

_NBSP = "\u00a0"


@dataclass(frozen=True)
class TreeRow:
    """One session in the flattened tree: the node, its depth and its drawn prefix."""

    node: Any  # SessionNode
    depth: int
    prefix: str


def node_status(node: Any) -> str:
    """``live``, ``stored``, or either with ``· orphan`` (its parent was destroyed)."""
    return f"{node.status} · orphan" if getattr(node, "orphan", False) else str(node.status)


def flatten(
    roots: Iterable[Any], *, order: tuple[Callable[[Any], Any], bool] | None = None
) -> list[TreeRow]:
    """Depth-first rows (parents before children), without recursion (deep trees are fine).

    Args:
        roots: The tree's roots.
        order: ``(key, descending)`` to sort the roots and every node's children by.
    """

    def arrange(nodes: Iterable[Any]) -> list[Any]:
        nodes = list(nodes)
        if order is not None:
            nodes.sort(key=order[0], reverse=order[1])
        return nodes

    rows: list[TreeRow] = []
    # (node, depth, prefix of its children, its own prefix)
    stack: list[tuple[Any, int, str, str]] = [(r, 0, "", "") for r in reversed(arrange(roots))]
    while stack:
        node, depth, lead, own = stack.pop()
        rows.append(TreeRow(node=node, depth=depth, prefix=own))
        children = arrange(node.children)
        for i in range(len(children) - 1, -1, -1):
            last = i == len(children) - 1
            branch = "└─" if last else "├─"
            below = (_NBSP * 3) if last else ("│" + _NBSP * 2)
            stack.append((children[i], depth + 1, lead + below, lead + branch + _NBSP))
    return rows


def row_text(row: TreeRow, status: str | None = None) -> str:
    """One row as plain text: tree prefix, agent, turns, cost, status and the id."""
    node = row.node
    turns = f"{node.turn_index} turn{'s' if node.turn_index != 1 else ''}"
    return (
        f"{row.prefix}{node.agent_name} · {turns} · {format_cost(node.cost_usd)} · "
        f"{status or node_status(node)} · {node.session_id}"
    )


def find_node(roots: Iterable[Any], session_id: str) -> Any:
    """The node of ``session_id`` anywhere in the tree, or ``None`` (no recursion)."""
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node.session_id == session_id:
            return node
        stack.extend(node.children)
    return None


def render_tree(
    rows: Sequence[TreeRow],
    *,
    selected: str | None = None,
    status: Callable[[Any], str] = node_status,
) -> str:
    """Rows as an HTML list (for the static fallback); every field escaped.

    Each row says when the session was last written as an exact time (a saved page has no
    clock to keep "3 min ago" true), with the relative time as of the snapshot on hover.
    """
    items = []
    for row in rows:
        node = row.node
        css = "agc-tree-row agc-selected" if node.session_id == selected else "agc-tree-row"
        items.append(
            f'<div class="{css}" data-session="{escape(node.session_id)}">'
            f"{escape(row.prefix)}<b>{escape(node.agent_name)}</b> · "
            f"{node.turn_index} turn{'' if node.turn_index == 1 else 's'} · "
            f"{escape(format_cost(node.cost_usd))} · "
            f'<span class="agc-status-{escape(str(node.status))}">{escape(status(node))}'
            f'</span> · <time class="agc-updated" datetime="{node.updated_at.isoformat()}" '
            f'title="{escape(ago(node.updated_at))} (when saved)">updated '
            f"{escape(full_time(node.updated_at))} UTC</time> "
            f'<code class="agc-meta">{escape(node.session_id)}</code></div>'
        )
    if not items:
        return '<div class="agc-status">no sessions yet</div>'
    return f'<div class="agc-tree">{"".join(items)}</div>'


def render_details(node: Any, status: str | None = None) -> str:
    """A session's fields as a small table."""
    parent = node.parent_id or "none (a root)"
    if getattr(node, "orphan", False):
        parent = f"{node.parent_id or '?'} (destroyed: this session is an orphan)"
    fields = (
        ("session", node.session_id),
        ("agent", node.agent_name),
        ("status", status or node_status(node)),
        ("parent", parent),
        ("children", str(len(node.children))),
        ("turns", str(node.turn_index)),
        ("tokens", format_tokens(node.total_tokens)),
        ("cost", format_cost(node.cost_usd)),
        ("created", f"{full_time(node.created_at)} UTC"),
        ("updated", f"{full_time(node.updated_at)} UTC ({ago(node.updated_at)})"),
    )
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in fields)
    return f'<table class="agc-table agc-details">{rows}</table>'

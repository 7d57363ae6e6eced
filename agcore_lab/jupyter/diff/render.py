"""HTML for slot diffs and merge previews; every piece of message text goes through ``escape``.

Message text comes from users and models: it is always shown as text, never as markup. The
functions here return HTML fragments; one message's cell is
:mod:`agcore_lab.jupyter.common.messages`, the CSS classes are in
:mod:`agcore_lab.jupyter.common.theme`.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from agcore_lab.agent.slot_diff import DiffRow, SlotDiff
from agcore_lab.agent.slot_ops import MergePreview
from agcore_lab.jupyter.common.messages import meta_html, render_message, text_html, tools_html
from agcore_lab.jupyter.common.text import plural

__all__ = ["MAX_PREVIEW_MESSAGES", "render_diff", "render_header", "render_preview", "render_row"]

MAX_PREVIEW_MESSAGES = 20


def _empty(kind: str) -> str:
    return f'<div class="agc-cell agc-empty" data-kind="{kind}"></div>'


def render_row(row: DiffRow) -> str:
    """The two cells of one diff row (an empty placeholder where a side has no message)."""
    changed = row.kind == "changed"
    tools_changed = changed and row.tool_calls_changed
    cells = []
    for message, index, segments in (
        (row.left, row.left_index, row.left_segments),
        (row.right, row.right_index, row.right_segments),
    ):
        if message is None:
            cells.append(_empty(row.kind))
        else:
            cells.append(
                render_message(
                    message,
                    index,
                    kind=row.kind,
                    segments=segments if changed else (),
                    tools_changed=tools_changed,
                )
            )
    return "".join(cells)


def _note(text: str, css: str) -> str:
    return f'<div class="agc-note {css}">{escape(text)}</div>'


def render_header(diff: SlotDiff, left_count: int, right_count: int) -> str:
    """One summary line above the grid: the two slots with their sizes, then only the row
    counts that are not zero (``no differences`` when the tails are equal)."""
    c = diff.counts
    parts = [f"{diff.fork_index} shared"] if diff.fork_index else []
    for count, label in (
        (c["changed"], "changed"),
        (c["right_only"], f"only in {diff.right_slot_id}"),
        (c["left_only"], f"only in {diff.left_slot_id}"),
        (c["equal"], "equal after the fork"),
    ):
        if count:
            parts.append(f"{count} {label}")
    if not any(c[k] for k in ("changed", "right_only", "left_only")):
        parts.append("no differences")
    return (
        f'<div class="agc-head agc-summary"><b>{escape(diff.left_slot_id)}</b> '
        f"({left_count} messages) ⟷ <b>{escape(diff.right_slot_id)}</b> "
        f"({right_count} messages) · {escape(' · '.join(parts))}</div>"
    )


def render_diff(
    diff: SlotDiff,
    rows: Sequence[DiffRow],
    *,
    hidden_shared: int = 0,
    hidden_earlier: int = 0,
) -> str:
    """The side-by-side grid.

    Args:
        diff: The diff (for the column names).
        rows: The rows to draw, oldest first.
        hidden_shared: Shared-prefix rows left out (drawn as one collapsed line).
        hidden_earlier: Further rows left out by the page limit.
    """
    parts = [
        f'<div class="agc-colhead">{escape(diff.left_slot_id)}</div>',
        f'<div class="agc-colhead">{escape(diff.right_slot_id)}</div>',
    ]
    if hidden_shared:
        parts.append(
            _note(
                f"▸ {plural(hidden_shared, 'shared message')} before the fork (collapsed)",
                "agc-fold",
            )
        )
    if hidden_earlier:
        parts.append(_note(f"… {plural(hidden_earlier, 'earlier row')} not shown", "agc-hidden"))
    parts.extend(render_row(row) for row in rows)
    if not rows and not hidden_shared and not hidden_earlier:
        parts.append(_note("both slots are empty", "agc-nothing"))
    elif not diff.tail:
        parts.append(_note("no differences after the fork", "agc-nothing"))
    return f'<div class="agc-grid">{"".join(parts)}</div>'


def render_preview(preview: MergePreview) -> str:
    """The merge confirmation: ``describe()`` and the incoming messages (the first 20)."""
    shown = preview.incoming[:MAX_PREVIEW_MESSAGES]
    items = "".join(
        f"<li>{meta_html(m, None)}<div class='agc-text'>"
        f"{text_html((('equal', m.text),) if m.text else ())}</div>{tools_html(m)}</li>"
        for m in shown
    )
    more = len(preview.incoming) - len(shown)
    tail = f"<div class='agc-more-text'>… and {more} more</div>" if more else ""
    label = {
        "append": "Messages to append",
        "replace": "The new history",
        "summarize": "Messages the model will condense",
    }[preview.strategy.value]
    listing = f"<div>{label}:</div><ol>{items}</ol>{tail}" if shown else ""
    return (
        f'<div class="agc-preview"><div class="agc-describe"><b>'
        f"{escape(preview.describe())}</b></div>{listing}</div>"
    )

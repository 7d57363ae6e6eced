"""HTML for slot diffs and merge previews; every piece of message text goes through ``escape``.

Message text comes from users and models: it is always shown as text, never as markup. The
functions here return HTML fragments; the CSS classes are defined in :mod:`._theme`.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from agcore_lab.agent.slot_diff import DiffRow, Segment, SlotDiff, tool_call_lines
from agcore_lab.agent.slot_ops import MergePreview
from agcore_lab.jupyter._common import plural
from agcore_lab.llm.messages import Message, ToolMessage

__all__ = [
    "COMPACT_CHARS",
    "MAX_TEXT_CHARS",
    "is_compact",
    "render_diff",
    "render_header",
    "render_preview",
]

# One message is cut after this many characters in the view (the data is never cut).
MAX_TEXT_CHARS = 4000
MAX_PREVIEW_MESSAGES = 20
# A message with one line of at most this many characters (and no tool calls, or only one short
# call and no text) is drawn compactly: role and text on one line.
COMPACT_CHARS = 120
_MARK = {"insert": "ins", "delete": "del"}


def _cut_segments(segments: Sequence[Segment], limit: int) -> tuple[list[Segment], int]:
    """Keep the first ``limit`` characters of the segments; return them and the rest's size."""
    kept: list[Segment] = []
    used = 0
    total = sum(len(text) for _, text in segments)
    for op, text in segments:
        if used >= limit:
            break
        piece = text[: limit - used]
        kept.append((op, piece))
        used += len(piece)
    return kept, total - used


def _text_html(segments: Sequence[Segment]) -> str:
    kept, rest = _cut_segments(segments, MAX_TEXT_CHARS)
    parts = []
    for op, text in kept:
        tag = _MARK.get(op)
        parts.append(f"<{tag}>{escape(text)}</{tag}>" if tag else escape(text))
    if rest:
        parts.append(f'<span class="agc-more-text"> … ({rest} more characters)</span>')
    return "".join(parts)


def _meta_bits(message: Message, index: int | None) -> str:
    role = escape(message.role)
    bits = [f'<span class="agc-role agc-role-{role}">{role}</span>']
    if index is not None:
        bits.append(f"#{index}")
    if isinstance(message, ToolMessage):
        name = f"{message.name} " if message.name else ""
        bits.append(escape(f"{name}→ {message.tool_call_id}"))
        if message.is_error:
            bits.append("<b>error</b>")
    return " ".join(bits)


def _meta_html(message: Message, index: int | None) -> str:
    return f'<div class="agc-meta">{_meta_bits(message, index)}</div>'


def is_compact(message: Message) -> bool:
    """Whether ``message`` is short enough for one line: role and text side by side."""
    calls = tool_call_lines(message)
    text = message.text
    if calls:
        return not text and len(calls) == 1 and len(calls[0]) <= COMPACT_CHARS
    return "\n" not in text and len(text) <= COMPACT_CHARS


def _tools_html(message: Message, *, changed: bool = False) -> str:
    """The message's tool calls, one ``⚙ name({...})`` line each (escaped); ``""`` if none."""
    calls = tool_call_lines(message)
    if not calls:
        return ""
    css = " agc-tools-changed" if changed else ""
    lines = "\n".join(f"⚙ {call}" for call in calls)
    return f'<div class="agc-tools{css}">{escape(lines)}</div>'


def render_message(
    message: Message,
    index: int | None,
    *,
    kind: str,
    segments: Sequence[Segment] = (),
    tools_changed: bool = False,
) -> str:
    """One message as a grid cell: role label, index, text (with word marks) and tool calls.

    A short message (:func:`is_compact`) takes one line: the role label, then its text or its
    one tool call.
    """
    text = segments if segments else ((("equal", message.text),) if message.text else ())
    body = _text_html(text)
    tools = _tools_html(message, changed=tools_changed)
    if is_compact(message):
        inline = tools.replace('<div class="agc-tools', '<span class="agc-tools', 1)
        inline = inline[: -len("</div>")] + "</span>" if inline else ""
        return (
            f'<div class="agc-cell agc-{kind}" data-kind="{kind}"><div class="agc-line">'
            f'<span class="agc-meta">{_meta_bits(message, index)}</span> '
            f'<span class="agc-text">{body}</span>{inline}</div></div>'
        )
    return (
        f'<div class="agc-cell agc-{kind}" data-kind="{kind}">'
        f'{_meta_html(message, index)}<div class="agc-text">{body}</div>{tools}</div>'
    )


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
        f"<li>{_meta_html(m, None)}<div class='agc-text'>"
        f"{_text_html((('equal', m.text),) if m.text else ())}</div>{_tools_html(m)}</li>"
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

"""One message as a cell: role label, index, text (with word marks) and tool calls.

Message text comes from users and models: every piece goes through ``escape``. Used by the diff
grid (:mod:`agcore_lab.jupyter.diff.render`) and by the turn behind an approval
(:mod:`agcore_lab.jupyter.approval.turn`); the CSS classes are in ``theme.css``.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from agcore_lab.agent.slot_diff import Segment, tool_call_lines
from agcore_lab.llm.messages import Message, ToolMessage

__all__ = [
    "COMPACT_CHARS",
    "MAX_TEXT_CHARS",
    "is_compact",
    "meta_html",
    "render_message",
    "text_html",
    "tools_html",
]

# One message is cut after this many characters in the view (the data is never cut).
MAX_TEXT_CHARS = 4000
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


def text_html(segments: Sequence[Segment]) -> str:
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


def meta_html(message: Message, index: int | None) -> str:
    return f'<div class="agc-meta">{_meta_bits(message, index)}</div>'


def is_compact(message: Message) -> bool:
    """Whether ``message`` is short enough for one line: role and text side by side."""
    calls = tool_call_lines(message)
    text = message.text
    if calls:
        return not text and len(calls) == 1 and len(calls[0]) <= COMPACT_CHARS
    return "\n" not in text and len(text) <= COMPACT_CHARS


def tools_html(message: Message, *, changed: bool = False) -> str:
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
    body = text_html(text)
    tools = tools_html(message, changed=tools_changed)
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
        f'{meta_html(message, index)}<div class="agc-text">{body}</div>{tools}</div>'
    )

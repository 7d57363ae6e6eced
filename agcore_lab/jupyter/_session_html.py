"""Text and HTML for the session views: checkpoint rows, previews, session details, memory.

Message text, labels, agent names and memory values come from users and models: everything
goes through :func:`html.escape` (or is used as widget option text, which is never markup).
Long values are cut for display only; the data is never cut.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any

from agcore_lab.jupyter.common.text import format_cost, format_tokens

__all__ = [
    "clip",
    "render_checkpoint_preview",
    "render_checkpoint_table",
    "render_memory",
    "render_messages",
    "short_time",
]

MAX_MESSAGE_CHARS = 300
MAX_VALUE_CHARS = 200
_COLUMNS = ("turn", "time (UTC)", "source", "label", "msgs", "tokens", "cost", "checkpoint")


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a marker saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def short_time(when: datetime) -> str:
    """``HH:MM:SS`` in UTC."""
    return when.strftime("%H:%M:%S")


def full_time(when: datetime) -> str:
    """``YYYY-MM-DD HH:MM:SS`` in UTC."""
    return when.strftime("%Y-%m-%d %H:%M:%S")


def render_checkpoint_table(metas: Sequence[Any], *, selected: str | None = None) -> str:
    """The checkpoints as an HTML table (newest first, as given); the selected row marked."""
    heads = "".join(f"<th>{escape(h)}</th>" for h in _COLUMNS)
    rows = []
    for meta in metas:
        css = ' class="agc-selected"' if meta.ckpt_id == selected else ""
        cells = (
            str(meta.turn_index),
            full_time(meta.created_at),
            meta.source,
            meta.label or "",
            str(meta.message_count),
            format_tokens(meta.total_tokens),
            format_cost(meta.cost_usd),
            meta.ckpt_id,
        )
        rows.append(
            f'<tr{css} data-ckpt="{escape(meta.ckpt_id)}">'
            + "".join(f"<td>{escape(c)}</td>" for c in cells)
            + "</tr>"
        )
    if not rows:
        rows.append(f'<tr><td colspan="{len(_COLUMNS)}">no checkpoints yet</td></tr>')
    return f'<table class="agc-table agc-ckpt-table"><tr>{heads}</tr>{"".join(rows)}</table>'


def render_messages(messages: Iterable[Any]) -> str:
    """Messages as a list: a role badge and the (escaped, cut) text of each."""
    items = []
    for message in messages:
        role = escape(str(message.role))
        text = getattr(message, "text", None) or getattr(message, "content", None) or ""
        calls = getattr(message, "tool_calls", None) or []
        if calls and not text:
            text = "calls " + ", ".join(str(getattr(c, "name", c)) for c in calls)
        items.append(
            f'<li><span class="agc-role agc-role-{role}">{role}</span> '
            f'<span class="agc-text">{escape(clip(str(text), MAX_MESSAGE_CHARS))}</span></li>'
        )
    if not items:
        return '<div class="agc-status">no messages</div>'
    return f'<ol class="agc-messages">{"".join(items)}</ol>'


def _value_text(value: Any) -> str:
    return clip(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str), MAX_VALUE_CHARS)


def render_memory(memory: Mapping[str, Any], *, limit: int = 50) -> str:
    """Memory entries (key → JSON value) as a two-column table; the first ``limit`` keys."""
    if not memory:
        return '<div class="agc-status">memory is empty</div>'
    keys = sorted(memory)
    rows = "".join(
        f"<tr><td><code>{escape(k)}</code></td>"
        f'<td class="agc-text">{escape(_value_text(memory[k]))}</td></tr>'
        for k in keys[:limit]
    )
    more = len(keys) - limit
    tail = f'<div class="agc-more-text">… and {more} more keys</div>' if more > 0 else ""
    return (
        f'<table class="agc-table agc-memory"><tr><th>key</th><th>value</th></tr>{rows}'
        f"</table>{tail}"
    )


def render_checkpoint_preview(preview: Any) -> str:
    """A checkpoint's state: when and what, its slots, the last messages and its memory."""
    meta = preview.meta
    label = f" · “{escape(meta.label)}”" if meta.label else ""
    slots = ", ".join(
        f"{'<b>' if sid == preview.current_slot_id else ''}{escape(sid)} ({count})"
        f"{'</b>' if sid == preview.current_slot_id else ''}"
        for sid, count in sorted(preview.slots.items())
    )
    return (
        f'<div class="agc-preview agc-ckpt-preview" data-ckpt="{escape(meta.ckpt_id)}">'
        f'<div class="agc-head"><b>turn {meta.turn_index}</b> · {escape(meta.source)}{label} · '
        f"{escape(full_time(meta.created_at))} UTC · agent {escape(meta.agent_name)} · "
        f"{format_tokens(meta.total_tokens)} tokens · {escape(format_cost(meta.cost_usd))}"
        f'<span class="agc-count"><code>{escape(meta.ckpt_id)}</code></span></div>'
        f'<div class="agc-meta">slots (messages; current in bold): {slots or "none"}</div>'
        f'<div class="agc-meta">last messages of {escape(preview.current_slot_id)}:</div>'
        f"{render_messages(preview.last_messages)}"
        f'<div class="agc-meta">memory:</div>{render_memory(preview.memory)}</div>'
    )

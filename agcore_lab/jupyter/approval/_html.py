"""HTML for pending tool calls and their outcomes; every value goes through ``escape``.

Tool arguments, results and replies come from models and users: they are shown as text (the
arguments as indented JSON), never as markup. :data:`APPROVAL_STYLE` adds the approval
panel's rules (``approval.css`` beside this module) to the shared theme
(:mod:`agcore_lab.jupyter.common.theme`), scoped under ``.agc-view`` like the rest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agcore_lab.ids import utcnow
from agcore_lab.jupyter.approval.ops import ApprovalOutcome, time_left
from agcore_lab.jupyter.common.history_parts import full_time
from agcore_lab.jupyter.common.text import badge

if TYPE_CHECKING:
    from agcore_lab.store.pending import PendingToolCall

__all__ = [
    "APPROVAL_STYLE",
    "arguments_json",
    "ran_arguments",
    "render_arguments",
    "render_call_head",
    "render_calls_table",
    "render_doubt",
    "render_outcome",
    "render_time_left",
    "render_warning",
]

MAX_ARGS_CHARS = 4000
INLINE_ARGS_CHARS = 100  # arguments whose one-line JSON is this short take one line

APPROVAL_STYLE = (
    "<style>" + (Path(__file__).parent / "approval.css").read_text(encoding="utf-8") + "</style>"
)


def arguments_json(arguments: object) -> str:
    """Arguments as indented JSON (the text the editor starts from)."""
    return json.dumps(arguments, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def _args_pre(arguments: Any, css: str = "agc-args") -> str:
    line = json.dumps(arguments, ensure_ascii=False, default=str)
    if len(line) <= INLINE_ARGS_CHARS:  # compact: short arguments on one line
        return f'<pre class="{css} agc-args-inline">{escape(line)}</pre>'
    text = arguments_json(arguments)
    if len(text) > MAX_ARGS_CHARS:
        text = text[:MAX_ARGS_CHARS] + f"\n… ({len(text) - MAX_ARGS_CHARS} more characters)"
    return f'<pre class="{css}">{escape(text)}</pre>'


def ran_arguments(call: PendingToolCall) -> dict[str, Any] | None:
    """The arguments a person approved instead of the model's (an edited approval), if any."""
    decision = call.decision or {}
    edited = decision.get("arguments") if decision.get("kind") == "approve" else None
    return edited if isinstance(edited, dict) and edited != call.tool_args else None


def render_arguments(call: PendingToolCall) -> str:
    """The call's arguments as escaped, indented JSON.

    After an edited approval the arguments that actually ran come first, labelled so, and the
    model's original ones follow, marked as not run.
    """
    edited = ran_arguments(call)
    if edited is None:
        return _args_pre(call.tool_args)
    ran = "ran with (edited)" if call.status == "EXECUTED" else "approved with (edited)"
    return (
        f'<div class="agc-meta agc-args-label">{ran}:</div>{_args_pre(edited)}'
        '<details class="agc-args-original"><summary class="agc-meta">the model asked for '
        f"(not run)</summary>{_args_pre(call.tool_args, 'agc-args agc-args-unused')}</details>"
    )


def render_call_head(call: PendingToolCall) -> str:
    """Tool, status, session, run and interrupt of one call (an in-doubt call is badged so)."""
    doubt = ' <span class="agc-badge agc-badge-doubt">in doubt</span>' if call.in_doubt else ""
    return (
        f'<div class="agc-call-head"><b class="agc-tool">{escape(call.tool_name)}</b> '
        f"{badge(call.status)}{doubt} · session <code>{escape(call.session_id)}</code> · "
        f'<span class="agc-meta">run {escape(call.run_id)} · interrupt '
        f"<code>{escape(call.interrupt_id)}</code> · "
        f'<span title="{full_time(call.created_at)} UTC">'
        f"asked {call.created_at:%H:%M:%S}</span>"
        "</span></div>"
    )


EXPIRING_SOON = 60.0
"""Seconds: a waiting call with less time left than this is flagged "expires soon"."""


def render_time_left(call: PendingToolCall, now: datetime | None = None) -> str:
    """Time left until expiry, refreshed by the panel's countdown; a call about to expire
    (under :data:`EXPIRING_SOON` seconds) is flagged."""
    if call.status not in ("PENDING_APPROVAL", "EXPIRED"):
        return ""
    left = time_left(call, now)
    css = "agc-time-left agc-expired" if left == "expired" else "agc-time-left"
    flag = ""
    if left != "expired" and call.expires_at is not None:
        remaining = (call.expires_at - (now or utcnow())).total_seconds()
        if remaining < EXPIRING_SOON:
            css += " agc-expiring"
            flag = "⚠ expires soon: "
    until = f" (at {full_time(call.expires_at)} UTC)" if call.expires_at is not None else ""
    return f'<span class="{css}">{escape(flag + left)}{escape(until)}</span>'


def render_warning(call: PendingToolCall) -> str:
    """The warning for a call restored by a rollback whose original already ran."""
    if not call.previously_executed:
        return ""
    original = call.previous_interrupt_id or "an earlier interrupt"
    return (
        '<div class="agc-warning">⚠ This call already ran once, before a rollback (as '
        f"{escape(original)}). Approving runs the tool again — you will be asked to confirm."
        "</div>"
    )


def render_doubt(call: PendingToolCall) -> str:
    """The line of an in-doubt call: its executor stopped while the tool ran, and who that was."""
    if not call.in_doubt:
        return ""
    who = escape(call.executor or "an unknown process")
    since = (
        f" (its lease ran out at {full_time(call.executor_expires_at)} UTC)"
        if call.executor_expires_at is not None
        else ""
    )
    return (
        '<div class="agc-doubt"><b>⚠ in doubt: its process stopped while the tool ran</b> · '
        f"run by <code>{who}</code>{since}. The tool may or may not have run: Settle it with "
        "what happened, or with an empty box to tell the model the outcome is unknown.</div>"
    )


def render_outcome(outcome: ApprovalOutcome | None) -> str:
    """How a decision ended: a line, then the tool's result and the turn's reply."""
    if outcome is None:
        return ""
    parts = [f'<div class="agc-outcome-line">{escape(outcome.title or outcome.text)}</div>']
    if outcome.tool_result is not None:
        parts.append(
            '<div class="agc-meta">tool result</div>'
            f'<pre class="agc-result">{escape(outcome.tool_result)}</pre>'
        )
    if outcome.reply is not None and outcome.waiting_again is None:
        parts.append(
            '<div class="agc-meta">reply</div>'
            f'<div class="agc-reply">{escape(outcome.reply) or "<i>(empty)</i>"}</div>'
        )
    if outcome.waiting_again is not None:
        parts.append(
            '<div class="agc-meta">the turn waits again for a decision: '
            f"{escape(outcome.waiting_again)}</div>"
        )
    return (
        f'<div class="agc-outcome agc-outcome-{escape(outcome.kind)}" '
        f'data-kind="{escape(outcome.kind)}">{"".join(parts)}</div>'
    )


def render_calls_table(
    calls: Sequence[PendingToolCall], outcomes: dict[str, ApprovalOutcome]
) -> str:
    """The calls as one table (the static fallback for nbviewer and exported HTML)."""
    if not calls:
        return '<div class="agc-status">no tool calls waiting for approval</div>'
    heads = "".join(
        f"<th>{h}</th>" for h in ("tool", "arguments", "session", "status", "time left", "outcome")
    )
    rows = []
    for call in calls:
        outcome = outcomes.get(call.interrupt_id)
        rows.append(
            f"<tr><td><b>{escape(call.tool_name)}</b></td><td>{render_arguments(call)}</td>"
            f"<td><code>{escape(call.session_id)}</code></td><td>{badge(call.status)}"
            f"{' in doubt' if call.in_doubt else ''}</td>"
            f"<td>{render_time_left(call)}</td>"
            f"<td>{escape(outcome.text) if outcome is not None else ''}</td></tr>"
        )
    return f'<table class="agc-table agc-calls"><tr>{heads}</tr>{"".join(rows)}</table>'

"""HTML for :class:`~agcore_lab.jupyter.calls.CallInspector`: list rows, request, diff.

Every text from a model or a user is escaped: the view shows it as text, always.
"""

from __future__ import annotations

import difflib
import html
import json
from collections.abc import Sequence
from pathlib import Path

from agcore_lab.llm.call_record import ModelCall
from agcore_lab.llm.messages import Message
from agcore_lab.llm.usage import format_cost

__all__ = [
    "CALL_CSS",
    "CALL_HEADER",
    "call_option",
    "previous_in_slot",
    "prompt_lines",
    "render_detail",
]

CALL_CSS = (Path(__file__).parent / "calls.css").read_text(encoding="utf-8")
CALL_HEADER = (
    f"{'turn':>4}  {'kind':<7} {'model':<16} {'tokens':>11} {'ms':>8} {'cost':>10}  status"
)
_LABELS = {
    "system_prompt": "system prompt",
    "summary": "injected summary",
    "pinned": "pinned",
    "injected": "injected",
}


def _status(call: ModelCall) -> str:
    if call.status == "error":
        return "error"
    if call.abandoned:
        return "abandoned"
    return "replayed" if call.replayed else "ok"


def call_option(call: ModelCall) -> str:
    """One line of the call list (monospace columns under :data:`CALL_HEADER`)."""
    tokens = f"{call.usage.prompt_tokens}+{call.usage.completion_tokens}"
    return (
        f"{call.turn_index:>4}  {call.kind:<7} {call.model[:16]:<16} {tokens:>11} "
        f"{call.latency_s * 1000:>8.1f} {format_cost(call.cost):>10}  {_status(call)}"
    )


def previous_in_slot(calls: Sequence[ModelCall], call: ModelCall) -> ModelCall | None:
    """The call before ``call`` in the same session and slot (and of the same kind)."""
    before = None
    for other in calls:
        if other.call_id == call.call_id:
            return before
        if (other.session_id, other.slot_id, other.kind) == (
            call.session_id,
            call.slot_id,
            call.kind,
        ):
            before = other
    return before


def _message_text(message: Message) -> str:
    text = message.text
    for tool_call in getattr(message, "tool_calls", ()):
        text += ("\n" if text else "") + f"-> {tool_call.name}({json.dumps(tool_call.arguments)})"
    return text


def prompt_lines(call: ModelCall) -> list[str]:
    """The request as text lines (role headers and content), for the diff."""
    lines: list[str] = []
    for message in call.request_messages:
        lines.append(f"## {message.role}")
        lines.extend(_message_text(message).splitlines() or [""])
    return lines


def _message_html(index: int, message: Message, label: str | None) -> str:
    badge = (
        f'<span class="agc-badge">{html.escape(_LABELS.get(label, label))}</span>' if label else ""
    )
    name = getattr(message, "name", None)
    who = f" ({html.escape(name)})" if isinstance(name, str) and name else ""
    injected = " agc-msg-injected" if label and label != "system_prompt" else ""
    return (
        f'<div class="agc-msg agc-msg-{message.role}{injected}" data-index="{index}">'
        f'<span class="agc-role">[{index}] {html.escape(message.role)}{who}</span>{badge}'
        f'<pre class="agc-text">{html.escape(_message_text(message))}</pre></div>'
    )


def _diff_html(call: ModelCall, previous: ModelCall | None) -> str:
    if previous is None:
        return '<div class="agc-status">No earlier call of this slot to compare with.</div>'
    rows = []
    for line in difflib.unified_diff(prompt_lines(previous), prompt_lines(call), lineterm="", n=1):
        if line.startswith(("---", "+++")):
            continue
        css = "agc-add" if line.startswith("+") else "agc-del" if line.startswith("-") else ""
        rows.append(f'<span class="{css}">{html.escape(line)}</span>' if css else html.escape(line))
    if not rows:
        return '<div class="agc-status">Same prompt as the previous call of this slot.</div>'
    return (
        f'<div class="agc-status">Prompt diff against {html.escape(previous.call_id)} '
        f"(the previous call of slot {html.escape(call.slot_id)}):</div>"
        f'<pre class="agc-diff">{"<br>".join(rows)}</pre>'
    )


def render_detail(call: ModelCall, previous: ModelCall | None) -> str:
    """The selected call: the request role by role beside the response, then the diff."""
    parts = [_message_html(i, m, call.injected.get(i)) for i, m in enumerate(call.request_messages)]
    if call.window_start:
        parts.insert(
            len(call.injected),
            f'<div class="agc-msg"><span class="agc-badge agc-badge-cut">focused window: '
            f"{call.window_start} earlier messages cut</span></div>",
        )
    tools = ", ".join(t.name for t in call.tools) or "none"
    if call.response is not None:
        answer = (
            f'<pre class="agc-text">{html.escape(_message_text(call.response))}</pre>'
            f'<div class="agc-status">finish: {html.escape(call.finish_reason or "?")}</div>'
        )
    else:
        answer = f'<div class="agc-call-error">{html.escape(call.error or "no response")}</div>'
    ttft = f" · first token {call.ttft_s * 1000:.1f} ms" if call.ttft_s is not None else ""
    meta = (
        f"<div><code>{html.escape(call.call_id)}</code></div>"
        f"<div>turn {call.turn_index} · {html.escape(call.kind)} · slot "
        f"{html.escape(call.slot_id)} · {html.escape(_status(call))}</div>"
        f"<div>model {html.escape(call.model)} · {call.usage.prompt_tokens} + "
        f"{call.usage.completion_tokens} tokens · {format_cost(call.cost)}</div>"
        f"<div>{call.latency_s * 1000:.1f} ms{ttft}</div>"
        f"<div>tools offered: {html.escape(tools)}</div>"
    )
    classes = "agc-call-cols" + (" agc-abandoned" if call.abandoned else "")
    return (
        f'<div class="{classes}"><div><b>Request as the model saw it</b>{"".join(parts)}</div>'
        f'<div><b>Response</b>{answer}<div class="agc-preview">{meta}</div></div></div>'
        f"{_diff_html(call, previous)}"
    )

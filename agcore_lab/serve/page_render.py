"""The approval page's HTML, rendered on the server with every value escaped.

The page has no build step and loads nothing from elsewhere: its CSS and script ship beside
this module (``page/``) and are inlined under a per-response nonce; the Content-Security-Policy
allows nothing else. Tool arguments, tool names and ids come from model output and users, so
they are always shown as text (``html.escape``), never as markup.
"""

from __future__ import annotations

import html
import json
import secrets
from functools import cache
from importlib import resources

from agcore_lab.ids import utcnow
from agcore_lab.store.pending import PendingToolCall

__all__ = ["csp", "login_page", "page", "rows"]


@cache
def _asset(name: str) -> str:
    return (resources.files("agcore_lab.serve") / "page" / name).read_text(encoding="utf-8")


def csp(nonce: str) -> str:
    """The Content-Security-Policy of a page rendered with ``nonce``."""
    return (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _row(call: PendingToolCall) -> str:
    args = json.dumps(call.tool_args, indent=2, ensure_ascii=False, sort_keys=True)
    if call.expires_at is None:
        left = '<td class="left">never</td>'
    else:
        seconds = max(0, round((call.expires_at - utcnow()).total_seconds()))
        left = f'<td class="left" data-expires="{_e(call.expires_at.isoformat())}">{seconds} s</td>'
    rerun = " (ran before a rollback)" if call.previously_executed else ""
    if call.in_doubt:
        return _in_doubt_row(call, args)
    return (
        f'<tr data-interrupt="{_e(call.interrupt_id)}" data-run="{_e(call.run_id)}" '
        f'data-session="{_e(call.session_id)}" data-tool="{_e(call.tool_name)}">'
        f"<td><strong>{_e(call.tool_name)}</strong>{_e(rerun)}<br>"
        f"<code>{_e(call.interrupt_id)}</code></td>"
        f'<td><pre class="args">{_e(args)}</pre></td>'
        f"<td><code>{_e(call.session_id)}</code></td>"
        f"{left}"
        '<td><div class="actions">'
        '<button type="button" class="approve" data-action="approve">Approve</button>'
        f'<textarea class="edit" rows="3" aria-label="edited arguments">{_e(args)}</textarea>'
        '<button type="button" data-action="edit">Approve edited</button>'
        '<input class="reason" type="text" maxlength="2000" placeholder="reason" '
        'aria-label="reason">'
        '<button type="button" class="reject" data-action="reject">Reject</button>'
        "</div></td></tr>"
    )


def _in_doubt_row(call: PendingToolCall, args: str) -> str:
    # Approved, but the process running it died: the tool may or may not have run.
    return (
        f'<tr class="in-doubt" data-interrupt="{_e(call.interrupt_id)}" '
        f'data-run="{_e(call.run_id)}" data-session="{_e(call.session_id)}" '
        f'data-tool="{_e(call.tool_name)}">'
        f"<td><strong>{_e(call.tool_name)}</strong> <em>in doubt</em><br>"
        f"<code>{_e(call.interrupt_id)}</code></td>"
        f'<td><pre class="args">{_e(args)}</pre></td>'
        f"<td><code>{_e(call.session_id)}</code></td>"
        f'<td class="left">ran by {_e(call.executor or "?")}, which stopped</td>'
        '<td><div class="actions">'
        '<input class="outcome" type="text" maxlength="20000" '
        'placeholder="what happened (empty: unknown)" aria-label="outcome">'
        '<button type="button" class="settle" data-action="settle">Settle</button>'
        "</div></td></tr>"
    )


def rows(calls: list[PendingToolCall]) -> str:
    """The table body: one row per call waiting for a decision."""
    if not calls:
        return '<tr><td colspan="5" class="empty">No calls are waiting for a decision.</td></tr>'
    return "".join(_row(c) for c in calls)


def _document(title: str, body: str, nonce: str, *, script: bool) -> str:
    js = f'<script nonce="{nonce}">{_asset("approve.js")}</script>' if script else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="referrer" content="no-referrer"><title>{_e(title)}</title>'
        f'<style nonce="{nonce}">{_asset("approve.css")}</style></head>'
        f"<body>{body}{js}</body></html>"
    )


def page(calls: list[PendingToolCall], *, poll_seconds: float, nonce: str) -> str:
    """The approval page listing ``calls``."""
    body = (
        f'<main id="agc-approve" data-poll="{poll_seconds:g}">'
        "<h1>agcore-lab: tool calls waiting for approval</h1>"
        f'<p class="sub">Refreshes every {poll_seconds:g} s. Approve runs the tool once; '
        "reject tells the model why.</p>"
        '<div id="status" role="status"></div>'
        "<table><thead><tr><th>tool</th><th>arguments</th><th>session</th><th>time left</th>"
        "<th>decision</th></tr></thead>"
        f'<tbody id="rows">{rows(calls)}</tbody></table></main>'
    )
    return _document("agcore-lab approvals", body, nonce, script=True)


def login_page(nonce: str, *, failed: bool = False) -> str:
    """The login form (the token goes in a POST body, never in a URL)."""
    note = '<p class="sub" role="alert">That token is not valid.</p>' if failed else ""
    body = (
        "<main><h1>agcore-lab approvals</h1>"
        '<p class="sub">Enter the service token to see and decide pending tool calls.</p>'
        f"{note}"
        '<form class="login" method="post" action="login">'
        '<input type="password" name="token" autocomplete="current-password" '
        'aria-label="token" placeholder="token" required>'
        '<button type="submit">Log in</button></form></main>'
    )
    return _document("agcore-lab login", body, nonce, script=False)


def new_nonce() -> str:
    """A fresh nonce for one response."""
    return secrets.token_urlsafe(16)

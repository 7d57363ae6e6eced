"""``CallInspector``: a session's model calls, and for one of them what the model saw.

A thin view over the public API: the list is ``manager.model_calls(session_id)``; the selected
call's request is shown role by role — the parts the engine injected (system prompt, summary,
pinned messages) marked, a Focused window's cut noted — beside the response, with a diff of
the prompt against the previous call of the same slot. The view follows the manager's events
(a finished turn, a rollback) and the calls as they happen (``RuntimeBundle.call_listeners``),
so it updates live during a turn.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter.calls._html import (
    CALL_CSS,
    CALL_HEADER,
    call_option,
    previous_in_slot,
    render_detail,
)
from agcore_lab.jupyter.common.theme import style_tag
from agcore_lab.jupyter.common.view import ManagerView
from agcore_lab.llm.call_record import ModelCall
from agcore_lab.llm.usage import format_cost

if TYPE_CHECKING:
    from agcore_lab.engine.manager import SessionManager

__all__ = ["CallInspector"]


class CallInspector(ManagerView):
    """The model calls of one session: a list, and the selected call's request and response.

    The list shows, newest first, each call's turn, kind (``turn`` or ``summary``), model,
    tokens (prompt + completion), latency, cost and status (``ok``, ``error``, ``abandoned`` —
    on a branch a rollback left — or ``replayed``); it is paged (``page_size`` rows). Until you
    pick one, the newest call is shown, so during a turn the view follows the model.

    Args:
        manager: The session manager.
        session_id: The session to show.
        page_size: Rows per page of the list.

    Raises:
        SessionNotFoundError: The session is not in the manager's store.

    Example:
        >>> from agcore_lab import Agent, ScriptedModel, SessionManager
        >>> manager = SessionManager()
        >>> agent = Agent(name="w", system_prompt="Be brief.", model=ScriptedModel())
        >>> sid = manager.create_sync(agent)
        >>> _ = manager.submit_turn_sync(sid, "hello")
        >>> inspector = CallInspector(manager, sid)
        >>> [c.turn_index for c in inspector.calls]
        [1]
        >>> inspector.shown.request_messages[0].text
        'Be brief.'
        >>> inspector.close()
    """

    def __init__(self, manager: SessionManager, session_id: str, *, page_size: int = 50) -> None:
        manager.require_stored(session_id)
        super().__init__(manager, page_size=page_size, prev_label="◀ Newer", next_label="Older ▶")
        self.session_id = session_id
        self.calls: list[ModelCall] = []  # oldest first
        self._stored: list[ModelCall] = []
        self._inflight: list[ModelCall] = []
        self.selected: str | None = None
        self.style_html.value = style_tag() + f"<style>{CALL_CSS}</style>"
        self.columns_html = widgets.HTML(
            f'<pre class="agc-columns">{html.escape(CALL_HEADER)}</pre>'
        )
        self.call_select = widgets.Select(options=[], rows=8, layout=widgets.Layout(width="100%"))
        self.call_select.add_class("agc-call-list")
        self.latest_button = widgets.Button(description="Follow latest", tooltip="Show the newest")
        self.detail_html = widgets.HTML()
        self.detail_html.add_class("agc-call-detail")
        controls = widgets.HBox(
            [
                self.prev_button,
                self.page_html,
                self.next_button,
                self.refresh_button,
                self.latest_button,
            ],
            layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
        )
        self.children = [
            self.style_html,
            self.header_html,
            self.columns_html,
            self.call_select,
            controls,
            self.status_html,
            self.error_html,
            self.detail_html,
        ]
        self.add_class("agc-calls")
        self.call_select.observe(self._picked, names="value")
        self.latest_button.on_click(lambda _: self.select(None))
        self._listeners = manager.bundle.call_listeners
        self._listeners.append(self._on_call)
        self._loader(self._load, self._loaded)
        self._start()

    # -- loading ------------------------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        if event.kind == "missed" or self.session_id in (event.session_id, event.new_session_id):
            self.refresh()

    def _on_call(self, call: ModelCall) -> None:
        # Called on the engine's thread as each call ends, before the turn commits: keep the
        # call in memory and re-render in the background (never on the turn's path).
        if call.session_id != self.session_id:
            return
        with self._lock:
            self._inflight.append(call)
        self.refresh()

    async def _load(self) -> list[ModelCall]:
        return await self.manager.model_calls(self.session_id)

    def _loaded(self, calls: list[ModelCall]) -> None:
        with self._lock:
            self._stored = calls
            stored = {c.call_id for c in calls}
            self._inflight = [c for c in self._inflight if c.call_id not in stored]
            self.calls = calls + self._inflight
            if self.selected is not None and self.selected not in {c.call_id for c in self.calls}:
                self.selected = None
            self._render()

    # -- selection ----------------------------------------------------------------------------

    def _picked(self, change: dict[str, Any]) -> None:
        if not self._quiet and change["new"] is not None:
            self.select(change["new"])

    def select(self, call_id: str | None) -> None:
        """Show the call ``call_id``; ``None`` follows the newest call.

        Raises:
            InvalidInputError: No such call in this session.
        """
        with self._lock:
            if call_id is not None and call_id not in {c.call_id for c in self.calls}:
                raise InvalidInputError(
                    f"no call {call_id!r} in session {self.session_id}",
                    session_id=self.session_id,
                )
            self.selected = call_id
            if call_id is not None:
                newest_first = [c.call_id for c in reversed(self.calls)]
                self.page = newest_first.index(call_id) // self.page_size
            self._render()

    @property
    def shown(self) -> ModelCall | None:
        """The call whose request is shown (the selected one, or the newest)."""
        if self.selected is not None:
            return next((c for c in self.calls if c.call_id == self.selected), None)
        return self.calls[-1] if self.calls else None

    # -- what is shown ------------------------------------------------------------------------

    def _row_count(self) -> int:
        return len(self.calls)

    def page_calls(self) -> list[ModelCall]:
        """The calls on the current page, newest first."""
        newest_first = list(reversed(self.calls))
        start = self.page * self.page_size
        return newest_first[start : start + self.page_size]

    def _header(self) -> str:
        tokens = sum(c.total_tokens for c in self.calls)
        cost = sum(c.cost for c in self.calls)
        errors = sum(1 for c in self.calls if c.status == "error")
        failed = f" · {errors} failed" if errors else ""
        return (
            f'<div class="agc-head"><b>Model calls</b> of <code>'
            f"{html.escape(self.session_id)}</code> · {tokens} tokens · {format_cost(cost)}{failed}"
            f'<span class="agc-count">{len(self.calls)} calls</span></div>'
        )

    def _render(self) -> None:
        with self._lock:
            self._render_paging()
            rows = self.page_calls()
            shown = self.shown
            self._quiet = True
            try:
                self.call_select.options = [(call_option(c), c.call_id) for c in rows]
                self.call_select.rows = max(3, min(10, len(rows)))
                on_page = shown is not None and any(c.call_id == shown.call_id for c in rows)
                self.call_select.value = shown.call_id if on_page and shown else None
            finally:
                self._quiet = False
            self.header_html.value = self._header()
            self.latest_button.disabled = self.selected is None
            if shown is None:
                self.detail_html.value = (
                    '<div class="agc-status">No model calls recorded in this session yet.</div>'
                )
            else:
                previous = previous_in_slot(self.calls, shown)
                self.detail_html.value = render_detail(shown, previous)

    def close(self) -> None:
        """Stop following the manager and the calls, and close the widget."""
        listeners = getattr(self, "_listeners", None)
        if listeners is not None and self._on_call in listeners:
            listeners.remove(self._on_call)
        super().close()

    def __repr__(self) -> str:
        return f"CallInspector({self.session_id!r}, {len(self.calls)} calls)"

    def _repr_html_(self) -> str:
        # Static fallback for nbviewer / exported HTML.
        shown = self.shown
        detail = "" if shown is None else render_detail(shown, previous_in_slot(self.calls, shown))
        rows = "".join(
            f"<div><code>{html.escape(call_option(c))}</code></div>" for c in self.page_calls()
        )
        return (
            f'{style_tag()}<style>{CALL_CSS}</style><div class="agc-view agc-calls">'
            f'{self._header()}{rows}<div class="agc-call-detail">{detail}</div></div>'
        )

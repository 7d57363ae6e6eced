"""``CheckpointTimeline``: a session's checkpoints over time, with preview, rollback and fork.

A thin view over the public API: the list is ``manager.checkpointer.list_checkpoints``, the
preview ``checkpointer.preview``, the actions ``checkpointer.rollback`` and
``checkpointer.fork``. Every button has a method a user can call in a cell
(:meth:`CheckpointTimeline.select`, :meth:`~CheckpointTimeline.ask_rollback`,
:meth:`~CheckpointTimeline.ask_fork`, :meth:`~CheckpointTimeline.confirm`,
:meth:`~CheckpointTimeline.cancel`, :meth:`~CheckpointTimeline.refresh`). The view follows the
manager's events, so it updates as turns arrive; :meth:`~CheckpointTimeline.close` stops that.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter._confirm import button
from agcore_lab.jupyter._history_svg import history_svg
from agcore_lab.jupyter._manager import live_session
from agcore_lab.jupyter._session_html import (
    CHECKPOINT_HEADER,
    checkpoint_option,
    full_time,
    render_checkpoint_preview,
    render_checkpoint_table,
)
from agcore_lab.jupyter._svg import PlotPoint, cumulative_plot, format_cost, format_tokens
from agcore_lab.jupyter._tasks import BackgroundTask
from agcore_lab.jupyter._theme import style_tag
from agcore_lab.jupyter._view import ManagerView

if TYPE_CHECKING:
    from agcore_lab.engine.manager import SessionManager

__all__ = ["CheckpointTimeline"]

MAX_FORKS = 50  # child sessions looked at for fork links


@dataclass
class _Loaded:
    checkpoints: list[Any] = field(default_factory=list)  # CkptMeta, newest first
    live: bool = False
    turn_index: int | None = None
    agent_name: str | None = None
    cost_usd: float | None = None
    gone: bool = False
    forks: dict[str, list[str]] = field(default_factory=dict)  # ckpt id -> child sessions


def _went_to(meta: Any, turns: dict[str, int]) -> str | None:
    """A rollback's label: where it went (``↩ to turn 1``); ``None`` keeps the stored one."""
    if meta.source != "rollback" or meta.parent_ckpt_id not in turns:
        return None
    return f"↩ to turn {turns[meta.parent_ckpt_id]}"


class CheckpointTimeline(ManagerView):
    """One session's checkpoints: a plot of cumulative tokens and cost, a list, a preview.

    The list shows, newest first, each checkpoint's turn, time (UTC), source (``auto`` after a
    turn, ``manual``, ``rollback``, ``fork``), label, message count, tokens and cost; long
    histories are paged (``page_size`` rows). Selecting one shows its state — the slots, the
    last messages of the current slot and the memory. **Rollback** and **Fork** ask first:
    **Confirm** runs ``checkpointer.rollback(session_id, ckpt_id)`` (the live session returns
    to that state; a ``rollback`` checkpoint records it) or ``checkpointer.fork(session_id,
    ckpt_id)`` (a new child session starts there; this one is untouched) on agcore_lab's
    background loop; **Cancel** changes nothing. The manager's events then refresh this
    timeline and any open :class:`~agcore_lab.jupyter.SessionTreeBrowser`.

    Args:
        manager: The session manager.
        session_id: The session to show.
        page_size: Rows per page of the list.

    Raises:
        SessionNotFoundError: The session is not in the manager's store.

    Example:
        >>> from agcore_lab import Agent, ScriptedModel, SessionManager
        >>> manager = SessionManager()
        >>> sid = manager.create_sync(Agent(name="writer", model=ScriptedModel()))
        >>> for text in ("one", "two", "three"):
        ...     _ = manager.submit_turn_sync(sid, text)
        >>> timeline = CheckpointTimeline(manager, sid)
        >>> [c.turn_index for c in timeline.checkpoints]  # newest first; 0 is the start
        [3, 2, 1, 0]
        >>> timeline.select(timeline.checkpoints[2].ckpt_id)
        >>> timeline.ask_rollback()
        >>> timeline.confirm().wait(10), timeline.wait(10)
        (True, True)
        >>> timeline.turn_index, timeline.checkpoints[0].source
        (1, 'rollback')
        >>> timeline.close()

    Notes:
        Manager events arrive on the thread that made the change; the view only schedules a
        reload from them. ``timeline.wait()`` blocks until pending loads and actions are done.
    """

    def __init__(self, manager: SessionManager, session_id: str, *, page_size: int = 50) -> None:
        manager.require_stored(session_id)
        super().__init__(manager, page_size=page_size, prev_label="◀ Newer", next_label="Older ▶")
        self.session_id = session_id
        self.checkpoints: list[Any] = []
        self.live = False
        self.turn_index: int | None = None
        self.agent_name: str | None = None
        self._cost: float | None = None
        self.selected: str | None = None
        self.preview: Any = None
        self.last_fork: str | None = None
        self.forks: dict[str, list[str]] = {}
        self.gone = False  # the session was destroyed
        self._last_agent: str | None = None

        self.history_html = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.plot_html = widgets.HTML()
        self.columns_html = widgets.HTML(
            f'<pre class="agc-columns">{html.escape(CHECKPOINT_HEADER)}</pre>'
        )
        self.ckpt_select = widgets.Select(options=[], rows=8, layout=widgets.Layout(width="100%"))
        self.ckpt_select.add_class("agc-ckpt-list")
        self.rollback_button = button("Rollback", style="danger", tooltip="Return to this state")
        self.fork_button = button("Fork", style="primary", tooltip="New session from here")
        self.preview_html = widgets.HTML()
        controls = widgets.HBox(
            [
                self.prev_button,
                self.page_html,
                self.next_button,
                self.refresh_button,
                self.rollback_button,
                self.fork_button,
            ],
            layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
        )
        self.children = [
            self.style_html,
            self.header_html,
            self.history_html,
            self.plot_html,
            self.columns_html,
            self.ckpt_select,
            controls,
            self.confirm_bar,
            self.status_html,
            self.error_html,
            self.preview_html,
        ]
        self.add_class("agc-timeline")
        self.ckpt_select.observe(self._picked, names="value")
        self.rollback_button.on_click(lambda _: self.ask_rollback())
        self.fork_button.on_click(lambda _: self.ask_fork())
        self._loader(self._load, self._loaded)
        self._preview_loader = self._loader(self._load_preview, self._preview_done)
        self._start()

    # -- loading ------------------------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        # Called on the thread that changed the manager: schedule, never block.
        if self.session_id in (event.session_id, event.new_session_id):
            self.refresh()

    async def _load(self) -> _Loaded:
        if self.manager.store.get_session(self.session_id) is None:
            return _Loaded(gone=True)
        checkpoints = await self.manager.checkpointer.list_checkpoints(self.session_id)
        forks = await self._forks()
        session = await live_session(self.manager, self.session_id)
        if session is not None:
            return _Loaded(
                checkpoints,
                live=True,
                turn_index=session.turn_index,
                agent_name=session.agent.name,
                cost_usd=session.cost_so_far,
                forks=forks,
            )
        newest = checkpoints[0] if checkpoints else None
        return _Loaded(
            checkpoints,
            turn_index=newest.turn_index if newest else None,
            agent_name=newest.agent_name if newest else None,
            cost_usd=newest.cost_usd if newest else None,
            forks=forks,
        )

    async def _forks(self) -> dict[str, list[str]]:
        # Child sessions forked from a checkpoint here start with a "fork" checkpoint whose
        # parent is that checkpoint (the first MAX_FORKS children are looked at).
        forks: dict[str, list[str]] = {}
        for child in (await self.manager.children(self.session_id))[:MAX_FORKS]:
            history = await self.manager.checkpointer.list_checkpoints(child)
            first = history[-1] if history else None
            if first is not None and first.source == "fork" and first.parent_ckpt_id:
                forks.setdefault(first.parent_ckpt_id, []).append(child)
        return forks

    def _loaded(self, loaded: _Loaded) -> None:
        with self._lock:
            self.checkpoints = loaded.checkpoints
            self.live, self.turn_index = loaded.live, loaded.turn_index
            self.agent_name, self._cost = loaded.agent_name, loaded.cost_usd
            self.forks = loaded.forks
            if loaded.gone:
                self.gone = True
                self.agent_name = self.agent_name or self._last_agent
                if self.confirm_bar.dismiss():
                    self.set_status("The session was destroyed: the question was withdrawn.")
            else:
                self.gone = False
                self._last_agent = loaded.agent_name
            ids = [c.ckpt_id for c in self.checkpoints]
            if self.selected is not None and self.selected not in ids:
                self.selected, self.preview = None, None
                self.preview_html.value = ""
            if self.selected is not None:
                self.page = ids.index(self.selected) // self.page_size
            self._render()

    async def _load_preview(self) -> Any:
        ckpt = self.selected
        return None if ckpt is None else await self.manager.checkpointer.preview(ckpt)

    def _preview_done(self, preview: Any) -> None:
        with self._lock:
            if preview is None or preview.meta.ckpt_id != self.selected:
                return
            self.preview = preview
            self.preview_html.value = render_checkpoint_preview(preview)

    # -- what is shown ------------------------------------------------------------------------

    def _row_count(self) -> int:
        return len(self.checkpoints)

    def page_checkpoints(self) -> list[Any]:
        """The checkpoints on the current page, newest first."""
        start = self.page * self.page_size
        return self.checkpoints[start : start + self.page_size]

    def _points(self) -> list[PlotPoint]:
        return [
            PlotPoint(
                key=c.ckpt_id,
                turn=c.turn_index,
                tokens=c.total_tokens,
                cost=c.cost_usd,
                source=c.source,
                tooltip=(
                    f"turn {c.turn_index} · {c.source}{' · ' + c.label if c.label else ''} · "
                    f"{full_time(c.created_at)} UTC · {format_tokens(c.total_tokens)} tokens · "
                    f"{format_cost(c.cost_usd)}"
                ),
            )
            for c in reversed(self.checkpoints)
        ]

    def _header(self) -> str:
        if self.gone:
            return (
                f'<div class="agc-head agc-gone"><b>Gone:</b> session <code>'
                f"{html.escape(self.session_id)}</code> was destroyed — its checkpoints are "
                "deleted; nothing here can be rolled back or forked.</div>"
            )
        state = "live" if self.live else "stored"
        turn = "?" if self.turn_index is None else str(self.turn_index)
        cost = "" if self._cost is None else f" · {format_cost(self._cost)}"
        return (
            f'<div class="agc-head"><b>Checkpoints</b> of <code>{html.escape(self.session_id)}'
            f"</code> · agent {html.escape(self.agent_name or '?')} · "
            f'<span class="agc-turn">turn {turn}</span>{html.escape(cost)} · {state}'
            f'<span class="agc-count">{len(self.checkpoints)} checkpoints</span></div>'
        )

    def _render(self) -> None:
        with self._lock:
            self._render_paging()
            rows = self.page_checkpoints()
            self._quiet = True
            try:
                turns = {c.ckpt_id: c.turn_index for c in self.checkpoints}
                self.ckpt_select.options = [
                    (checkpoint_option(c, _went_to(c, turns)), c.ckpt_id) for c in rows
                ]
                self.ckpt_select.rows = max(3, min(10, len(rows)))
                on_page = any(c.ckpt_id == self.selected for c in rows)
                self.ckpt_select.value = self.selected if on_page else None
            finally:
                self._quiet = False
            self.header_html.value = self._header()
            self.plot_html.value = (
                "" if self.gone else cumulative_plot(self._points(), selected=self.selected)
            )
            self.history_html.value = (
                ""
                if self.gone
                else history_svg(self.checkpoints, forks=self.forks, selected=self.selected)
            )
            shown = "none" if self.gone else None
            self.columns_html.layout.display = shown
            self.ckpt_select.layout.display = shown
            for b in (self.rollback_button, self.fork_button):
                b.disabled = self.selected is None or self._acting or self.gone
            self.refresh_button.disabled = self.gone

    def _picked(self, change: Any) -> None:
        with self._lock:
            if self._quiet or change["new"] is None:
                return
        self.select(change["new"])

    def select(self, ckpt_id: str | None) -> None:
        """Select a checkpoint (its page is shown) and load its state preview."""
        with self._lock:
            ids = [c.ckpt_id for c in self.checkpoints]
            if ckpt_id is not None and ckpt_id not in ids:
                self.show_error(InvalidInputError(f"no checkpoint {ckpt_id!r} in this timeline"))
                return
            self.selected, self.preview = ckpt_id, None
            self.preview_html.value = ""
            if ckpt_id is not None:
                self.page = ids.index(ckpt_id) // self.page_size
            self._render()
        self._preview_loader.request()

    def selected_meta(self) -> Any:
        """The selected checkpoint's ``CkptMeta``, or ``None``."""
        return next((c for c in self.checkpoints if c.ckpt_id == self.selected), None)

    # -- rollback and fork --------------------------------------------------------------------

    def _target(self, ckpt_id: str | None) -> Any:
        if self.gone:
            self.show_error(
                InvalidInputError(f"session {self.session_id} was destroyed; nothing to act on")
            )
            return None
        if ckpt_id is not None:
            self.select(ckpt_id)
        meta = self.selected_meta()
        if meta is None:
            self.show_error(InvalidInputError("select a checkpoint first"))
        return meta

    def ask_rollback(self, ckpt_id: str | None = None) -> None:
        """Ask before rolling the session back to ``ckpt_id`` (default: the selected one)."""
        meta = self._target(ckpt_id)
        if meta is None:
            return
        self.confirm_bar.ask(
            f"Roll session {self.session_id} back to turn {meta.turn_index} "
            f"(checkpoint {meta.ckpt_id}, {meta.source})? Its slots, messages, memory, cost and "
            "turn index return to that state; a 'rollback' checkpoint records it, and later "
            "checkpoints stay in the list.",
            lambda: self._run("rollback", meta),
            action="rollback",
            confirm_label="Confirm rollback",
            on_cancel=lambda: self.set_status("Rollback cancelled; nothing changed."),
        )
        self.set_status("Confirm or Cancel.")

    def ask_fork(self, ckpt_id: str | None = None) -> None:
        """Ask before forking a new session from ``ckpt_id`` (default: the selected one)."""
        meta = self._target(ckpt_id)
        if meta is None:
            return
        self.confirm_bar.ask(
            f"Fork a new child session of {self.session_id} from turn {meta.turn_index} "
            f"(checkpoint {meta.ckpt_id})? This session stays as it is.",
            lambda: self._run("fork", meta),
            action="fork",
            confirm_label="Confirm fork",
            on_cancel=lambda: self.set_status("Fork cancelled; nothing changed."),
        )
        self.set_status("Confirm or Cancel.")

    def confirm(self) -> BackgroundTask[Any] | None:
        """Run the action asked about (rollback or fork); returns its task."""
        return self.confirm_bar.confirm()  # type: ignore[return-value]

    def cancel(self) -> None:
        """Close the question; nothing changes."""
        self.confirm_bar.cancel()

    def _run(self, action: str, meta: Any) -> BackgroundTask[Any] | None:
        checkpointer = self.manager.checkpointer
        if action == "rollback":

            def rolled_back(recorded: str) -> None:
                self.set_status(
                    f"Rolled back to turn {meta.turn_index} ({meta.ckpt_id}); "
                    f"recorded as checkpoint {recorded}."
                )

            return self._act(
                checkpointer.rollback(self.session_id, meta.ckpt_id),
                f"Rolling back to turn {meta.turn_index}",
                rolled_back,
            )

        def forked(child: str) -> None:
            self.last_fork = child
            self.set_status(f"Forked turn {meta.turn_index} into session {child}.")

        return self._act(
            checkpointer.fork(self.session_id, meta.ckpt_id),
            f"Forking from turn {meta.turn_index}",
            forked,
        )

    # -- lifetime and reprs -------------------------------------------------------------------

    def __repr__(self) -> str:
        return (
            f"CheckpointTimeline({self.session_id!r}, {len(self.checkpoints)} checkpoints, "
            f"turn={self.turn_index}, selected={self.selected!r})"
        )

    def _repr_html_(self) -> str:
        # Static snapshot for saved notebooks, nbviewer, GitHub and exported HTML: header,
        # table, preview. No SVG: sanitizers strip it to a jumble of its text.
        table = render_checkpoint_table(self.page_checkpoints(), selected=self.selected)
        return (
            f'{style_tag()}<div class="agc-view">{self._header()}'
            f"{table}"
            f"{self.preview_html.value}</div>"
        )

"""``CheckpointTimeline``: a session's checkpoint history as a branching graph and a table,
with preview, rollback, fork and each turn's model calls.

A thin view over the public API: the history is ``manager.checkpointer.list_checkpoints``, the
preview ``checkpointer.preview``, the actions ``checkpointer.rollback`` and
``checkpointer.fork``, the calls ``manager.model_calls``. Every button has a method a user can
call in a cell (:meth:`CheckpointTimeline.select`, :meth:`~CheckpointTimeline.sort`,
:meth:`~CheckpointTimeline.set_axis`, :meth:`~CheckpointTimeline.brush_range`,
:meth:`~CheckpointTimeline.ask_rollback`, :meth:`~CheckpointTimeline.ask_fork`,
:meth:`~CheckpointTimeline.confirm`, :meth:`~CheckpointTimeline.open_call`, ...). The view
follows the manager's events, so it updates as turns arrive; :meth:`~CheckpointTimeline.close`
stops that.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter._confirm import button
from agcore_lab.jupyter._manager import live_session
from agcore_lab.jupyter._session_html import render_checkpoint_preview, render_checkpoint_table
from agcore_lab.jupyter.common.text import format_cost, plural
from agcore_lab.jupyter.common.theme import style_tag
from agcore_lab.jupyter.common.view import ManagerView
from agcore_lab.jupyter.history.actions import HistoryActions
from agcore_lab.jupyter.history.calls import CallCounts, TurnCalls, call_row, calls_of
from agcore_lab.jupyter.history.controls import HistoryControls
from agcore_lab.jupyter.history.graph import HistoryGraph
from agcore_lab.jupyter.history.lanes import graph_data
from agcore_lab.jupyter.history.loading import CheckpointReader

if TYPE_CHECKING:
    from agcore_lab.engine.manager import SessionManager
    from agcore_lab.jupyter.calls import CallInspector
    from agcore_lab.llm.call_record import ModelCall

__all__ = ["CheckpointTimeline"]

MAX_FORKS = 50  # child sessions looked at for fork links


@dataclass
class _Loaded:
    checkpoints: list[Any] = field(default_factory=list)  # CkptMeta, newest first
    data: dict[str, Any] = field(default_factory=dict)
    live: bool = False
    turn_index: int | None = None
    agent_name: str | None = None
    cost_usd: float | None = None
    gone: bool = False
    forks: dict[str, list[str]] = field(default_factory=dict)  # ckpt id -> child sessions
    calls: dict[str, int] = field(default_factory=dict)  # ckpt id -> model calls


class CheckpointTimeline(HistoryControls, TurnCalls, HistoryActions, ManagerView):
    """One session's checkpoints: a branching history graph, a sortable table, a preview.

    The graph (git-graph style, drawn on a canvas so 10,000 checkpoints stay smooth) has one
    row per branch: a rollback starts a new branch at the turn it went back to, a fork (a
    child session started here) is a diamond naming the child. The x axis is the turn or the
    time (:meth:`set_axis`); hover a dot for its details, drag across the graph to brush a
    range (the graph zooms to it and the table keeps the checkpoints inside it,
    :meth:`brush_range`), turn the wheel to zoom, shift-drag to pan, **Reset** to see it all
    (:meth:`reset_zoom`). The table below lists turn, time (UTC), slot, source, label
    (a rollback's says where it went: ``↩ to turn 1``), messages, tokens, cost and model
    calls, newest first; click a column head to sort (:meth:`sort`). Selecting a checkpoint
    (a dot or a row, :meth:`select`) shows its state — slots, last messages, memory — and the
    model calls that led to it, each with an **Inspect** button that opens a
    :class:`~agcore_lab.jupyter.CallInspector` at that call (:meth:`open_call`).

    **Rollback** and **Fork** ask first: **Confirm** runs ``checkpointer.rollback(session_id,
    ckpt_id)`` (the live session returns to that state; a ``rollback`` checkpoint records it)
    or ``checkpointer.fork(session_id, ckpt_id)`` (a new child session starts there; this one
    is untouched) on agcore_lab's background loop; **Cancel** changes nothing. The manager's
    events then refresh this timeline and any open :class:`~agcore_lab.jupyter.SessionTreeBrowser`.
    A destroyed session's timeline says so and disables both.

    Args:
        manager: The session manager.
        session_id: The session to show.
        page_size: Rows of the table in the static HTML snapshot (saved notebooks, nbviewer).
        on_open_call: Called with the ``ModelCall`` when a call's Inspect is clicked, instead
            of opening a ``CallInspector`` in the timeline (under its buttons).

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
        >>> timeline.wait(10), [c.turn_index for c in timeline.selected_calls]
        (True, [1])
        >>> timeline.ask_rollback()
        >>> timeline.confirm().wait(10), timeline.wait(10)
        (True, True)
        >>> timeline.turn_index, timeline.checkpoints[0].source
        (1, 'rollback')
        >>> timeline.close()

    Notes:
        Manager events arrive on the thread that made the change; the view only schedules a
        reload from them. ``timeline.wait()`` blocks until pending loads and actions are done.
        Call counts are read once per checkpoint (they never change after it is written).
    """

    def __init__(
        self,
        manager: SessionManager,
        session_id: str,
        *,
        page_size: int = 50,
        on_open_call: Callable[[ModelCall], object] | None = None,
    ) -> None:
        manager.require_stored(session_id)
        super().__init__(manager, page_size=page_size, prev_label="◀ Newer", next_label="Older ▶")
        self.session_id = session_id
        self.on_open_call = on_open_call
        self.checkpoints: list[Any] = []  # newest first
        self.data: dict[str, Any] = {}
        self.live = False
        self.turn_index: int | None = None
        self.agent_name: str | None = None
        self._cost: float | None = None
        self.selected: str | None = None
        self.preview: Any = None
        self.selected_calls: list[ModelCall] = []
        self.call_counts: dict[str, int] = {}
        self.inspector: CallInspector | None = None
        self.fork_view: CheckpointTimeline | None = None  # a fork's history, opened below
        self.last_fork: str | None = None
        self.forks: dict[str, list[str]] = {}
        self.gone = False  # the session was destroyed
        self._last_agent: str | None = None
        self._counts = CallCounts(manager, session_id)
        self._reader = CheckpointReader(manager, session_id)

        self.graph = HistoryGraph()
        self.rollback_button = button("Rollback", style="danger", tooltip="Return to this state")
        self.fork_button = button("Fork", style="primary", tooltip="New session from here")
        self.preview_html = widgets.HTML()
        self.inspector_box = widgets.VBox()
        controls = widgets.HBox(
            [self.refresh_button, self.rollback_button, self.fork_button],
            layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
        )
        self.children = [
            self.style_html,
            self.header_html,
            self.graph,
            controls,
            self.confirm_bar,
            self.status_html,
            self.error_html,
            self.inspector_box,  # an opened call or fork: right under the click, in view
            self.preview_html,
        ]
        self.add_class("agc-timeline")
        self.graph.observe(self._picked, names="selected")
        self.graph.observe(self._reordered, names=["sort_key", "descending", "axis", "brush"])
        self.graph.observe(self._inspect_clicked, names="inspect")
        self.graph.observe(self._fork_clicked, names="open_session")
        self.rollback_button.on_click(lambda _: self.ask_rollback())
        self.fork_button.on_click(lambda _: self.ask_fork())
        self._loader(self._load, self._loaded)
        self._preview_loader = self._loader(self._load_preview, self._preview_done)
        self._start()

    # -- loading ------------------------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        # Called on the thread that changed the manager: schedule, never block.
        if event.kind == "missed" or self.session_id in (event.session_id, event.new_session_id):
            self.refresh()

    async def _load(self) -> _Loaded:
        if self.manager.store.get_session(self.session_id) is None:
            self._reader.forget()
            return _Loaded(gone=True)
        checkpoints = await self._reader.read()
        forks = await self._forks()
        calls = await self._counts.update(checkpoints)
        data = graph_data(checkpoints, forks=forks, calls=calls)
        loaded = _Loaded(checkpoints, data, forks=forks, calls=calls)
        session = await live_session(self.manager, self.session_id)
        if session is not None:
            loaded.live, loaded.turn_index = True, session.turn_index
            loaded.agent_name, loaded.cost_usd = session.agent.name, session.cost_so_far
        elif checkpoints:
            newest = checkpoints[0]
            loaded.turn_index, loaded.agent_name = newest.turn_index, newest.agent_name
            loaded.cost_usd = newest.cost_usd
        return loaded

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
            self.checkpoints, self.data = loaded.checkpoints, loaded.data
            self.live, self.turn_index = loaded.live, loaded.turn_index
            self.agent_name, self._cost = loaded.agent_name, loaded.cost_usd
            self.forks, self.call_counts = loaded.forks, loaded.calls
            if loaded.gone:
                self.gone = True
                self.agent_name = self.agent_name or self._last_agent
                if self.confirm_bar.dismiss():
                    self.set_status("The session was destroyed: the question was withdrawn.")
            else:
                self.gone = False
                self._last_agent = loaded.agent_name
            if self.selected is not None and not any(
                c.ckpt_id == self.selected for c in self.checkpoints
            ):
                self._clear_selection()  # pruned, or the session is gone
            self._quiet = True
            try:
                self.graph.data = self.data
                self.graph.version += 1
            finally:
                self._quiet = False
            self._render()

    def _clear_selection(self) -> None:
        self.selected, self.preview, self.selected_calls = None, None, []
        self.preview_html.value = ""

    async def _load_preview(self) -> tuple[str | None, Any, list[ModelCall]]:
        meta = self.selected_meta()
        if meta is None:
            return None, None, []
        preview = await self.manager.checkpointer.preview(meta.ckpt_id)
        calls = await calls_of(self.manager, meta, self.call_counts.get(meta.ckpt_id))
        return meta.ckpt_id, preview, calls

    def _preview_done(self, loaded: tuple[str | None, Any, list[ModelCall]]) -> None:
        ckpt, preview, calls = loaded
        with self._lock:
            if ckpt is None or ckpt != self.selected:
                return
            self.preview, self.selected_calls = preview, calls
            self.preview_html.value = render_checkpoint_preview(preview)
            self.graph.calls = [call_row(c) for c in calls]

    # -- what is shown ------------------------------------------------------------------------

    def _row_count(self) -> int:
        return len(self.checkpoints)

    def shown_checkpoints(self) -> list[Any]:
        """The table's checkpoints in its order (sorted, and inside the brush if any)."""
        by_id = {c.ckpt_id: c for c in self.checkpoints}
        ids = self.data.get("ids", [])
        return [by_id[ids[i]] for i in self.graph.order]

    def page_checkpoints(self) -> list[Any]:
        """The first ``page_size`` rows of the table (what the static snapshot lists)."""
        return self.shown_checkpoints()[: self.page_size]

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
        lanes = len(self.data.get("lanes", ())) - 1
        branches = f" · {plural(lanes, 'branch', 'branches')}" if lanes > 0 else ""
        forks = sum(len(v) for v in self.forks.values())
        forked = f" · {plural(forks, 'fork')}" if forks else ""
        return (
            f'<div class="agc-head"><b>Checkpoints</b> of <code>{html.escape(self.session_id)}'
            f"</code> · agent {html.escape(self.agent_name or '?')} · "
            f'<span class="agc-turn">turn {turn}</span>{html.escape(cost)} · {state}'
            f"{branches}{forked}"
            f'<span class="agc-count">{plural(len(self.checkpoints), "checkpoint")}</span></div>'
        )

    def _render(self) -> None:
        with self._lock:
            self.header_html.value = self._header()
            self._quiet = True
            try:
                self.graph.order = self._order()
                self.graph.selected = self.selected
                self.graph.disabled = self.gone
                if self.selected is None:
                    self.graph.calls = []
            finally:
                self._quiet = False
            for b in (self.rollback_button, self.fork_button):
                b.disabled = self.selected is None or self._acting or self.gone
            self.refresh_button.disabled = self.gone

    # -- selection ----------------------------------------------------------------------------

    def _picked(self, change: Any) -> None:
        if self._quiet or change["new"] is None or change["new"] == self.selected:
            return
        self.select(change["new"])

    def select(self, ckpt_id: str | None) -> None:
        """Select a checkpoint (``None``: none) and load its state and its model calls."""
        with self._lock:
            ids = {c.ckpt_id for c in self.checkpoints}
            if ckpt_id is not None and ckpt_id not in ids:
                self.show_error(InvalidInputError(f"no checkpoint {ckpt_id!r} in this timeline"))
                return
            self._clear_selection()
            self.selected = ckpt_id
            self.graph.calls = []
            self._render()
        self._preview_loader.request()

    def selected_meta(self) -> Any:
        """The selected checkpoint's ``CkptMeta``, or ``None``."""
        return next((c for c in self.checkpoints if c.ckpt_id == self.selected), None)

    # -- lifetime and reprs -------------------------------------------------------------------

    def close(self) -> None:
        """Stop following the manager (and close an opened call inspector or fork history)."""
        for opened in (getattr(self, "inspector", None), getattr(self, "fork_view", None)):
            if opened is not None:
                opened.close()
        super().close()

    def __repr__(self) -> str:
        return (
            f"CheckpointTimeline({self.session_id!r}, {len(self.checkpoints)} checkpoints, "
            f"turn={self.turn_index}, selected={self.selected!r})"
        )

    def _repr_html_(self) -> str:
        # Static snapshot for saved notebooks, nbviewer, GitHub and exported HTML: header,
        # the table's first rows, preview. No SVG or canvas: sanitizers strip them.
        rows: Sequence[Any] = self.page_checkpoints()
        more = len(self.graph.order) - len(rows)
        tail = f'<div class="agc-more-text">… and {more:,} more checkpoints</div>' if more else ""
        table = render_checkpoint_table(rows, selected=self.selected)
        return (
            f'{style_tag()}<div class="agc-view">{self._header()}'
            f"{table}{tail}"
            f"{self.preview_html.value}</div>"
        )

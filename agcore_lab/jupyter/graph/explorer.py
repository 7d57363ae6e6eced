"""``GraphExplorer``: browse a knowledge graph in a notebook, offline and safely.

The graph is drawn by vis-network (read from the installed pyvis package) in a sandboxed iframe
(see :mod:`agcore_lab.jupyter.graph.page`, hosted by :mod:`agcore_lab.jupyter.graph.frame`); a
search box, a depth slider, a direction choice and clicks on nodes pick the neighbourhood to
show, and a side table lists the related entities with their scores and paths. The frame
follows JupyterLab's light or dark theme and shows a legend of the entity types. Every engine
call runs on agcore_lab's background loop
(:class:`~agcore_lab.jupyter.common.tasks.BackgroundTask`): widget callbacks return at once.
:meth:`GraphExplorer.to_pyvis` hands the current view to pyvis.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter.common.history_parts import button
from agcore_lab.jupyter.common.tasks import BackgroundTask
from agcore_lab.jupyter.common.text import cap_height, error_line, plural
from agcore_lab.jupyter.common.theme import style_tag
from agcore_lab.jupyter.graph import page as _graph_page
from agcore_lab.jupyter.graph import walks
from agcore_lab.jupyter.graph.clicks import NodeClicks
from agcore_lab.jupyter.graph.drawing import GraphDrawing
from agcore_lab.jupyter.graph.frame import GraphFrame
from agcore_lab.kg.types import GraphEntity, RelationDirection, ScoredEntity

if TYPE_CHECKING:
    from agcore_lab.kg.base import KnowledgeGraph

__all__ = ["GraphExplorer"]

MAX_DEPTH = 5
SEARCH_LIMIT = 20
THEMES = ("auto", "light", "dark")


class GraphExplorer(GraphDrawing, NodeClicks, widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """An interactive view of a :class:`~agcore_lab.kg.base.KnowledgeGraph`.

    Graphs of at most ``max_nodes`` entities are drawn whole at first; larger ones show only
    the neighbourhood of the entity picked with the search box, with a message saying so (a
    neighbourhood is cut to its ``max_nodes - 1`` best entities too). Nodes are coloured by
    entity type, with a legend; names, types and descriptions are always shown as text,
    never as HTML. Clicking a node re-centres the view on it (:meth:`click` does the same from
    a cell) and calls the callbacks given to :meth:`on_node_click`. The layout is seeded, so
    the same graph is drawn the same way each time.

    Args:
        graph: An ``InMemoryGraph``, a ``SqliteGraph`` or any ``KnowledgeGraph``.
        max_nodes: The most entities drawn at once.
        theme: ``"auto"`` (default: follow JupyterLab's light or dark theme, live), or
            ``"light"`` / ``"dark"`` to force the frame's colours.
        center: Show this entity's neighbourhood at once.
        depth: The walk's depth (1 to 5).
        direction: Which relations the walk follows.
        height: The frame's height in pixels.

    Example:
        >>> from agcore_lab.kg import GraphEntity, GraphRelation, InMemoryGraph
        >>> g = InMemoryGraph()
        >>> for name in ("ada", "engine"):
        ...     _ = g.add_entity_sync(GraphEntity(id=name))
        >>> _ = g.add_relation_sync(GraphRelation(source="ada", target="engine", weight=0.5))
        >>> explorer = GraphExplorer(g)
        >>> explorer.node_ids
        ['ada', 'engine']
        >>> explorer.show("ada").wait(10)
        True
        >>> [(r.entity.id, r.score) for r in explorer.related]
        [('engine', 0.5)]
    """

    def __init__(
        self,
        graph: KnowledgeGraph,
        *,
        max_nodes: int = 500,
        theme: str = "auto",
        center: str | None = None,
        depth: int = 1,
        direction: RelationDirection | str = RelationDirection.Outgoing,
        height: int = 460,
    ) -> None:
        if theme not in THEMES:
            raise InvalidInputError(f"theme must be 'auto', 'light' or 'dark', got {theme!r}")
        if max_nodes < 1:
            raise InvalidInputError(f"max_nodes must be at least 1, got {max_nodes}")
        self.graph = graph
        self.max_nodes = max_nodes
        self.theme = theme
        self.height = height
        self.center: str | None = None
        self.related: list[ScoredEntity] = []
        self.node_ids: list[str] = []
        self.matches: list[ScoredEntity] = []
        self.message = ""
        self.page = ""
        self.last_error: BaseException | None = None
        self.tasks: list[BackgroundTask[Any]] = []
        self._generation = 0
        self._lock = threading.RLock()
        self._quiet = False
        self._colours: dict[str, dict[str, str]] = {}
        self._click_callbacks: list[Callable[[str], object]] = []
        self.callback_error: BaseException | None = None  # of the last node click
        self._entities: list[GraphEntity] = []
        self._edges: list[tuple[str, str, str]] = []
        self.entity_count = self._count()

        self.style_html = widgets.HTML(style_tag())
        self.header_html = widgets.HTML()
        self.search_text = widgets.Text(
            placeholder="keywords, then Enter",
            description="Search:",
            continuous_update=False,  # a search on Enter or leaving the box, not per key
            layout=widgets.Layout(width="280px"),
        )
        self.search_button = button("Search", tooltip="Find entities by keywords")
        self.results_dropdown = widgets.Dropdown(
            options=[], description="Centre:", layout=widgets.Layout(width="320px")
        )
        self.depth_slider = widgets.IntSlider(
            value=min(max(1, depth), MAX_DEPTH), min=1, max=MAX_DEPTH, description="Depth:"
        )
        self.direction_buttons = widgets.ToggleButtons(
            options=[(d.value, d) for d in RelationDirection],
            value=RelationDirection(direction),
            description="Direction:",
            style={"button_width": "80px"},
        )
        self.whole_button = button("Whole graph", tooltip="Draw every entity")
        self.frame = GraphFrame(height=height, layout=widgets.Layout(width="100%", margin="0"))
        self.table_html = widgets.HTML(layout=widgets.Layout(width="360px", margin="0 0 0 8px"))
        self.status_html = widgets.HTML()
        self.error_html = widgets.HTML()
        frame_box = widgets.Box([self.frame], layout=widgets.Layout(flex="1 1 auto"))
        super().__init__(
            [
                self.style_html,
                self.header_html,
                widgets.HBox([self.search_text, self.search_button, self.results_dropdown]),
                widgets.HBox([self.depth_slider, self.direction_buttons, self.whole_button]),
                widgets.HBox([frame_box, self.table_html], layout=widgets.Layout(width="100%")),
                self.status_html,
                self.error_html,
            ]
        )
        self.add_class("agc-view")
        self.add_class("agc-graph-explorer")
        cap_height(self)
        self.search_text.observe(self._typed, names="value")
        self.search_button.on_click(lambda _: self.search(self.search_text.value))
        self.whole_button.on_click(lambda _: self.show_whole())
        self.results_dropdown.observe(self._picked, names="value")
        self.depth_slider.observe(self._walk_changed, names="value")
        self.direction_buttons.observe(self._walk_changed, names="value")
        self.frame.observe(self._frame_clicked, names="clicks")
        self.header_html.value = (
            f'<div class="agc-head"><b>knowledge graph</b><span class="agc-count">'
            f"{self.entity_count} entities</span></div>"
        )
        self._render_table()
        first = self.show(center) if center is not None else self.show_whole()
        first.wait(10)

    # -- state ----------------------------------------------------------------------------------

    def _count(self) -> int:
        try:
            return len(self.graph)  # type: ignore[arg-type]
        except TypeError:
            return int(self.graph.to_networkx().number_of_nodes())

    @property
    def too_big(self) -> bool:
        """Whether the graph has more than ``max_nodes`` entities (neighbourhoods only)."""
        return self.entity_count > self.max_nodes

    @property
    def depth(self) -> int:
        """The walk's depth, from the slider."""
        return int(self.depth_slider.value)

    @property
    def direction(self) -> RelationDirection:
        """The walk's direction, from the toggle buttons."""
        return RelationDirection(self.direction_buttons.value)

    def wait(self, timeout: float = 10.0) -> bool:
        """Block until every started search or walk — including a walk that a finished search
        started — has updated the view; ``False`` on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            pending = [task for task in list(self.tasks) if not task.done]
            if not pending:
                return True
            for task in pending:
                if not task.wait(max(0.0, deadline - time.monotonic())):
                    return False

    # -- engine calls ---------------------------------------------------------------------------

    def _run(self, coro: Coroutine[Any, Any, Any], what: str, done: Any) -> BackgroundTask[Any]:
        with self._lock:
            self._generation += 1
            generation = self._generation

        def success(result: Any) -> None:
            if generation == self._generation:  # a later request wins
                self.show_error(None)
                done(result)

        def failure(exc: BaseException) -> None:
            if generation == self._generation:
                self.show_error(exc)
                self.set_status(what + " failed.")

        self.set_status(what + "…")
        task: BackgroundTask[Any] = BackgroundTask(coro, on_success=success, on_error=failure)
        self.tasks = [t for t in self.tasks if not t.done] + [task]
        return task

    def search(self, keywords: str) -> BackgroundTask[Any]:
        """Find entities by keywords (``find_by_keywords``) and offer them as centres."""
        return self._run(
            self.graph.find_by_keywords(keywords, limit=SEARCH_LIMIT),
            f"Searching for {keywords!r}",
            self._found,
        )

    def _found(self, matches: list[ScoredEntity]) -> None:
        self.matches = matches
        self._quiet = True  # filling the dropdown must not start a walk
        try:
            self.results_dropdown.options = [
                (f"{m.entity.name} ({m.entity.entity_type}, {m.entity.id})", m.entity.id)
                for m in matches
            ]
            self.results_dropdown.value = None
        finally:
            self._quiet = False
        if matches:
            self.set_status(f"{plural(len(matches), 'match', 'matches')}: showing the best one.")
            self.results_dropdown.value = matches[0].entity.id  # starts the walk
        else:
            # Nothing matches: the old neighbourhood and table must not stay as if they did.
            self.center = None
            self.related = []
            self._draw([], [], "No entity matches this search: nothing is drawn.")
            self.set_status("No entity matches.")

    def show(
        self,
        entity_id: str,
        depth: int | None = None,
        direction: RelationDirection | str | None = None,
    ) -> BackgroundTask[Any]:
        """Draw the neighbourhood of ``entity_id`` (``get_related``) and list it in the table."""
        self._quiet = True
        try:
            if depth is not None:
                self.depth_slider.value = min(max(1, depth), MAX_DEPTH)
            if direction is not None:
                self.direction_buttons.value = RelationDirection(direction)
        finally:
            self._quiet = False
        walk = (self.depth, self.direction)
        return self._run(
            self._neighbourhood(entity_id, *walk),
            f"Walking from {entity_id!r} (depth {walk[0]}, {walk[1].value})",
            lambda result: self._drawn(entity_id, *result),
        )

    async def _neighbourhood(
        self, entity_id: str, depth: int, direction: RelationDirection
    ) -> tuple[GraphEntity, list[ScoredEntity], list[tuple[str, str, str]], str]:
        return await walks.neighbourhood(
            self.graph,
            entity_id,
            depth,
            direction,
            max_nodes=self.max_nodes,
            entity_count=self.entity_count,
        )

    def show_whole(self) -> BackgroundTask[Any]:
        """Draw the whole graph (or, above ``max_nodes``, say why it is not drawn)."""
        return self._run(self._whole(), "Reading the graph", self._drawn_whole)

    async def _whole(self) -> tuple[list[GraphEntity], list[tuple[str, str, str]]]:
        return ([], []) if self.too_big else walks.whole(self.graph)

    # -- callbacks, status ----------------------------------------------------------------------

    def _typed(self, change: dict[str, Any]) -> None:
        if change["new"].strip():
            self.search(change["new"])

    def _picked(self, change: dict[str, Any]) -> None:
        if not self._quiet and change["new"] is not None:
            self.show(change["new"])

    def _walk_changed(self, _change: object) -> None:
        if not self._quiet and self.center is not None:
            self.show(self.center)

    def set_status(self, text: str) -> None:
        """Show ``text`` on the status line."""
        self.status_html.value = f'<div class="agc-status">{html.escape(text)}</div>'

    def show_error(self, exc: BaseException | None) -> None:
        """Show an error under the graph (``None`` clears it); kept in ``last_error``."""
        self.last_error = exc
        self.error_html.value = (
            "" if exc is None else f'<div class="agc-error">{html.escape(error_line(exc))}</div>'
        )

    def _repr_html_(self) -> str:
        # Static snapshot for saved notebooks / nbviewer: the state as text (the drawing needs
        # the kernel's page; an inlined vis-network is ~700 KB, too big for a snapshot).
        return style_tag() + _graph_page.snapshot(
            header=self.header_html.value,
            center=self.center,
            node_ids=self.node_ids,
            message=self.message,
            table=self.table_html.value,
            status=self.status_html.value,
        )

    def __repr__(self) -> str:
        where = f"center={self.center!r}" if self.center else "whole graph"
        return f"GraphExplorer({self.entity_count} entities, {where}, {len(self.node_ids)} shown)"

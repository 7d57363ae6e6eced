"""The graph explorer's drawing: entity colours (stable per type), the legend, the frame's
page and the related-entities table.

A mixin of :class:`~agcore_lab.jupyter.GraphExplorer`: Python decides what is drawn (nodes,
links, colours for both themes); the sandboxed frame (:mod:`.frame`, :mod:`.page`) only how.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agcore_lab.jupyter.graph import page as _graph_page
from agcore_lab.kg.types import GraphEntity, ScoredEntity

__all__ = ["GraphDrawing"]


class GraphDrawing:
    """Drawing of the explorer's current neighbourhood (the explorer owns the state)."""

    center: str | None
    related: list[ScoredEntity]
    node_ids: list[str]
    message: str
    page: str
    theme: str
    entity_count: int
    max_nodes: int
    frame: Any
    table_html: Any
    _colours: dict[str, dict[str, str]]
    _entities: list[GraphEntity]
    _edges: list[tuple[str, str, str]]
    set_status: Any

    if TYPE_CHECKING:  # provided by the explorer

        @property
        def too_big(self) -> bool: ...
        @property
        def depth(self) -> int: ...
        @property
        def direction(self) -> Any: ...

    def _colour(self, entity_type: str) -> dict[str, str]:
        # One colour per type for each theme, fixed at first sight (stable across redraws).
        if entity_type not in self._colours:
            n = len(self._colours)
            self._colours[entity_type] = {
                name: colours[n % len(colours)]
                for name, colours in _graph_page.TYPE_COLOURS.items()
            }
        return self._colours[entity_type]

    @property
    def legend(self) -> dict[str, str]:
        """The entity types drawn now and their colours (in the light theme, or the forced
        one)."""
        theme = "dark" if self.theme == "dark" else "light"
        types = sorted({e.entity_type for e in self._entities})
        return {t: self._colour(t)[theme] for t in types}

    def _draw(
        self, entities: list[GraphEntity], edges: list[tuple[str, str, str]], message: str
    ) -> None:
        for entity_type in sorted({e.entity_type for e in entities}):
            self._colour(entity_type)
        nodes = [
            {
                "id": e.id,
                "label": e.name,
                "tip": _graph_page.tip_lines(e),
                "colors": self._colour(e.entity_type),
                "center": e.id == self.center,
            }
            for e in entities
        ]
        links = [{"from": s, "to": t, "label": label} for s, t, label in edges]
        types = [
            {"type": t, "colors": self._colour(t)}
            for t in sorted({e.entity_type for e in entities})
        ]
        self.node_ids = [e.id for e in entities]
        self._entities, self._edges = list(entities), list(edges)
        self.message = message
        self.page = _graph_page.page(nodes, links, theme=self.theme, message=message, types=types)
        self.frame.page = self.page
        self._render_table()

    def _drawn_whole(self, result: tuple[list[GraphEntity], list[tuple[str, str, str]]]) -> None:
        entities, edges = result
        self.center = None
        self.related = []
        if self.too_big:
            message = (
                f"The graph has {self.entity_count} entities, more than max_nodes="
                f"{self.max_nodes}: it is not drawn whole. Search for an entity to see its "
                "neighbourhood."
            )
        else:
            message = ""
        self._draw(entities, edges, message)
        self.set_status(message or f"The whole graph: {len(entities)} entities.")

    def _drawn(
        self,
        entity_id: str,
        entity: GraphEntity,
        related: list[ScoredEntity],
        edges: list[tuple[str, str, str]],
        message: str,
    ) -> None:
        self.center = entity_id
        self.related = related
        self._draw([entity, *(r.entity for r in related)], edges, message)
        self.set_status(
            f"{entity.name} ({entity.id}): {len(related)} related entities at depth "
            f"{self.depth} ({self.direction.value})."
        )

    def _render_table(self) -> None:
        self.table_html.value = _graph_page.related_table(self.center, self.related)

"""The graph explorer's node clicks and its pyvis export (a mixin of ``GraphExplorer``).

A click in the sandboxed frame reaches Python as a node id (:mod:`.frame`); :meth:`click` is
the same from a cell. :meth:`to_pyvis` hands the drawn view to pyvis (:mod:`.export`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter.common.text import error_line

if TYPE_CHECKING:
    from pyvis.network import Network

    from agcore_lab.jupyter.common.tasks import BackgroundTask
    from agcore_lab.kg.types import GraphEntity

__all__ = ["NodeClicks"]


class NodeClicks:
    """Needs the explorer's ``node_ids``, ``frame``, ``show``, ``show_error``, ``set_status``,
    ``theme``, ``center``, ``_colours``, ``_entities`` and ``_edges``."""

    node_ids: list[str]
    frame: Any
    theme: str
    center: str | None
    show: Any
    show_error: Any
    set_status: Any
    _colours: dict[str, dict[str, str]]
    _entities: list[GraphEntity]
    _edges: list[tuple[str, str, str]]
    _click_callbacks: list[Callable[[str], object]]
    callback_error: BaseException | None

    def on_node_click(self, callback: Callable[[str], object]) -> None:
        """Call ``callback(entity_id)`` when a node is clicked (before the view re-centres).

        The callback runs on the kernel's thread that handles widget messages; an error in it
        is kept in ``callback_error`` and does not stop the re-centring.
        """
        self._click_callbacks.append(callback)

    def click(self, entity_id: str) -> BackgroundTask[Any] | None:
        """What a click on a drawn node does: tell the callbacks, then show its neighbourhood.

        Returns:
            The walk's task, or ``None`` when ``entity_id`` is not drawn (the error is shown).
        """
        if entity_id not in self.node_ids:
            self.show_error(
                InvalidInputError(f"entity {entity_id!r} is not drawn; nothing to centre")
            )
            return None
        self.callback_error = None
        for callback in list(self._click_callbacks):
            try:
                callback(entity_id)
            except Exception as exc:  # a user's callback must not break the view
                self.callback_error = exc
        task = self.show(entity_id)
        if self.callback_error is not None:
            self.set_status(f"A node-click callback failed: {error_line(self.callback_error)}")
        return task

    def _frame_clicked(self, _change: object) -> None:
        clicked = self.frame.clicked
        if clicked is not None:
            self.click(clicked)

    def to_pyvis(self, **options: Any) -> Network:
        """The current view as a real :class:`pyvis.network.Network`, to customise and
        ``save_graph()`` the pyvis way: the drawn entities (coloured by type, the centre
        larger) and relations, with the same text-only labels — names as labels, tooltips as
        escaped text, so no entity text can become markup in pyvis's page.

        Args:
            options: Passed to :func:`agcore_lab.jupyter.graph.export.to_pyvis` (``height``,
                ``cdn_resources``, ``theme``...).

        Example:
            >>> from agcore_lab.jupyter import GraphExplorer
            >>> from agcore_lab.kg import GraphEntity, GraphRelation, InMemoryGraph
            >>> g = InMemoryGraph()
            >>> for name in ("ada", "engine"):
            ...     _ = g.add_entity_sync(GraphEntity(id=name))
            >>> _ = g.add_relation_sync(GraphRelation(source="ada", target="engine"))
            >>> net = GraphExplorer(g).to_pyvis()
            >>> sorted(net.get_nodes()), len(net.get_edges())
            (['ada', 'engine'], 1)
        """
        from agcore_lab.jupyter.graph.export import to_pyvis

        theme = options.pop("theme", "dark" if self.theme == "dark" else "light")
        return to_pyvis(
            self._entities,
            self._edges,
            colours={t: c[theme] for t, c in self._colours.items()},
            center=self.center,
            theme=theme,
            **options,
        )

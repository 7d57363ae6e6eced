"""Knowledge graphs as real :class:`pyvis.network.Network` objects, with text-only labels.

pyvis's own page inserts a node's ``title`` with ``innerHTML`` as soon as any title contains
``href`` (see docs/jupyter.md): every tooltip here is HTML-escaped text, and labels are drawn on
the canvas, so entity names and descriptions from users and models stay text in a pyvis page
too. The networks are offline by default (``cdn_resources="in_line"``: vis-network from the
pyvis package inlined; pyvis still adds its Bootstrap links from a CDN, which only style the
page around the graph).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agcore_lab.jupyter.graph.page import PALETTES, TYPE_COLOURS, tip_lines
from agcore_lab.kg.types import GraphEntity

if TYPE_CHECKING:
    from pyvis.network import Network

    from agcore_lab.kg.base import KnowledgeGraph

__all__ = ["graph_to_pyvis", "to_pyvis"]


def _title(entity: GraphEntity) -> str:
    return html.escape("\n".join(tip_lines(entity)), quote=True)


def to_pyvis(
    entities: Iterable[GraphEntity],
    edges: Iterable[tuple[str, str, str]],
    *,
    colours: Mapping[str, str] | None = None,
    center: str | None = None,
    theme: str = "light",
    height: str = "600px",
    cdn_resources: str = "in_line",
    **network_options: Any,
) -> Network:
    """A pyvis ``Network`` of ``entities`` and ``edges`` (``(source, target, label)``).

    Args:
        entities: The nodes.
        edges: The relations between them (edges to entities not given are left out).
        colours: Colour by entity type (default: the explorer's palette, types sorted).
        center: Drawn larger, with a border.
        theme: ``"light"`` or ``"dark"``: background and font colours.
        height: The network's height (a CSS length).
        cdn_resources: pyvis's option (``"in_line"``: no vis-network download).
        network_options: More ``Network(...)`` keyword arguments.

    Raises:
        InvalidInputError: Unknown ``theme``.
    """
    from pyvis.network import Network

    from agcore_lab.errors import InvalidInputError

    if theme not in PALETTES:
        raise InvalidInputError(f"theme must be 'light' or 'dark', got {theme!r}")
    palette = PALETTES[theme]
    entities = list(entities)
    chosen = dict(colours or {})
    for n, entity_type in enumerate(sorted({e.entity_type for e in entities} - set(chosen))):
        pool = TYPE_COLOURS[theme]
        chosen[entity_type] = pool[(len(chosen) + n) % len(pool)]
    net = Network(
        height=height,
        width="100%",
        directed=True,
        bgcolor=palette["background"],
        font_color=palette["font"],
        cdn_resources=cdn_resources,
        **network_options,
    )
    ids = set()
    for entity in entities:
        ids.add(entity.id)
        is_center = entity.id == center
        net.add_node(
            entity.id,
            label=entity.name,
            title=_title(entity),
            color=chosen[entity.entity_type],
            size=18 if is_center else 11,
            borderWidth=3 if is_center else 1,
        )
    for source, target, label in edges:
        if source in ids and target in ids:
            net.add_edge(source, target, label=label, title=html.escape(label, quote=True))
    return net


def graph_to_pyvis(graph: KnowledgeGraph, *, max_nodes: int = 500, **options: Any) -> Network:
    """The whole of ``graph`` as a pyvis ``Network`` (see :func:`to_pyvis` for ``options``).

    Raises:
        InvalidInputError: The graph has more than ``max_nodes`` entities (draw a
            neighbourhood with ``GraphExplorer(graph, center=...).to_pyvis()`` instead).

    Example:
        >>> from agcore_lab.kg import GraphEntity, InMemoryGraph
        >>> g = InMemoryGraph()
        >>> _ = g.add_entity_sync(GraphEntity(id="<b>x</b>", description="<i>y</i>"))
        >>> net = graph_to_pyvis(g)
        >>> net.nodes[0]["title"]
        '&lt;b&gt;x&lt;/b&gt;\\nentity · &lt;b&gt;x&lt;/b&gt;\\n&lt;i&gt;y&lt;/i&gt;'
    """
    from agcore_lab.errors import InvalidInputError

    nx_graph = graph.to_networkx()
    if nx_graph.number_of_nodes() > max_nodes:
        raise InvalidInputError(
            f"the graph has {nx_graph.number_of_nodes()} entities, more than "
            f"max_nodes={max_nodes}: draw a neighbourhood with "
            "GraphExplorer(graph, center=...).to_pyvis(), or raise max_nodes"
        )
    entities: Sequence[GraphEntity] = [
        GraphEntity(**{**attrs, "id": node}) for node, attrs in nx_graph.nodes(data=True)
    ]
    edges = [(s, t, str(k)) for s, t, k in nx_graph.edges(keys=True)]
    return to_pyvis(entities, edges, **options)

"""Bulk writes into the graph's networkx ``MultiDiGraph``, straight into its own dicts.

networkx's ``add_edges_from`` takes any shape of edge (2, 3 or 4 items, a key or none, data
or none) and makes each one through ``add_edge`` and an adjacency view, which is most of what
a bulk import costs. The graph's edges always have one shape — ``(source, target, relation
type, data)`` between nodes already in the graph — so :func:`add_edges` writes them as
``add_edge`` would, and nothing else: the data of an edge already there is updated (its other
attributes kept), and the key dict of a node pair is shared by both directions, as networkx
keeps it. Only for a graph made with networkx's default dict factories (``nx.MultiDiGraph()``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx

__all__ = ["add_edges", "add_nodes"]


def _changed(graph: nx.MultiDiGraph) -> None:
    # What networkx does after every write: drop the cached conversions of the graph
    # (networkx >= 3.3 keeps them for its dispatch backends).
    cache = getattr(graph, "__networkx_cache__", None)
    if cache:
        cache.clear()


def add_nodes(graph: nx.MultiDiGraph, nodes: Iterable[str]) -> None:
    """``graph.add_nodes_from(nodes)`` for plain ids (a node already there is kept as it is)."""
    node_data, succ, pred = graph._node, graph._succ, graph._pred
    for node in nodes:
        if node not in succ:
            succ[node] = {}
            pred[node] = {}
            node_data[node] = {}
    _changed(graph)


def add_edges(
    graph: nx.MultiDiGraph, edges: Iterable[tuple[str, str, str, dict[str, Any]]]
) -> None:
    """``graph.add_edges_from(edges)`` for ``(source, target, key, data)`` rows whose ends
    are nodes of ``graph`` already. A new edge keeps ``data`` itself (pass a fresh dict); an
    edge already there is updated with it."""
    succ, pred = graph._succ, graph._pred
    for source, target, key, data in edges:
        row = succ[source]
        keyed = row.get(target)
        if keyed is None:
            row[target] = pred[target][source] = {key: data}
            continue
        old = keyed.get(key)
        if old is None:
            keyed[key] = data
        else:
            old.update(data)
    _changed(graph)

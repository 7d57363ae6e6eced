"""The adjacency a walk over every relation type reads: each entity's best weight per neighbour.

A walk that follows every relation type only needs, for each entity and each neighbour, the
best weight of the relations between them (parallel relations of other types can only lose:
see :mod:`agcore_lab.kg.walk`). networkx keeps ``node -> neighbour -> relation type -> data``;
:class:`BestWeights` keeps ``node -> neighbour -> best weight`` for one direction, so a step is
one dict lookup and one multiplication, with no edge data read.

A node's row is made the first time a walk reaches it (from networkx's row, which stays the
truth) and kept up to date on every write after that: a walk never rebuilds anything, the
first walk over a large graph costs about what a walk over networkx costs, and the rows held
grow with the part of the graph that walks visit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import networkx as nx

__all__ = ["BestWeights"]

Keyed = Mapping[str, Mapping[str, Any]]
# The relations between two entities in networkx: relation type -> edge data.


def _best(keyed: Keyed) -> float:
    """The best weight among parallel relations (a relation without one weighs 1)."""
    if len(keyed) == 1:
        for data in keyed.values():
            return float(data.get("weight", 1.0))
    return max(float(data.get("weight", 1.0)) for data in keyed.values())


class _Rows(dict[str, dict[str, float]]):
    """``node -> neighbour -> best weight``; a missing row is made from networkx's."""

    __slots__ = ("adjacency",)

    def __init__(self, adjacency: Mapping[str, Mapping[str, Keyed]]) -> None:
        super().__init__()
        self.adjacency = adjacency

    def __missing__(self, node: str) -> dict[str, float]:
        row = self[node] = {other: _best(keyed) for other, keyed in self.adjacency[node].items()}
        return row


class BestWeights:
    """``node -> neighbour -> best weight`` of ``graph``, outgoing or incoming.

    ``weights[node]`` is the row of any node of the graph (made on first use); a node that
    is not in the graph is a ``KeyError``.

    Args:
        graph: The graph to read; its writes must be reported through :meth:`put_pair` and
            :meth:`remove_node`.
        incoming: Neighbours are the sources of relations into a node, not their targets.

    Example:
        >>> g = nx.MultiDiGraph()
        >>> _ = g.add_edge("a", "b", key="weak", weight=0.1)
        >>> _ = g.add_edge("a", "b", key="strong", weight=0.9)
        >>> BestWeights(g).weights["a"]
        {'b': 0.9}
        >>> BestWeights(g, incoming=True).weights["a"]
        {}
    """

    __slots__ = ("graph", "incoming", "weights")

    def __init__(self, graph: nx.MultiDiGraph, *, incoming: bool = False) -> None:
        self.graph = graph
        self.incoming = incoming
        self.weights: dict[str, dict[str, float]] = _Rows(graph._pred if incoming else graph._succ)

    def put_pair(self, source: str, target: str) -> None:
        """The relations ``source -> target`` changed (added, re-weighted or removed)."""
        node, other = (target, source) if self.incoming else (source, target)
        row = self.weights.get(node)
        if row is None:
            return  # made from networkx when first needed
        keyed = self.graph._succ.get(source, {}).get(target)
        if keyed:
            row[other] = _best(keyed)
        else:
            row.pop(other, None)

    def put_pairs(self, pairs: Iterable[tuple[str, str]]) -> None:
        """:meth:`put_pair` for each ``(source, target)``."""
        for source, target in pairs:
            self.put_pair(source, target)

    def remove_node(self, node: str) -> None:
        """``node`` is about to be removed with its relations: call this before networkx's
        ``remove_node``, while its neighbours the other way can still be read."""
        weights = self.weights
        others = self.graph._succ if self.incoming else self.graph._pred
        for other in others.get(node, ()):
            row = weights.get(other)
            if row is not None:
                row.pop(node, None)
        weights.pop(node, None)

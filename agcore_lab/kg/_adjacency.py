"""The adjacency a walk over every relation type reads: each entity's best weight per neighbour.

A walk that follows every relation type only needs, for each entity and each neighbour, the
best weight of the relations between them (parallel relations of other types can only lose:
see :mod:`agcore_lab.kg.walk`). networkx keeps ``node -> neighbour -> relation type -> data``;
:class:`BestWeights` keeps ``node -> neighbour -> best weight`` for one direction, so a step is
one dict lookup and one multiplication, with no edge data read. ``InMemoryGraph`` builds one
per direction on the first walk that needs it and keeps it up to date on every write after
that (as its keyword index), so a walk never rebuilds it.
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


class BestWeights:
    """``node -> neighbour -> best weight`` of ``graph``, outgoing or incoming.

    Every node of the graph has an entry (an empty dict when it has no neighbour this way).

    Args:
        graph: The graph to read; its writes must be reported through :meth:`put_pair`,
            :meth:`add_node` and :meth:`remove_node`.
        incoming: Neighbours are the sources of relations into a node, not their targets.

    Example:
        >>> g = nx.MultiDiGraph()
        >>> _ = g.add_edge("a", "b", key="weak", weight=0.1)
        >>> _ = g.add_edge("a", "b", key="strong", weight=0.9)
        >>> BestWeights(g).weights
        {'a': {'b': 0.9}, 'b': {}}
        >>> BestWeights(g, incoming=True).weights
        {'a': {}, 'b': {'a': 0.9}}
    """

    __slots__ = ("graph", "incoming", "weights")

    def __init__(self, graph: nx.MultiDiGraph, *, incoming: bool = False) -> None:
        self.graph = graph
        self.incoming = incoming
        adjacency = graph._pred if incoming else graph._succ
        self.weights: dict[str, dict[str, float]] = {
            node: {other: _best(keyed) for other, keyed in neighbours.items()}
            for node, neighbours in adjacency.items()
        }

    def put_pair(self, source: str, target: str) -> None:
        """The relations ``source -> target`` changed (added, re-weighted or removed)."""
        keyed = self.graph._succ.get(source, {}).get(target)
        node, other = (target, source) if self.incoming else (source, target)
        if keyed:
            self.weights.setdefault(node, {})[other] = _best(keyed)
        else:
            self.weights.get(node, {}).pop(other, None)

    def put_pairs(self, pairs: Iterable[tuple[str, str]]) -> None:
        """:meth:`put_pair` for each ``(source, target)``."""
        for source, target in pairs:
            self.put_pair(source, target)

    def add_node(self, node: str) -> None:
        """A node was added (with no relations yet, or keeping the ones it has)."""
        self.weights.setdefault(node, {})

    def remove_node(self, node: str) -> None:
        """``node`` is about to be removed with its relations: call this before networkx's
        ``remove_node``, while its neighbours the other way can still be read."""
        weights = self.weights
        others = self.graph._succ if self.incoming else self.graph._pred
        for other in others.get(node, ()):
            if other != node:
                weights[other].pop(node, None)
        weights.pop(node, None)

"""The breadth-first walk behind ``KnowledgeGraph.get_related``.

Level by level from the start entity: a visited set stops cycles; the score of a path is the
product of its relation weights; the first arrival at an entity wins — an entity reached at
depth 2 is never re-reached at depth 3 — and among arrivals at the same depth the higher score
wins (on equal scores, the path found first in id order). Results are sorted by score, best
first, then by depth and id.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import networkx as nx

from agcore_lab.errors import InvalidInputError
from agcore_lab.kg.types import RelationDirection

__all__ = ["WalkStep", "walk"]

WalkStep = tuple[str, float, list[str]]
"""``(entity_id, score, path)``; ``path`` runs from the start to ``entity_id``."""


def _steps(
    graph: nx.MultiDiGraph, node: str, direction: RelationDirection, types: frozenset[str] | None
) -> Iterator[tuple[str, float]]:
    """``(neighbour, weight)`` for each relation the walk may follow from ``node``."""
    if direction is not RelationDirection.Incoming:
        for _, other, key, data in graph.out_edges(node, keys=True, data=True):
            if types is None or key in types:
                yield other, float(data.get("weight", 1.0))
    if direction is not RelationDirection.Outgoing:
        for other, _, key, data in graph.in_edges(node, keys=True, data=True):
            if types is None or key in types:
                yield other, float(data.get("weight", 1.0))


def walk(
    graph: nx.MultiDiGraph,
    source: str,
    depth: int,
    direction: RelationDirection = RelationDirection.Outgoing,
    relation_types: Iterable[str] | None = None,
) -> list[WalkStep]:
    """Walk ``graph`` breadth-first from ``source`` for at most ``depth`` steps.

    Args:
        graph: Edges keyed by relation type, each with a ``weight`` attribute (default 1).
        source: The start node; never part of the result.
        depth: The most relations a path may have; 0 returns nothing.
        direction: Follow relations out of, into, or either way through each node.
        relation_types: Follow only relations of these types; all of them when ``None``.

    Returns:
        ``(entity_id, score, path)`` per reached entity, best score first.

    Raises:
        InvalidInputError: ``depth`` is negative.

    Example:
        >>> g = nx.MultiDiGraph()
        >>> g.add_edge("a", "b", key="knows", weight=0.5)
        'knows'
        >>> walk(g, "a", 2)
        [('b', 0.5, ['a', 'b'])]
    """
    if depth < 0:
        raise InvalidInputError(f"depth must be >= 0, got {depth}", depth=depth)
    direction = RelationDirection(direction)
    types = None if relation_types is None else frozenset(relation_types)
    visited = {source}
    frontier: dict[str, tuple[float, list[str]]] = {source: (1.0, [source])}
    found: list[tuple[int, WalkStep]] = []
    for level in range(1, depth + 1):
        arrivals: dict[str, tuple[float, list[str]]] = {}
        for node in sorted(frontier):
            score, path = frontier[node]
            for other, weight in _steps(graph, node, direction, types):
                if other in visited:
                    continue
                candidate = score * weight
                best = arrivals.get(other)
                if best is None or candidate > best[0]:
                    arrivals[other] = (candidate, [*path, other])
        if not arrivals:
            break
        visited.update(arrivals)
        found.extend((level, (node, s, p)) for node, (s, p) in arrivals.items())
        frontier = arrivals
    found.sort(key=lambda item: (-item[1][1], item[0], item[1][0]))
    return [step for _, step in found]

"""The breadth-first walk behind ``KnowledgeGraph.get_related``.

Level by level from the start entity: a visited set stops cycles; the score of a path is the
product of its relation weights; the first arrival at an entity wins — an entity reached at
depth 2 is never re-reached at depth 3 — and among arrivals at the same depth the higher score
wins (on equal scores, the path found first in id order). Results are sorted by score, best
first, then by depth and id.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx

from agcore_lab.errors import InvalidInputError
from agcore_lab.kg.types import RelationDirection

__all__ = ["WalkStep", "walk"]

WalkStep = tuple[str, float, list[str]]
"""``(entity_id, score, path)``; ``path`` runs from the start to ``entity_id``."""


def _arrivals(
    sides: list[Any], frontier: list[str], scores: dict[str, float], types: frozenset[str] | None
) -> tuple[dict[str, float], dict[str, str]]:
    """The next level: the best score of each new entity, and the node it came from."""
    arrivals: dict[str, float] = {}
    parents: dict[str, str] = {}
    for node in frontier:
        score = scores[node]
        for side in sides:
            for other, keyed in side[node].items():
                if other in scores:
                    continue
                for key, data in keyed.items():
                    if types is not None and key not in types:
                        continue
                    candidate = score * float(data.get("weight", 1.0))
                    best = arrivals.get(other)
                    if best is None or candidate > best:
                        arrivals[other] = candidate
                        parents[other] = node
    return arrivals, parents


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
    # networkx's own adjacency dicts (node -> neighbour -> key -> data), as its algorithms
    # read them: no edge views or tuples per step. Each level's winners get their path once,
    # from their parent's, and the results sort as plain tuples.
    sides: list[Any] = []
    if direction is not RelationDirection.Incoming:
        sides.append(graph._succ)
    if direction is not RelationDirection.Outgoing:
        sides.append(graph._pred)
    if source not in graph._succ:
        return []
    scores: dict[str, float] = {source: 1.0}
    paths: dict[str, list[str]] = {source: [source]}
    found: list[tuple[float, int, str]] = []  # (-score, level, id): sorts best first
    frontier = [source]
    for level in range(1, depth + 1):
        arrivals, parents = _arrivals(sides, sorted(frontier), scores, types)
        if not arrivals:
            break
        scores.update(arrivals)
        for node, score in arrivals.items():
            paths[node] = [*paths[parents[node]], node]
            found.append((-score, level, node))
        frontier = list(arrivals)
    found.sort()
    return [(node, -negative, paths[node]) for negative, _, node in found]

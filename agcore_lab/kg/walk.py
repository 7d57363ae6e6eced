"""The breadth-first walk behind ``KnowledgeGraph.get_related``.

Level by level from the start entity: a visited set stops cycles; the score of a path is the
product of its relation weights; the first arrival at an entity wins — an entity reached at
depth 2 is never re-reached at depth 3 — and among arrivals at the same depth the higher score
wins (on equal scores, the path found first in id order). Results are sorted by score, best
first, then by depth and id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import itemgetter
from typing import Any

import networkx as nx

from agcore_lab.errors import InvalidInputError
from agcore_lab.kg._records import unchecked
from agcore_lab.kg.types import GraphEntity, RelationDirection, ScoredEntity

__all__ = ["Found", "WalkStep", "checked", "scored", "search", "walk", "walk_untyped"]

WalkStep = tuple[str, float, list[str]]
"""``(entity_id, score, path)``; ``path`` runs from the start to ``entity_id``."""

Found = list[tuple[float, int, str]]
"""``(-score, level, entity_id)`` per reached entity, sorted: best first, then by depth and id."""


Level = tuple[dict[str, float], dict[str, str]]
# One level of the walk: the best score of each entity first reached, and its parent.


def _arrivals(sides: list[Any], frontier: list[str], scores: dict[str, float]) -> Level:
    """The next level, following every relation type (the common case: nothing is tested
    per relation)."""
    arrivals: dict[str, float] = {}
    parents: dict[str, str] = {}
    for node in frontier:
        score = scores[node]
        for side in sides:
            for other, keyed in side[node].items():
                if other in scores:
                    continue  # reached at an earlier level (or the source)
                for data in keyed.values():
                    candidate = score * float(data.get("weight", 1.0))
                    if other not in arrivals or candidate > arrivals[other]:
                        arrivals[other] = candidate
                        parents[other] = node
    return arrivals, parents


def _typed_arrivals(
    sides: list[Any], frontier: list[str], scores: dict[str, float], types: frozenset[str]
) -> Level:
    """:func:`_arrivals`, following only relations of these types."""
    arrivals: dict[str, float] = {}
    parents: dict[str, str] = {}
    for node in frontier:
        score = scores[node]
        for side in sides:
            for other, keyed in side[node].items():
                if other in scores:
                    continue
                for key, data in keyed.items():
                    if key in types:
                        candidate = score * float(data.get("weight", 1.0))
                        if other not in arrivals or candidate > arrivals[other]:
                            arrivals[other] = candidate
                            parents[other] = node
    return arrivals, parents


def checked(depth: int, direction: RelationDirection) -> RelationDirection:
    """``direction`` as the enum, once ``depth`` is known to be valid.

    Raises:
        InvalidInputError: ``depth`` is negative.
    """
    if depth < 0:
        raise InvalidInputError(f"depth must be >= 0, got {depth}", depth=depth)
    if type(direction) is not RelationDirection:  # a plain string ("both"): calling the
        direction = RelationDirection(direction)  # enum costs as much as a short walk
    return direction


def search(
    graph: nx.MultiDiGraph,
    source: str,
    depth: int,
    direction: RelationDirection = RelationDirection.Outgoing,
    relation_types: Iterable[str] | None = None,
) -> tuple[Found, dict[str, list[str]]]:
    """The walk's results before they are shaped: the sorted ``(-score, level, id)`` of every
    reached entity, and each one's path (the source's own too). See :func:`walk`.

    Raises:
        InvalidInputError: ``depth`` is negative.
    """
    direction = checked(depth, direction)
    types = None if relation_types is None else frozenset(relation_types)
    # networkx's own adjacency dicts (node -> neighbour -> key -> data), as its algorithms
    # read them: no edge views or tuples per step.
    sides: list[Any] = []
    if direction is not RelationDirection.Incoming:
        sides.append(graph._succ)
    if direction is not RelationDirection.Outgoing:
        sides.append(graph._pred)
    paths: dict[str, list[str]] = {source: [source]}
    found: Found = []
    if source not in graph._succ:
        return found, paths
    scores: dict[str, float] = {source: 1.0}
    frontier = [source]
    for level in range(1, depth + 1):
        if len(frontier) > 1:
            frontier.sort()  # equal scores: the path found first in id order wins
        arrivals, parents = (
            _arrivals(sides, frontier, scores)
            if types is None
            else _typed_arrivals(sides, frontier, scores, types)
        )
        if not arrivals:
            break
        scores.update(arrivals)
        for node, parent in parents.items():
            paths[node] = [*paths[parent], node]
        found += [(-score, level, node) for node, score in arrivals.items()]
        frontier = [*arrivals]
    found.sort()
    return found, paths


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
    found, paths = search(graph, source, depth, direction, relation_types)
    return [(node, -negative, paths[node]) for negative, _, node in found]


_SCORED_FIELDS = tuple(ScoredEntity.model_fields)
_SCORE = itemgetter("score")


def scored(
    entities: Mapping[str, GraphEntity], found: Found, paths: dict[str, list[str]]
) -> list[ScoredEntity]:
    """The results of :func:`search` as :class:`ScoredEntity` objects (see :func:`_results`)."""
    return _results(
        [
            {"entity": entities[node], "score": -negative, "path": paths[node]}
            for negative, _, node in found
        ]
    )


def _results(fields: list[dict[str, Any]]) -> list[ScoredEntity]:
    """:class:`ScoredEntity` objects with these fields, built without a validation pass:
    every value is already of its field's type (an entity from the graph, a float, a fresh
    list of ids). A walk returns dozens of them, and building them is most of its cost."""
    return unchecked(ScoredEntity, fields, _SCORED_FIELDS)


def walk_untyped(
    sides: list[dict[str, dict[str, float]]],
    entities: Mapping[str, GraphEntity],
    source: str,
    depth: int,
) -> list[ScoredEntity]:
    """:func:`search` and :func:`scored` in one pass, following every relation type over
    ``node -> neighbour -> best weight`` maps (:class:`~agcore_lab.kg._adjacency.BestWeights`,
    one per direction followed; each gives the row of any node, ``source`` included).

    The same rules and the same results, with less made per step: an entity's result fields
    are made once, when it is first reached (a better arrival at the same level replaces its
    score and path), and become its result's own; the results are ordered by one stable sort
    on the score of entities listed level by level in id order.
    """
    # Per entity reached (and the source): the fields of its result, "entity" aside.
    records: dict[str, dict[str, Any]] = {source: {"score": 1.0, "path": [source]}}
    reached: list[dict[str, Any]] = []
    frontier = [source]
    last = depth - 1
    for level in range(depth):
        arrivals: dict[str, dict[str, Any]] = {}
        for node in frontier:  # in id order: on equal scores the first path found wins
            record = records[node]
            score, path = record["score"], record["path"]
            for side in sides:
                for other, weight in side[node].items():
                    if other in records:
                        continue  # reached at an earlier level (or the source)
                    candidate = score * weight
                    if other in arrivals:  # reached at this level already: the better wins
                        found = arrivals[other]
                        if candidate > found["score"]:
                            found["score"], found["path"] = candidate, [*path, other]
                        continue
                    arrivals[other] = {
                        "entity": entities[other],
                        "score": candidate,
                        "path": [*path, other],
                    }
        if not arrivals:
            break
        if level < last:  # the next level's walk skips them
            records.update(arrivals)
        frontier = sorted(arrivals)
        reached += map(arrivals.__getitem__, frontier)
    reached.sort(key=_SCORE, reverse=True)  # stable: then by level, then by id
    return unchecked(ScoredEntity, reached, _SCORED_FIELDS)

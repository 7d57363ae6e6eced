"""Graph conformance checks of ``get_related``: directions, scores, depth, cycles, ties and
relation types. Part of :mod:`agcore_lab.testing.graph_conformance`."""

from __future__ import annotations

from collections.abc import Iterable

from agcore_lab.errors import InvalidInputError, NotFoundError
from agcore_lab.kg.base import KnowledgeGraph
from agcore_lab.kg.types import GraphEntity, GraphRelation, RelationDirection
from agcore_lab.testing._support import expect_equal, expect_raises

__all__ = [
    "build",
    "check_walk_depth_zero_and_cycles",
    "check_walk_directions",
    "check_walk_first_arrival_wins",
    "check_walk_relation_types",
    "check_walk_scores_paths_and_order",
    "related",
]


def build(graph: KnowledgeGraph, edges: Iterable[tuple[str, str, str, float]]) -> None:
    """Add ``(source, relation_type, target, weight)`` edges, creating the entities."""
    for source, relation_type, target, weight in edges:
        for end in (source, target):
            if graph.get_entity_sync(end) is None:
                graph.add_entity_sync(GraphEntity(id=end))
        graph.add_relation_sync(
            GraphRelation(source=source, target=target, relation_type=relation_type, weight=weight)
        )


def related(
    graph: KnowledgeGraph,
    entity_id: str,
    depth: int = 1,
    direction: RelationDirection = RelationDirection.Outgoing,
    relation_types: Iterable[str] | None = None,
) -> list[tuple[str, float, list[str]]]:
    found = graph.get_related_sync(entity_id, depth, direction, relation_types)
    return [(r.entity.id, round(r.score, 9), r.path) for r in found]


def check_walk_directions(graph: KnowledgeGraph) -> None:
    """Outgoing (the default) follows source to target, Incoming the reverse, Both either."""
    build(graph, [("a", "r", "b", 0.5), ("c", "r", "a", 0.25)])
    expect_equal(related(graph, "a"), [("b", 0.5, ["a", "b"])], "the default direction")
    expect_equal(
        related(graph, "a", 1, RelationDirection.Incoming),
        [("c", 0.25, ["a", "c"])],
        "Incoming",
    )
    expect_equal(
        related(graph, "a", 1, RelationDirection.Both),
        [("b", 0.5, ["a", "b"]), ("c", 0.25, ["a", "c"])],
        "Both",
    )


def check_walk_scores_paths_and_order(graph: KnowledgeGraph) -> None:
    """A path's score is the product of its weights; results are sorted best first."""
    build(graph, [("a", "r", "b", 0.5), ("b", "r", "c", 0.5), ("a", "r", "d", 0.1)])
    expect_equal(
        related(graph, "a", 2),
        [("b", 0.5, ["a", "b"]), ("c", 0.25, ["a", "b", "c"]), ("d", 0.1, ["a", "d"])],
        "a depth-2 walk",
    )
    expect_equal(
        related(graph, "a", 1), [("b", 0.5, ["a", "b"]), ("d", 0.1, ["a", "d"])], "depth 1"
    )


def check_walk_depth_zero_and_cycles(graph: KnowledgeGraph) -> None:
    """Depth 0 finds nothing; a cycle never returns the start or an entity twice; a negative
    depth or an unknown start is an error."""
    build(graph, [("a", "r", "b", 0.9), ("b", "r", "c", 0.9), ("c", "r", "a", 0.9)])
    expect_equal(related(graph, "a", 0), [], "depth 0")
    found = related(graph, "a", 10)
    expect_equal([f[0] for f in found], ["b", "c"], "a walk around a cycle")
    expect_raises(InvalidInputError, "a negative depth", graph.get_related_sync, "a", -1)
    expect_raises(NotFoundError, "a walk from an unknown entity", graph.get_related_sync, "zz", 1)


def check_walk_first_arrival_wins(graph: KnowledgeGraph) -> None:
    """An entity is reached at its smallest depth even when a longer path scores more; among
    paths of equal depth the higher score wins."""
    build(
        graph,
        [
            ("s", "r", "x", 0.1),
            ("s", "r", "m", 1.0),
            ("m", "r", "x", 1.0),  # depth 2 and better, but x was reached at depth 1
            ("x", "r", "t", 0.5),
            ("m", "r", "t", 0.9),  # both reach t at depth 2: m's path scores 0.9 vs 0.05
        ],
    )
    expect_equal(
        related(graph, "s", 3),
        [("m", 1.0, ["s", "m"]), ("t", 0.9, ["s", "m", "t"]), ("x", 0.1, ["s", "x"])],
        "first arrival with ties by score",
    )


def check_walk_relation_types(graph: KnowledgeGraph) -> None:
    """``relation_types`` limits which relations the walk follows, at every step."""
    build(graph, [("a", "cites", "b", 1.0), ("b", "likes", "c", 1.0), ("a", "likes", "d", 1.0)])
    expect_equal(
        [f[0] for f in related(graph, "a", 2, relation_types=["cites"])], ["b"], "cites only"
    )
    expect_equal(
        sorted(f[0] for f in related(graph, "a", 2, relation_types=["cites", "likes"])),
        ["b", "c", "d"],
        "cites and likes",
    )
    expect_equal(related(graph, "a", 2, relation_types=[]), [], "no relation types")

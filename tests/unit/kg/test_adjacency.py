"""The walk over every relation type reads its own adjacency (best weight per neighbour): it
must give what the walk over networkx's edges gives, after any sequence of writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agcore_lab import SqliteStore
from agcore_lab.kg import GraphEntity, GraphRelation, InMemoryGraph, SqliteGraph
from agcore_lab.kg._adjacency import BestWeights
from agcore_lab.kg.types import RelationDirection, ScoredEntity
from agcore_lab.kg.walk import scored, search

NODES = list("abcdef")
WEIGHTS = st.sampled_from([0.0, 0.25, 0.5, 0.5, 1.0, 2.0])  # repeats: equal scores and ties
RELATION = st.tuples(st.sampled_from(NODES), st.sampled_from(["r", "s"]), st.sampled_from(NODES))
WRITES = st.lists(
    st.one_of(
        st.tuples(st.just("relate"), RELATION, WEIGHTS),
        st.tuples(st.just("unrelate"), RELATION, WEIGHTS),
        st.tuples(st.just("remove"), st.tuples(st.sampled_from(NODES)), WEIGHTS),
        st.tuples(st.just("add"), st.tuples(st.sampled_from(NODES)), WEIGHTS),
        st.tuples(st.just("import"), RELATION, WEIGHTS),
        st.tuples(st.just("walk"), st.tuples(st.sampled_from(NODES)), WEIGHTS),
    ),
    max_size=30,
)


def _reference(graph: InMemoryGraph, source: str, depth: int, direction: str) -> list[Any]:
    """The walk over networkx's own edges (the path relation-type filters take)."""
    found, paths = search(graph._graph, source, depth, RelationDirection(direction))
    return _rows(scored(graph._entities, found, paths))


def _rows(results: list[ScoredEntity]) -> list[tuple[str, float, list[str]]]:
    return [(r.entity.id, r.score, r.path) for r in results]


def _check_every_walk(graph: InMemoryGraph) -> None:
    for source in graph._entities:
        for direction in ("outgoing", "incoming", "both"):
            for depth in (1, 3):
                got = _rows(graph.get_related_sync(source, depth, direction))  # type: ignore[arg-type]
                assert got == _reference(graph, source, depth, direction), (
                    source,
                    depth,
                    direction,
                )


def _apply(graph: InMemoryGraph, write: str, args: tuple[str, ...], weight: float) -> None:
    if write == "relate" or write == "import":
        source, rtype, target = args
        for end in (source, target):
            if end not in graph:
                graph.add_entity_sync(GraphEntity(id=end))
        if write == "relate":
            graph.add_relation_sync(
                GraphRelation(source=source, relation_type=rtype, target=target, weight=weight)
            )
        else:
            table = {"source": [source], "relation": [rtype], "target": [target]}
            graph.import_triples_sync(pd.DataFrame({**table, "weight": [weight]}))
    elif write == "unrelate":
        graph.remove_relation_sync(*args)
    elif write == "remove":
        graph.remove_entity_sync(args[0])
    elif write == "add":  # re-adding an entity keeps its relations
        graph.add_entity_sync(GraphEntity(id=args[0], tags=["again"]))
    elif args[0] in graph:  # "walk": builds the adjacency at this point of the sequence
        graph.get_related_sync(args[0], 2, "both")  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(writes=WRITES)
@example(  # rows made by a walk, then an entity on both sides of them removed and re-added
    writes=[
        ("relate", ("a", "r", "b"), 0.5),
        ("relate", ("b", "s", "c"), 1.0),
        ("walk", ("b",), 0.0),
        ("remove", ("b",), 0.0),
        ("add", ("b",), 0.0),
    ]
)
@example(  # a walk, then the best of two parallel relations re-weighted below the other
    writes=[
        ("relate", ("a", "r", "b"), 1.0),
        ("relate", ("a", "s", "b"), 0.5),
        ("walk", ("a",), 0.0),
        ("import", ("a", "r", "b"), 0.25),
        ("unrelate", ("a", "s", "b"), 0.0),
    ]
)
@example(  # two paths of equal score to t at one level: the first in id order (via p) wins
    writes=[
        ("relate", ("a", "r", "q"), 1.0),
        ("relate", ("a", "r", "p"), 1.0),
        ("relate", ("q", "r", "t"), 0.5),
        ("relate", ("p", "r", "t"), 0.5),
    ]
)
@example(  # a better path to t found after a first one at the same level replaces it
    writes=[
        ("relate", ("a", "r", "p"), 1.0),
        ("relate", ("a", "r", "q"), 1.0),
        ("relate", ("p", "r", "t"), 0.25),
        ("relate", ("q", "s", "t"), 0.5),
    ]
)
def test_walks_match_the_walk_over_networkx_after_any_writes(
    writes: list[tuple[str, tuple[str, ...], float]],
) -> None:
    graph = InMemoryGraph()
    for write, args, weight in writes:
        _apply(graph, write, args, weight)
    _check_every_walk(graph)
    for direction, best in graph._best.items():  # rows kept up to date: as if made now
        fresh = BestWeights(graph._graph, incoming=direction).weights
        assert {node: fresh[node] for node in best.weights} == best.weights


def test_a_lower_weight_or_a_removed_relation_changes_the_next_walk() -> None:
    graph = InMemoryGraph()
    for name in "abc":
        graph.add_entity_sync(GraphEntity(id=name))
    graph.add_relation_sync(GraphRelation(source="a", relation_type="r", target="b", weight=0.9))
    graph.add_relation_sync(GraphRelation(source="a", relation_type="s", target="b", weight=0.4))
    graph.add_relation_sync(GraphRelation(source="b", relation_type="r", target="c", weight=0.5))
    assert _rows(graph.get_related_sync("a", 2)) == [
        ("b", 0.9, ["a", "b"]),
        ("c", 0.45, ["a", "b", "c"]),
    ]
    # The best parallel relation gets a lower weight: the other one is now the best.
    graph.add_relation_sync(GraphRelation(source="a", relation_type="r", target="b", weight=0.1))
    assert _rows(graph.get_related_sync("a", 1)) == [("b", 0.4, ["a", "b"])]
    graph.remove_relation_sync("a", "s", "b")
    assert _rows(graph.get_related_sync("a", 1)) == [("b", 0.1, ["a", "b"])]
    assert _rows(graph.get_related_sync("c", 2, RelationDirection.Incoming)) == [
        ("b", 0.5, ["c", "b"]),
        ("a", 0.05, ["c", "b", "a"]),
    ]
    graph.remove_entity_sync("b")
    assert graph.get_related_sync("a", 3, RelationDirection.Both) == []
    assert graph.get_related_sync("c", 3, RelationDirection.Both) == []


def test_a_reload_sees_another_writers_relations(tmp_path: Path) -> None:
    path = tmp_path / "graph.db"
    first = SqliteGraph(SqliteStore(path))
    first.import_triples_sync(
        pd.DataFrame({"source": ["a"], "relation": ["r"], "target": ["b"], "weight": [0.5]})
    )
    assert _rows(first.get_related_sync("a")) == [("b", 0.5, ["a", "b"])]  # adjacency built
    second = SqliteGraph(SqliteStore(path))
    second.add_relation_sync(GraphRelation(source="b", relation_type="r", target="a", weight=0.8))
    second.add_relation_sync(GraphRelation(source="a", relation_type="s", target="b", weight=0.7))
    assert _rows(first.get_related_sync("a")) == [("b", 0.5, ["a", "b"])]  # not reloaded yet
    first.reload()
    assert _rows(first.get_related_sync("a")) == [("b", 0.7, ["a", "b"])]
    assert _rows(first.get_related_sync("a", 1, RelationDirection.Incoming)) == [
        ("b", 0.8, ["a", "b"])
    ]


def test_bad_depth_or_direction_is_refused_as_before() -> None:
    graph = InMemoryGraph()
    graph.add_entity_sync(GraphEntity(id="a"))
    with pytest.raises(ValueError, match="depth"):
        graph.get_related_sync("a", -1)
    with pytest.raises(ValueError, match="sideways"):
        graph.get_related_sync("a", 1, "sideways")  # type: ignore[arg-type]
    assert graph._best == {}  # nothing was built for a refused walk

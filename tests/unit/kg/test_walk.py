"""The breadth-first walk: cycles, ties, depth, directions, relation types and scores."""

from __future__ import annotations

import math

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agcore_lab.errors import InvalidInputError
from agcore_lab.kg.types import RelationDirection
from agcore_lab.kg.walk import walk


def _graph(*edges: tuple[str, str, str, float]) -> nx.MultiDiGraph:
    graph = nx.MultiDiGraph()
    for source, relation_type, target, weight in edges:
        graph.add_edge(source, target, key=relation_type, weight=weight)
    return graph


def test_depth_zero_returns_nothing() -> None:
    assert walk(_graph(("a", "r", "b", 1.0)), "a", 0) == []


def test_negative_depth_is_an_error() -> None:
    with pytest.raises(InvalidInputError, match="depth"):
        walk(_graph(("a", "r", "b", 1.0)), "a", -1)


def test_cycles_and_self_loops_end() -> None:
    graph = _graph(("a", "r", "a", 1.0), ("a", "r", "b", 0.5), ("b", "r", "a", 0.5))
    assert walk(graph, "a", 50) == [("b", 0.5, ["a", "b"])]


def test_scores_are_products_along_the_path() -> None:
    graph = _graph(("a", "r", "b", 0.5), ("b", "r", "c", 0.4), ("c", "r", "d", 0.5))
    result = walk(graph, "a", 3)
    assert [(n, p) for n, _, p in result] == [
        ("b", ["a", "b"]),
        ("c", ["a", "b", "c"]),
        ("d", ["a", "b", "c", "d"]),
    ]
    assert [s for _, s, _ in result] == pytest.approx([0.5, 0.2, 0.1])


def test_first_arrival_wins_over_a_better_longer_path() -> None:
    graph = _graph(("a", "r", "x", 0.1), ("a", "r", "m", 1.0), ("m", "r", "x", 1.0))
    assert ("x", 0.1, ["a", "x"]) in walk(graph, "a", 2)


def test_equal_depth_ties_go_to_the_higher_score() -> None:
    graph = _graph(
        ("a", "r", "p", 1.0), ("a", "r", "q", 1.0), ("p", "r", "t", 0.2), ("q", "r", "t", 0.8)
    )
    assert walk(graph, "a", 2)[-1] == ("t", 0.8, ["a", "q", "t"])


def test_equal_scores_keep_the_first_path_in_id_order() -> None:
    graph = _graph(
        ("a", "r", "q", 1.0), ("a", "r", "p", 1.0), ("q", "r", "t", 0.5), ("p", "r", "t", 0.5)
    )
    assert walk(graph, "a", 2)[-1] == ("t", 0.5, ["a", "p", "t"])


def test_parallel_relations_use_the_best_weight() -> None:
    graph = _graph(("a", "weak", "b", 0.1), ("a", "strong", "b", 0.9))
    assert walk(graph, "a", 1) == [("b", 0.9, ["a", "b"])]
    assert walk(graph, "a", 1, relation_types=["weak"]) == [("b", 0.1, ["a", "b"])]


def test_directions() -> None:
    graph = _graph(("a", "r", "b", 0.5), ("c", "r", "a", 0.4), ("b", "r", "d", 1.0))
    assert [n for n, _, _ in walk(graph, "a", 2)] == ["b", "d"]
    assert [n for n, _, _ in walk(graph, "a", 2, RelationDirection.Incoming)] == ["c"]
    assert [n for n, _, _ in walk(graph, "a", 2, RelationDirection.Both)] == ["b", "d", "c"]
    assert [n for n, _, _ in walk(graph, "b", 1, "both")] == ["d", "a"]  # type: ignore[arg-type]


def test_relation_types_filter_every_step() -> None:
    graph = _graph(("a", "cites", "b", 1.0), ("b", "likes", "c", 1.0), ("b", "cites", "d", 1.0))
    assert [n for n, _, _ in walk(graph, "a", 3, relation_types={"cites"})] == ["b", "d"]
    assert walk(graph, "a", 3, relation_types=()) == []


def test_results_are_sorted_by_score_then_depth_then_id() -> None:
    graph = _graph(("a", "r", "z", 1.0), ("a", "r", "y", 1.0), ("z", "r", "x", 1.0))
    assert [n for n, _, _ in walk(graph, "a", 2)] == ["y", "z", "x"]


def test_unknown_start_finds_nothing() -> None:
    # The graphs check the start exists; the bare walk treats it as isolated.
    assert walk(_graph(("a", "r", "b", 1.0)), "nope", 1) == []


NODES = st.sampled_from(list("abcdefg"))
EDGES = st.lists(
    st.tuples(NODES, st.sampled_from(["r", "s"]), NODES, st.floats(0, 1, allow_nan=False)),
    max_size=25,
)
DIRECTIONS = st.sampled_from(list(RelationDirection))


def _best_weight(
    graph: nx.MultiDiGraph, u: str, v: str, direction: RelationDirection, types: set[str] | None
) -> float | None:
    weights: list[float] = []
    if direction is not RelationDirection.Incoming and graph.has_edge(u, v):
        weights += [d["weight"] for k, d in graph[u][v].items() if types is None or k in types]
    if direction is not RelationDirection.Outgoing and graph.has_edge(v, u):
        weights += [d["weight"] for k, d in graph[v][u].items() if types is None or k in types]
    return max(weights) if weights else None


@settings(max_examples=200, deadline=None)
@given(
    edges=EDGES,
    depth=st.integers(0, 5),
    direction=DIRECTIONS,
    types=st.none() | st.sets(st.sampled_from(["r", "s"])),
)
def test_every_path_starts_at_the_source_and_scores_its_product(
    edges: list[tuple[str, str, str, float]],
    depth: int,
    direction: RelationDirection,
    types: set[str] | None,
) -> None:
    graph = _graph(*edges)
    graph.add_node("a")
    result = walk(graph, "a", depth, direction, types)
    reached = [node for node, _, _ in result]
    assert len(reached) == len(set(reached)) and "a" not in reached
    scores = [score for _, score, _ in result]
    assert scores == sorted(scores, reverse=True)
    for node, score, path in result:
        assert path[0] == "a" and path[-1] == node
        assert 2 <= len(path) <= depth + 1 and len(set(path)) == len(path)
        product = 1.0
        for u, v in zip(path, path[1:], strict=False):
            weight = _best_weight(graph, u, v, direction, types)
            assert weight is not None, (u, v)
            product *= weight
        assert math.isclose(score, product, rel_tol=1e-9, abs_tol=1e-12)
    # Breadth-first: every entity is reported at its shortest distance.
    view = graph if direction is RelationDirection.Outgoing else graph.reverse(copy=False)
    if types is None:
        if direction is RelationDirection.Both:
            view = graph.to_undirected(as_view=True)
        distances = nx.single_source_shortest_path_length(view, "a", cutoff=depth)
        assert {n: len(p) - 1 for n, _, p in result} == {
            n: d for n, d in distances.items() if n != "a"
        }


def test_results_are_whole_models_equal_to_validated_ones() -> None:
    # get_related builds its results without a validation pass: they must be the same models.
    import copy
    import pickle

    from agcore_lab.kg import InMemoryGraph
    from agcore_lab.kg.types import GraphEntity, GraphRelation, ScoredEntity

    graph = InMemoryGraph()
    for name in "abc":
        graph.add_entity_sync(GraphEntity(id=name, tags=[name]))
    graph.add_relation_sync(GraphRelation(source="a", target="b", weight=0.5))
    graph.add_relation_sync(GraphRelation(source="b", target="c", weight=0.5))
    results = graph.get_related_sync("a", depth=2)
    expected = [
        ScoredEntity(entity=graph.get_entity_sync(node), score=score, path=path)
        for node, score, path in walk(graph._graph, "a", 2)
    ]
    assert results == expected and [type(r) for r in results] == [ScoredEntity] * 2
    assert [r.model_dump() for r in results] == [e.model_dump() for e in expected]
    assert [repr(r) for r in results] == [repr(e) for e in expected]
    assert results[0].model_fields_set == expected[0].model_fields_set
    assert pickle.loads(pickle.dumps(results)) == expected
    assert copy.deepcopy(results[1]) == expected[1]
    moved = results[1].model_copy(update={"score": 1.0})
    assert moved.score == 1.0 and results[1].score == 0.25
    with pytest.raises(ValueError, match="frozen"):
        results[0].score = 2.0  # type: ignore[misc]
    assert results[0].path is not results[1].path

"""The conformance suite every :class:`~agcore_lab.kg.base.KnowledgeGraph` backend must pass.

Each check is a plain function of one fresh, empty graph (with the default
``TagConstraints``); it raises ``AssertionError`` naming what broke. Two ways to run them:

- in pytest, subclass :class:`GraphConformance` (the class name must start with ``Test``) and
  override :meth:`GraphConformance.make_graph`; every check becomes one test;
- anywhere else, call :func:`run_graph_conformance` with a factory.

Example:
    >>> from agcore_lab.kg import InMemoryGraph
    >>> run_graph_conformance(InMemoryGraph)

The checks use only the protocol (through the ``*_sync`` twins, plus one check of the async
methods), so they hold for any backend.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable

from agcore_lab.errors import InvalidInputError, NotFoundError
from agcore_lab.kg.base import KnowledgeGraph
from agcore_lab.kg.types import GraphEntity, GraphRelation
from agcore_lab.testing._support import expect, expect_equal, expect_raises, run_checks
from agcore_lab.testing.graph_walk_checks import (
    build,
    check_walk_depth_zero_and_cycles,
    check_walk_directions,
    check_walk_first_arrival_wins,
    check_walk_relation_types,
    check_walk_scores_paths_and_order,
    related,
)

__all__ = [
    "GRAPH_CHECKS",
    "GraphConformance",
    "GraphConformanceFailure",
    "GraphFactory",
    "run_graph_conformance",
]

GraphFactory = Callable[[], KnowledgeGraph]
Check = Callable[[KnowledgeGraph], None]


class GraphConformanceFailure(AssertionError):
    """One or more graph conformance checks failed; the message lists each with its reason."""


def check_entity_round_trip(graph: KnowledgeGraph) -> None:
    """An added entity reads back field for field; adding its id again replaces it."""
    ada = GraphEntity(
        id="ada",
        name="Ada Lovelace",
        entity_type="person",
        description="wrote the first program",
        tags=["math", "computing"],
        properties={"born": 1815, "nested": {"ok": True, "none": None}},
    )
    graph.add_entity_sync(ada)
    expect_equal(graph.get_entity_sync("ada"), ada, "get_entity after add_entity")
    expect_equal(graph.get_entity_sync("nobody"), None, "get_entity of an unknown id")
    newer = ada.model_copy(update={"description": "first programmer"})
    graph.add_entity_sync(newer)
    expect_equal(graph.get_entity_sync("ada"), newer, "get_entity after adding the id again")


def check_remove_entity_removes_its_relations(graph: KnowledgeGraph) -> None:
    """Removing an entity removes every relation to or from it and says if it was there."""
    build(graph, [("a", "r", "b", 1.0), ("b", "r", "c", 1.0), ("c", "r", "a", 1.0)])
    expect_equal(graph.remove_entity_sync("b"), True, "remove_entity of an existing entity")
    expect_equal(graph.get_entity_sync("b"), None, "get_entity after remove_entity")
    expect_equal(graph.remove_entity_sync("b"), False, "remove_entity a second time")
    _, relations = graph.to_dataframes()
    expect_equal(
        sorted(zip(relations["source"], relations["target"], strict=True)),
        [("c", "a")],
        "relations left after removing an entity",
    )
    expect_equal(related(graph, "a", 2), [], "a walk after removing the only way out")


def check_add_relation_requires_both_ends(graph: KnowledgeGraph) -> None:
    """A relation to or from an unknown entity raises ``NotFoundError`` naming the id, and
    changes nothing."""
    graph.add_entity_sync(GraphEntity(id="a"))
    for source, target, missing in [("a", "ghost", "ghost"), ("phantom", "a", "phantom")]:
        rel = GraphRelation(source=source, target=target, relation_type="r")
        error = expect_raises(
            NotFoundError, f"add_relation {source}->{target}", graph.add_relation_sync, rel
        )
        expect(missing in str(error), f"the error names the missing id {missing!r}: {error}")
    expect_equal(graph.to_dataframes()[1].shape[0], 0, "relations after failed add_relation")
    expect_equal(graph.get_entity_sync("ghost"), None, "a failed add_relation adds no entity")


def check_relation_identity_updates(graph: KnowledgeGraph) -> None:
    """``(source, relation_type, target)`` identifies a relation: adding it again updates it;
    another type between the same entities is another relation."""
    build(graph, [("a", "cites", "b", 0.2), ("a", "cites", "b", 0.7), ("a", "extends", "b", 0.1)])
    _, relations = graph.to_dataframes()
    rows = sorted(zip(relations["relation_type"], relations["weight"], strict=True))
    expect_equal(rows, [("cites", 0.7), ("extends", 0.1)], "relations after re-adding one")


def check_remove_relation(graph: KnowledgeGraph) -> None:
    """Removing a relation keeps both entities and other relations between them."""
    build(graph, [("a", "cites", "b", 0.5), ("a", "extends", "b", 0.4)])
    expect_equal(graph.remove_relation_sync("a", "cites", "b"), True, "remove_relation")
    expect_equal(graph.remove_relation_sync("a", "cites", "b"), False, "remove_relation again")
    expect_equal(related(graph, "a"), [("b", 0.4, ["a", "b"])], "walk after remove_relation")
    expect(graph.get_entity_sync("b") is not None, "remove_relation keeps the entities")


def check_find_by_keywords(graph: KnowledgeGraph) -> None:
    """Keywords match names (worth more), types, descriptions and tags, case-insensitively."""
    graph.add_entity_sync(GraphEntity(id="1", name="Graph Theory", description="euler"))
    graph.add_entity_sync(GraphEntity(id="2", name="Euler", entity_type="person"))
    graph.add_entity_sync(GraphEntity(id="3", name="Other", tags=["graph"]))
    found = graph.find_by_keywords_sync("EULER graph")
    expect_equal(
        [(f.entity.id, f.score, f.path) for f in found],
        [("1", 0.75, ["1"]), ("2", 0.5, ["2"]), ("3", 0.25, ["3"])],
        "find_by_keywords",
    )
    expect_equal(len(graph.find_by_keywords_sync(["euler"], limit=1)), 1, "limit")
    expect_equal(graph.find_by_keywords_sync("nothing-matches"), [], "no match")
    expect(all(0 < f.score <= 1 for f in found), "keyword scores lie in (0, 1]")


def check_tags(graph: KnowledgeGraph) -> None:
    """``find_tags`` matches any or all tags; ``set_entity_tags`` and removals keep the
    reverse index right."""
    graph.add_entity_sync(GraphEntity(id="a", tags=["x", "y"]))
    graph.add_entity_sync(GraphEntity(id="b", tags=["y"]))
    graph.add_entity_sync(GraphEntity(id="c"))

    def ids(tags: list[str], match_all: bool = False) -> list[str]:
        return [e.id for e in graph.find_tags_sync(tags, match_all)]

    expect_equal(ids(["y"]), ["a", "b"], "find_tags any")
    expect_equal(ids(["x", "y"], True), ["a"], "find_tags all")
    expect_equal(ids([]), [], "find_tags of no tags")
    updated = graph.set_entity_tags_sync("c", ["x", "x"])
    expect_equal(updated.tags, ["x"], "set_entity_tags drops duplicates")
    expect_equal(ids(["x"]), ["a", "c"], "find_tags after set_entity_tags")
    graph.set_entity_tags_sync("a", [])
    expect_equal(ids(["x", "y"]), ["b", "c"], "find_tags after clearing tags")
    graph.add_entity_sync(GraphEntity(id="b"))
    expect_equal(ids(["y"]), [], "find_tags after replacing an entity without tags")
    graph.remove_entity_sync("c")
    expect_equal(ids(["x"]), [], "find_tags after remove_entity")
    expect_raises(
        NotFoundError, "set_entity_tags of an unknown id", graph.set_entity_tags_sync, "z", []
    )


def check_tag_limit(graph: KnowledgeGraph) -> None:
    """More tags than ``TagConstraints.max_tags_per_entity`` is an ``InvalidInputError`` that
    changes nothing."""
    limit = graph.tag_constraints.max_tags_per_entity
    too_many = [f"t{i}" for i in range(limit + 1)]
    error = expect_raises(
        InvalidInputError,
        "add_entity with too many tags",
        graph.add_entity_sync,
        GraphEntity(id="a", tags=too_many),
    )
    expect(str(limit) in str(error), f"the error gives the limit: {error}")
    expect_equal(graph.get_entity_sync("a"), None, "a rejected entity is not added")
    graph.add_entity_sync(GraphEntity(id="a", tags=too_many[:limit]))
    expect_raises(
        InvalidInputError,
        "set_entity_tags with too many",
        graph.set_entity_tags_sync,
        "a",
        too_many,
    )
    expect_equal(graph.find_tags_sync([too_many[-1]]), [], "tags after a rejected update")
    entity = graph.get_entity_sync("a")
    expect(entity is not None and len(entity.tags) == limit, "tags kept after a rejected update")


def check_import_triples(graph: KnowledgeGraph) -> None:
    """A triples table adds relations, creates missing entities, keeps existing ones, and a
    malformed table changes nothing."""
    import pandas as pd

    graph.add_entity_sync(GraphEntity(id="a", name="Alpha", entity_type="letter"))
    table = pd.DataFrame(
        {
            "source": ["a", "b", "a"],
            "relation": ["next", "next", "skip"],
            "target": ["b", "c", "c"],
            "weight": [0.5, None, 0.25],
        }
    )
    expect_equal(graph.import_triples_sync(table), 3, "rows imported")
    entities, relations = graph.to_dataframes()
    expect_equal(list(entities["id"]), ["a", "b", "c"], "entities after import")
    expect_equal(entities["name"].iloc[0], "Alpha", "an existing entity is kept")
    expect_equal(
        sorted(
            zip(
                relations["source"],
                relations["relation_type"],
                relations["target"],
                relations["weight"],
                strict=True,
            )
        ),
        [("a", "next", "b", 0.5), ("a", "skip", "c", 0.25), ("b", "next", "c", 1.0)],
        "relations after import (a missing weight is 1)",
    )
    bad = pd.DataFrame({"source": ["x"], "target": ["y"]})
    expect_raises(InvalidInputError, "a table without 'relation'", graph.import_triples_sync, bad)
    worse = pd.DataFrame({"source": ["x", ""], "relation": ["r", "r"], "target": ["y", "z"]})
    expect_raises(InvalidInputError, "a row with an empty id", graph.import_triples_sync, worse)
    expect_equal(graph.get_entity_sync("x"), None, "a rejected table adds nothing")


def check_to_networkx_and_dataframes(graph: KnowledgeGraph) -> None:
    """``to_networkx`` is a copy with entity fields on nodes and keyed, weighted edges;
    ``to_dataframes`` has flat columns."""
    graph.add_entity_sync(GraphEntity(id="a", entity_type="person", tags=["t"]))
    build(graph, [("a", "knows", "b", 0.5)])
    nxg = graph.to_networkx()
    expect_equal(sorted(nxg.nodes), ["a", "b"], "networkx nodes")
    expect_equal(nxg.nodes["a"]["entity_type"], "person", "a node attribute")
    expect_equal(nxg.nodes["a"]["tags"], ["t"], "node tags")
    expect_equal(nxg.edges["a", "b", "knows"]["weight"], 0.5, "edge weight under its key")
    nxg.remove_node("a")
    expect(graph.get_entity_sync("a") is not None, "changing the copy leaves the graph alone")
    entities, relations = graph.to_dataframes()
    expect_equal(
        list(entities.columns),
        ["id", "name", "entity_type", "description", "tags", "properties"],
        "entity columns",
    )
    expect_equal(
        list(relations.columns),
        ["source", "relation_type", "target", "weight", "properties"],
        "relation columns",
    )


def check_async_methods(graph: KnowledgeGraph) -> None:
    """The async methods behave as their sync twins."""

    async def scenario() -> list[tuple[str, float]]:
        await graph.add_entity(GraphEntity(id="a"))
        await graph.add_entity(GraphEntity(id="b", tags=["t"]))
        await graph.add_relation(GraphRelation(source="a", target="b", weight=0.5))
        found = await graph.get_related("a", 1)
        expect_equal([e.id for e in await graph.find_tags(["t"])], ["b"], "async find_tags")
        return [(f.entity.id, f.score) for f in found]

    expect_equal(asyncio.run(scenario()), [("b", 0.5)], "async get_related")
    expect(math.isclose(graph.get_related_sync("a")[0].score, 0.5), "sync sees async writes")


GRAPH_CHECKS: dict[str, Check] = {
    check.__name__.removeprefix("check_"): check
    for check in [
        check_entity_round_trip,
        check_remove_entity_removes_its_relations,
        check_add_relation_requires_both_ends,
        check_relation_identity_updates,
        check_remove_relation,
        check_walk_directions,
        check_walk_scores_paths_and_order,
        check_walk_depth_zero_and_cycles,
        check_walk_first_arrival_wins,
        check_walk_relation_types,
        check_find_by_keywords,
        check_tags,
        check_tag_limit,
        check_import_triples,
        check_to_networkx_and_dataframes,
        check_async_methods,
    ]
}
"""Every check by name, in the order they run."""


def _run_check(make_graph: GraphFactory, check: Check) -> None:
    check(make_graph())


def run_graph_conformance(make_graph: GraphFactory, *, only: Iterable[str] | None = None) -> None:
    """Run the graph conformance checks, each on a fresh graph from ``make_graph``.

    Args:
        make_graph: Returns a new, empty graph each time it is called.
        only: Names from :data:`GRAPH_CHECKS` to run; all of them by default.

    Raises:
        GraphConformanceFailure: Some checks failed; the message names each and why.
        KeyError: ``only`` names an unknown check.
    """
    run_checks(
        GRAPH_CHECKS,
        make_graph,
        _run_check,
        only=only,
        failure=GraphConformanceFailure,
        what="graph",
    )


class GraphConformance:
    """Base class for a pytest suite: one test per graph conformance check.

    Example:
        >>> from agcore_lab.kg import InMemoryGraph
        >>> class TestMyGraph(GraphConformance):
        ...     def make_graph(self) -> KnowledgeGraph:
        ...         return InMemoryGraph()

    Override :meth:`make_graph`; it is called once per test.
    """

    def make_graph(self) -> KnowledgeGraph:
        """Return a new, empty graph of the backend under test."""
        raise NotImplementedError("override make_graph() to return a new, empty graph")

    def _check(self, check: Check) -> None:
        _run_check(self.make_graph, check)

    def test_add_relation_requires_both_ends(self) -> None:
        self._check(check_add_relation_requires_both_ends)

    def test_async_methods(self) -> None:
        self._check(check_async_methods)

    def test_entity_round_trip(self) -> None:
        self._check(check_entity_round_trip)

    def test_find_by_keywords(self) -> None:
        self._check(check_find_by_keywords)

    def test_import_triples(self) -> None:
        self._check(check_import_triples)

    def test_relation_identity_updates(self) -> None:
        self._check(check_relation_identity_updates)

    def test_remove_entity_removes_its_relations(self) -> None:
        self._check(check_remove_entity_removes_its_relations)

    def test_remove_relation(self) -> None:
        self._check(check_remove_relation)

    def test_tag_limit(self) -> None:
        self._check(check_tag_limit)

    def test_tags(self) -> None:
        self._check(check_tags)

    def test_to_networkx_and_dataframes(self) -> None:
        self._check(check_to_networkx_and_dataframes)

    def test_walk_depth_zero_and_cycles(self) -> None:
        self._check(check_walk_depth_zero_and_cycles)

    def test_walk_directions(self) -> None:
        self._check(check_walk_directions)

    def test_walk_first_arrival_wins(self) -> None:
        self._check(check_walk_first_arrival_wins)

    def test_walk_relation_types(self) -> None:
        self._check(check_walk_relation_types)

    def test_walk_scores_paths_and_order(self) -> None:
        self._check(check_walk_scores_paths_and_order)

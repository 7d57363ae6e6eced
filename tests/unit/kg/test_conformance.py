"""``InMemoryGraph`` and ``SqliteGraph`` pass the graph conformance suite."""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import pytest

from agcore_lab.errors import StorageError
from agcore_lab.kg import (
    GraphEntity,
    GraphRelation,
    InMemoryGraph,
    KnowledgeGraph,
    SqliteGraph,
    from_triples,
)
from agcore_lab.store.sqlite import SqliteStore
from agcore_lab.testing.graph_conformance import (
    GRAPH_CHECKS,
    GraphConformance,
    GraphConformanceFailure,
    run_graph_conformance,
)


class TestInMemoryGraph(GraphConformance):
    def make_graph(self) -> KnowledgeGraph:
        return InMemoryGraph()


class TestSqliteMemoryGraph(GraphConformance):
    def make_graph(self) -> KnowledgeGraph:
        return SqliteGraph(SqliteStore(":memory:"))


class TestSqliteFileGraph(GraphConformance):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory = tmp_path
        self.counter = itertools.count()

    def make_graph(self) -> KnowledgeGraph:
        return SqliteGraph(SqliteStore(self.directory / f"graph-{next(self.counter)}.db"))


class TestSqliteGraphReopened(GraphConformance):
    """Every check again, on a graph that reads back what it wrote before each walk."""

    def make_graph(self) -> KnowledgeGraph:
        return _ReloadingGraph(SqliteStore(":memory:"))


class _ReloadingGraph(SqliteGraph):
    async def get_related(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.reload()
        return await super().get_related(*args, **kwargs)


def test_every_check_has_a_test_method() -> None:
    methods = {name.removeprefix("test_") for name in dir(GraphConformance)}
    assert set(GRAPH_CHECKS) <= methods


def test_both_graphs_satisfy_the_protocol() -> None:
    assert isinstance(InMemoryGraph(), KnowledgeGraph)
    assert isinstance(SqliteGraph(SqliteStore(":memory:")), KnowledgeGraph)


def test_run_graph_conformance_passes() -> None:
    run_graph_conformance(InMemoryGraph)


class _OutgoingOnlyGraph(InMemoryGraph):
    """A broken backend: it drops incoming walks."""

    async def get_related(self, entity_id, depth=1, direction="outgoing", relation_types=None):  # type: ignore[no-untyped-def,override]
        return await super().get_related(entity_id, depth, "outgoing", relation_types)  # type: ignore[arg-type]


def test_run_graph_conformance_names_failing_checks() -> None:
    with pytest.raises(GraphConformanceFailure) as info:
        run_graph_conformance(_OutgoingOnlyGraph)
    assert "walk_directions" in str(info.value)
    assert "tag_limit" not in str(info.value)


def test_run_graph_conformance_only_runs_named_checks() -> None:
    run_graph_conformance(_OutgoingOnlyGraph, only=["tag_limit", "find_by_keywords"])


def test_from_triples_builds_a_graph() -> None:
    graph = from_triples(
        pd.DataFrame({"source": ["a", "b"], "relation": ["r", "r"], "target": ["b", "c"]})
    )
    assert len(graph) == 3
    assert graph.relation_count == 2
    assert [r.path for r in graph.get_related_sync("a", 2)] == [["a", "b"], ["a", "b", "c"]]


def test_a_failed_sqlite_write_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    store = SqliteStore(":memory:")
    graph = SqliteGraph(store)
    graph.add_entity_sync(GraphEntity(id="a"))
    graph.add_entity_sync(GraphEntity(id="b"))

    def broken(*args: object) -> None:
        raise StorageError("disk full")

    monkeypatch.setattr("agcore_lab.kg.sqlite_graph.upsert_relations", broken)
    with pytest.raises(StorageError):
        graph.add_relation_sync(GraphRelation(source="a", target="b"))
    assert graph.relation_count == 0
    assert graph.get_related_sync("a") == []
    assert len(SqliteGraph(store)) == 2  # the earlier writes are kept
    assert SqliteGraph(store).relation_count == 0


def test_sqlite_tables_are_flat() -> None:
    store = SqliteStore(":memory:")
    graph = SqliteGraph(store, "g")
    graph.add_entity_sync(GraphEntity(id="a", entity_type="person", tags=["x", "y"]))
    graph.add_entity_sync(GraphEntity(id="b"))
    graph.add_relation_sync(
        GraphRelation(source="a", target="b", relation_type="knows", weight=0.5)
    )
    relations = store.read_dataframe(
        "select source, relation_type, target, weight from kg_relations"
    )
    assert relations.to_dict("records") == [
        {"source": "a", "relation_type": "knows", "target": "b", "weight": 0.5}
    ]
    tags = store.read_dataframe("select entity_id, tag from kg_entity_tags order by position")
    assert list(tags["tag"]) == ["x", "y"]
    entities = store.read_dataframe("select entity_id, entity_type from kg_entities")
    assert sorted(entities["entity_id"]) == ["a", "b"]
    graph.remove_entity_sync("a")
    for table in ("kg_relations", "kg_entity_tags"):
        assert store.read_dataframe(f"select * from {table}").empty, table


def test_namespaces_are_separate() -> None:
    store = SqliteStore(":memory:")
    SqliteGraph(store, "one").add_entity_sync(GraphEntity(id="a"))
    assert len(SqliteGraph(store, "two")) == 0
    assert len(SqliteGraph(store, "one")) == 1

"""``MemoryRetriever``: strategies, concurrency, the merge rule and the ``search_memory`` tool."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest

from agcore_lab import (
    Agent,
    AgentSession,
    GraphEntity,
    GraphRelation,
    InMemoryGraph,
    InvalidInputError,
    KnowledgeStore,
    MemoryRetriever,
    RetrievalStrategy,
    RetrieverConfig,
    ScoredEntity,
    ScriptedModel,
    ToolCall,
    search_memory_tool,
)


def _store() -> KnowledgeStore:
    store = KnowledgeStore()
    store.add("k-engine", "The analytical engine was a mechanical computer.")
    store.add("k-notes", "Ada wrote notes on the engine, the first program.")
    store.add("k-other", "Unrelated text about gardening.")
    return store


def _graph() -> InMemoryGraph:
    graph = InMemoryGraph()
    for entity in [
        GraphEntity(id="ada", name="Ada Lovelace", entity_type="person"),
        GraphEntity(id="engine", name="Analytical Engine", entity_type="machine"),
        GraphEntity(id="turing", name="Alan Turing", entity_type="person"),
        GraphEntity(id="garden", name="Garden", entity_type="place"),
    ]:
        graph.add_entity_sync(entity)
    graph.add_relation_sync(GraphRelation(source="ada", target="engine", weight=0.9))
    graph.add_relation_sync(GraphRelation(source="engine", target="turing", weight=0.5))
    return graph


def test_hybrid_merges_both_channels_by_the_documented_rule() -> None:
    retriever = MemoryRetriever(_store(), _graph())
    result = retriever.retrieve_sync("ada", k=10)
    assert result.strategy is RetrievalStrategy.Hybrid
    by_id = {item.id: item for item in result.items}
    assert by_id["k-notes"].kind == "knowledge"
    # seed "ada": keyword score 1.0 (name match) * graph_weight 0.5
    assert by_id["ada"].kind == "entity" and by_id["ada"].score() == pytest.approx(0.5)
    assert by_id["engine"].score() == pytest.approx(0.5 * 0.9)
    assert by_id["turing"].score() == pytest.approx(0.5 * 0.9 * 0.5)
    assert by_id["turing"].entity is not None
    assert by_id["turing"].entity.path == ["ada", "engine", "turing"]
    scores = [(-i.score(), i.kind, i.id) for i in result.items]
    assert scores == sorted(scores)
    assert "k-other" not in by_id and "garden" not in by_id


def test_ties_are_broken_by_kind_then_id() -> None:
    store = KnowledgeStore()
    store.add("b", "zebra")
    store.add("a", "zebra")
    graph = InMemoryGraph()
    graph.add_entity_sync(GraphEntity(id="zebra"))
    retriever = MemoryRetriever(store, graph, config=RetrieverConfig(graph_weight=1.0))
    result = retriever.retrieve_sync("zebra", k=10)
    assert [(i.kind, i.id) for i in result.items] == [
        ("entity", "zebra"),
        ("knowledge", "a"),
        ("knowledge", "b"),
    ]
    assert all(i.score() == pytest.approx(1.0) for i in result.items)


def test_dedup_keeps_the_best_score_and_k_cuts() -> None:
    graph = _graph()
    retriever = MemoryRetriever(_store(), graph, config=RetrieverConfig(graph_weight=1.0))
    # "engine" is both a seed (keyword score 1.0) and reached from ada (0.5 * 0.9)
    result = retriever.retrieve_sync("ada engine", k=20, strategy=RetrievalStrategy.GraphOnly)
    ids = [i.id for i in result.items]
    assert len(ids) == len(set(ids))
    engine = next(i for i in result.items if i.id == "engine")
    assert engine.score() == pytest.approx(0.5) and engine.entity is not None
    assert engine.entity.path == ["engine"]
    assert len(retriever.retrieve_sync("ada engine", k=1).items) == 1
    assert retriever.retrieve_sync("ada", k=0).items == []


def test_each_strategy() -> None:
    store, graph = _store(), _graph()
    knowledge = MemoryRetriever(store, graph, RetrievalStrategy.KnowledgeOnly)
    result = knowledge.retrieve_sync("engine")
    assert result.strategy is RetrievalStrategy.KnowledgeOnly
    assert {i.kind for i in result.items} == {"knowledge"}
    graph_only = MemoryRetriever(store, graph, RetrievalStrategy.GraphOnly)
    result = graph_only.retrieve_sync("engine")
    assert result.strategy is RetrievalStrategy.GraphOnly
    assert {i.kind for i in result.items} == {"entity"}
    hybrid = MemoryRetriever(store, graph).retrieve_sync("engine")
    assert {i.kind for i in hybrid.items} == {"entity", "knowledge"}


def test_hybrid_without_a_graph_reports_knowledge_only() -> None:
    result = MemoryRetriever(_store()).retrieve_sync("engine")
    assert result.strategy is RetrievalStrategy.KnowledgeOnly
    assert result.items and {i.kind for i in result.items} == {"knowledge"}


def test_graph_only_without_a_graph_and_bad_k_are_errors() -> None:
    with pytest.raises(InvalidInputError, match="GraphOnly"):
        MemoryRetriever(_store(), strategy=RetrievalStrategy.GraphOnly)
    with pytest.raises(InvalidInputError):
        MemoryRetriever(_store()).retrieve_sync("x", strategy=RetrievalStrategy.GraphOnly)
    with pytest.raises(InvalidInputError):
        MemoryRetriever(_store()).retrieve_sync("x", k=-1)
    with pytest.raises(ValueError):
        RetrieverConfig(graph_weight=2.0)


def test_graph_depth_zero_gives_seeds_only() -> None:
    retriever = MemoryRetriever(_store(), _graph(), config=RetrieverConfig(graph_depth=0))
    result = retriever.retrieve_sync("ada", strategy=RetrievalStrategy.GraphOnly)
    assert [i.id for i in result.items] == ["ada"]


class _SlowStore(KnowledgeStore):
    def __init__(self, spans: dict[str, tuple[float, float]]) -> None:
        super().__init__()
        self.spans = spans
        self.add("k", "slow engine")

    def search(self, query: str, k: int = 5, mode: Any = "auto") -> list[Any]:
        start = time.perf_counter()
        time.sleep(0.3)
        found = super().search(query, k, mode)
        self.spans["knowledge"] = (start, time.perf_counter())
        return found


class _SlowGraph:
    def __init__(self, spans: dict[str, tuple[float, float]]) -> None:
        self.spans = spans
        self.inner = _graph()

    async def find_by_keywords(
        self, keywords: str | Sequence[str], limit: int = 10
    ) -> list[ScoredEntity]:
        start = time.perf_counter()
        await asyncio.sleep(0.3)
        found = await self.inner.find_by_keywords(keywords, limit)
        self.spans["graph"] = (start, time.perf_counter())
        return found

    async def get_related(self, entity_id: str, **kwargs: Any) -> list[ScoredEntity]:
        return await self.inner.get_related(entity_id, **kwargs)


def test_both_channels_run_concurrently() -> None:
    spans: dict[str, tuple[float, float]] = {}
    retriever = MemoryRetriever(_SlowStore(spans), _SlowGraph(spans))  # type: ignore[arg-type]
    started = time.perf_counter()
    result = asyncio.run(retriever.retrieve("engine", k=10))
    elapsed = time.perf_counter() - started
    assert {i.kind for i in result.items} == {"entity", "knowledge"}
    (k0, k1), (g0, g1) = spans["knowledge"], spans["graph"]
    assert k0 < g1 and g0 < k1  # the two spans overlap
    assert elapsed < 0.55


def test_an_agent_calls_search_memory() -> None:
    retriever = MemoryRetriever(_store(), _graph())
    tool = search_memory_tool(retriever)
    assert tool.name == "search_memory"
    model = ScriptedModel(
        [ToolCall(name="search_memory", arguments={"query": "ada", "k": 3}), "Ada programmed it."]
    )
    session = AgentSession(Agent(name="mem", model=model, tools=[tool]))
    result = session.submit_turn_sync("What do you know about Ada?")
    assert result.reply == "Ada programmed it."
    lines = result.tool_results[0].text.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("[entity] ada 0.500: Ada Lovelace (person)")
    assert any("(path: ada > engine)" in line for line in lines)
    assert asyncio.run(tool.function(query="no-such-thing")) == "no results"  # type: ignore[misc]

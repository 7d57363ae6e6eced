"""Defect 8: public constructors and methods raise typed ``InvalidInputError`` (keeping
pydantic's error list and the original as ``__cause__``), never raw pydantic, ``TypeError``,
``AttributeError`` or ``RecursionError``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from agcore_lab import (
    Agent,
    AgentSession,
    DispatchConfig,
    ScriptedModel,
    SessionManager,
    SqliteStore,
    Usage,
)
from agcore_lab.agent.summary import SummaryConfig
from agcore_lab.checks import MAX_JSON_DEPTH
from agcore_lab.errors import InvalidInputError
from agcore_lab.kg import GraphEntity, GraphRelation, KnowledgeStore, TagConstraints
from agcore_lab.kg.retriever import RetrieverConfig
from agcore_lab.llm.usage import CostTracker, ModelPrice, PriceTable
from agcore_lab.rag import (
    Document,
    HashingEmbedding,
    InMemoryVectorStore,
    MockEmbedding,
    RagPipeline,
    RecursiveCharacterSplitter,
)

CONSTRUCTORS: dict[str, Callable[[], Any]] = {
    "Document": lambda: Document(id=3, content=None),
    "GraphEntity": lambda: GraphEntity(id=None),
    "GraphRelation": lambda: GraphRelation(source=1, target="b", type=[]),
    "SummaryConfig": lambda: SummaryConfig(trigger_token_ratio=7),
    "DispatchConfig": lambda: DispatchConfig(max_concurrency="many"),
    "TagConstraints": lambda: TagConstraints(max_tags_per_entity=0),
    "RetrieverConfig": lambda: RetrieverConfig(graph_weight=3.0),
    "ModelPrice": lambda: ModelPrice(prompt=-1, completion=0),
    "Usage": lambda: Usage(prompt_tokens="many"),
}


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
def test_constructor_validation_is_an_invalid_input_error(name: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        CONSTRUCTORS[name]()
    error = caught.value
    assert name in str(error) and error.errors
    assert all("loc" in e and "msg" in e for e in error.errors)
    assert isinstance(error.__cause__, ValidationError)


def _deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


def test_deeply_nested_json_is_refused_above_the_documented_depth() -> None:
    store = SqliteStore(":memory:")
    session = AgentSession(Agent(name="a", model=ScriptedModel()), store=store)
    session.session_memory.set("ok", _deep(MAX_JSON_DEPTH - 1))
    for levels in (MAX_JSON_DEPTH + 1, 5_000):
        with pytest.raises(InvalidInputError, match="nested more than"):
            session.session_memory.set("deep", _deep(levels))
    assert [e.key for e in store.memory_entries(session.session_id)] == ["ok"]
    with pytest.raises(InvalidInputError):
        Document(id="d", content="x", metadata={"x": _deep(5_000)})


@pytest.mark.parametrize(
    "make",
    [
        lambda: HashingEmbedding(dim=2.5),
        lambda: MockEmbedding(dim="3"),
        lambda: InMemoryVectorStore(dim=4.0),
        lambda: InMemoryVectorStore().search([1.0, 0.0], k="3"),
        lambda: InMemoryVectorStore().ids(filter=["a"]),
    ],
)
def test_float_or_str_sizes_and_list_filters_are_invalid_input(make: Callable[[], Any]) -> None:
    with pytest.raises(InvalidInputError):
        make()


def test_nan_in_document_metadata_is_refused_before_a_store_sees_it() -> None:
    with pytest.raises(InvalidInputError, match="NaN"):
        Document(id="d", content="x", metadata={"score": float("inf")})


def _session() -> AgentSession:
    return AgentSession(Agent(name="a", model=ScriptedModel(["ok"])), store=SqliteStore(":memory:"))


@pytest.mark.parametrize(
    "call",
    [
        lambda: Agent(name="a", max_tool_rounds="8"),
        lambda: AgentSession("not an agent", store=SqliteStore(":memory:")),  # type: ignore[arg-type]
        lambda: _session().session_memory.set("k", 1, "not a mapping"),  # type: ignore[arg-type]
        lambda: ScriptedModel(5),  # type: ignore[arg-type]
        lambda: ScriptedModel(latency=float("nan")),
        lambda: ScriptedModel(chunk_size=2.5),  # type: ignore[arg-type]
        lambda: RecursiveCharacterSplitter().split_text(5),
        lambda: RecursiveCharacterSplitter(separators=object()),
        lambda: HashingEmbedding().embed(5),  # type: ignore[arg-type]
        lambda: RagPipeline().ingest("text"),
        lambda: Document.from_file("a\x00b.md"),
        lambda: KnowledgeStore().add(5, 6),
        lambda: PriceTable({"gpt-x": 5}),
        lambda: CostTracker().record(5, 6),  # type: ignore[arg-type]
        lambda: SessionManager(SqliteStore(":memory:")).checkpointer.prune_sync(keep_last="2"),
        lambda: SessionManager(SqliteStore(":memory:")).checkpointer.prune_sync(older_than=60),
    ],
)
def test_misuse_of_the_public_api_is_an_invalid_input_error(call: Callable[[], Any]) -> None:
    with pytest.raises(InvalidInputError):
        call()


def test_knowledge_graph_misuse_and_session_ids_that_are_not_strings_are_typed() -> None:
    from agcore_lab import InMemoryGraph, SessionManager, from_triples

    graph = InMemoryGraph()
    with pytest.raises(InvalidInputError, match="expected a GraphEntity"):
        graph.add_entity_sync("ada")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="expected a GraphRelation"):
        graph.add_relation_sync("knows")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="pandas DataFrame"):
        from_triples([("a", "knows", "b")])  # type: ignore[arg-type]
    manager = SessionManager()
    for wrong in (["ses"], {"a": 1}, 3):
        with pytest.raises(InvalidInputError, match="a session id is a string"):
            manager.get_sync(wrong)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="a session id is a string"):
            manager.submit_turn_sync(wrong, "hi")  # type: ignore[arg-type]

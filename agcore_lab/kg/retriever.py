"""``MemoryRetriever``: one ranked list from the knowledge store and the knowledge graph.

Two channels, run concurrently (``asyncio.gather``; the store's search runs in a worker thread):

- **knowledge**: ``KnowledgeStore.search(query, knowledge_k, mode=knowledge_mode)``;
- **graph**: seed entities from ``find_by_keywords(query, limit=graph_k)``, then
  ``get_related(seed, depth=graph_depth, direction=direction)`` from each seed.

The merge rule:

1. a knowledge entry scores its search score, as it is (in ``[0, 1]``);
2. a seed entity scores ``graph_weight * keyword_score``; an entity reached from a seed scores
   ``graph_weight * keyword_score(seed) * walk_score`` (the walk score is the product of the
   relation weights along the path);
3. an entity found several times keeps its best score (and that path);
4. each channel keeps its best ``knowledge_k`` / ``graph_k`` items;
5. everything is sorted by score (descending), ties by kind (``"entity"`` before
   ``"knowledge"``) then id, and cut to ``k``.

``RetrievalResult.strategy`` is what actually ran: ``Hybrid`` without a graph runs (and
reports) ``KnowledgeOnly``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Literal

from pydantic import ConfigDict, Field

from agcore_lab.aio import run_sync
from agcore_lab.checks import CheckedModel, check_text
from agcore_lab.errors import InvalidInputError
from agcore_lab.kg.knowledge_store import KnowledgeEntry, KnowledgeStore, SearchMode
from agcore_lab.kg.types import RelationDirection, ScoredEntity
from agcore_lab.rag._validate import check_k

if TYPE_CHECKING:
    from agcore_lab.kg.base import KnowledgeGraph
    from agcore_lab.llm.tools import Tool

__all__ = [
    "MemoryRetriever",
    "RetrievalItem",
    "RetrievalResult",
    "RetrievalStrategy",
    "RetrieverConfig",
    "search_memory_tool",
]

ItemKind = Literal["entity", "knowledge"]


class RetrievalStrategy(StrEnum):
    """Which channels a retrieval uses."""

    Hybrid = "hybrid"
    """Knowledge store and graph (the default); knowledge only when there is no graph."""
    KnowledgeOnly = "knowledge_only"
    """The knowledge store alone."""
    GraphOnly = "graph_only"
    """The knowledge graph alone."""


class RetrieverConfig(CheckedModel):
    """How a :class:`MemoryRetriever` searches and merges.

    Args:
        graph_depth: How many steps to walk from each seed entity (0: the seeds only).
        knowledge_k: At most this many knowledge entries.
        graph_k: At most this many seed entities, and at most this many graph items.
        graph_weight: Multiplies every graph score (see the merge rule).
        knowledge_mode: The knowledge store's search mode.
        direction: Which relations the walk follows.
    """

    model_config = ConfigDict(frozen=True)

    graph_depth: int = Field(default=2, ge=0)
    knowledge_k: int = Field(default=5, ge=0)
    graph_k: int = Field(default=5, ge=0)
    graph_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    knowledge_mode: SearchMode = "auto"
    direction: RelationDirection = RelationDirection.Outgoing


@dataclass(frozen=True)
class RetrievalItem:
    """One result: a knowledge entry (``kind == "knowledge"``) or a scored entity
    (``kind == "entity"``)."""

    kind: ItemKind
    id: str
    value: float
    entry: KnowledgeEntry | None = None
    entity: ScoredEntity | None = None

    def score(self) -> float:
        """The merged score (see the module's merge rule)."""
        return self.value

    @property
    def text(self) -> str:
        """A one-line description: the entry's text, or the entity's name, type and
        description."""
        if self.entry is not None:
            return " ".join(self.entry.text.split())
        assert self.entity is not None
        entity = self.entity.entity
        line = f"{entity.name} ({entity.entity_type})"
        if entity.description:
            line += f": {' '.join(entity.description.split())}"
        return line

    def line(self) -> str:
        """``[kind] id score: text`` (with the path, for an entity reached by a walk)."""
        line = f"[{self.kind}] {self.id} {self.value:.3f}: {self.text}"
        if self.entity is not None and len(self.entity.path) > 1:
            line += f" (path: {' > '.join(self.entity.path)})"
        return line

    @classmethod
    def from_entry(cls, entry: KnowledgeEntry, score: float) -> RetrievalItem:
        return cls(kind="knowledge", id=entry.id, value=score, entry=entry)

    @classmethod
    def from_entity(cls, entity: ScoredEntity) -> RetrievalItem:
        return cls(kind="entity", id=entity.entity.id, value=entity.score, entity=entity)


@dataclass(frozen=True)
class RetrievalResult:
    """What a retrieval found, best first, and the strategy that actually ran."""

    items: list[RetrievalItem]
    strategy: RetrievalStrategy
    query: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.items)

    def to_text(self) -> str:
        """One line per item (see :meth:`RetrievalItem.line`)."""
        return "\n".join(item.line() for item in self.items)


def _order(item: RetrievalItem) -> tuple[float, str, str]:
    return (-item.value, item.kind, item.id)


class MemoryRetriever:
    """Searches a knowledge store and (optionally) a knowledge graph, and merges the results.

    Args:
        knowledge_store: The text knowledge.
        knowledge_graph: The entity graph; without one, ``Hybrid`` runs ``KnowledgeOnly``.
        strategy: The default strategy of :meth:`retrieve`.
        config: Depths, sizes and weights.

    Raises:
        InvalidInputError: ``GraphOnly`` without a graph.
    """

    def __init__(
        self,
        knowledge_store: KnowledgeStore,
        knowledge_graph: KnowledgeGraph | None = None,
        strategy: RetrievalStrategy = RetrievalStrategy.Hybrid,
        config: RetrieverConfig | None = None,
    ) -> None:
        self.knowledge_store = knowledge_store
        self.knowledge_graph = knowledge_graph
        self.strategy = RetrievalStrategy(strategy)
        self.config = config or RetrieverConfig()
        self._effective(self.strategy)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(strategy={self.strategy.value}, "
            f"graph={self.knowledge_graph is not None})"
        )

    def _effective(self, strategy: RetrievalStrategy) -> RetrievalStrategy:
        if self.knowledge_graph is None:
            if strategy is RetrievalStrategy.GraphOnly:
                raise InvalidInputError("the GraphOnly strategy needs a knowledge_graph")
            return RetrievalStrategy.KnowledgeOnly
        return strategy

    async def retrieve(
        self, query: str, k: int = 5, strategy: RetrievalStrategy | None = None
    ) -> RetrievalResult:
        """The ``k`` best items for ``query`` (see the module's merge rule).

        Raises:
            InvalidInputError: ``k`` is negative, or ``GraphOnly`` without a graph.
        """
        k = check_k(k)
        check_text(query, "query")
        ran = self._effective(RetrievalStrategy(strategy or self.strategy))
        channels = []
        if ran is not RetrievalStrategy.GraphOnly:
            channels.append(self._knowledge_channel(query))
        if ran is not RetrievalStrategy.KnowledgeOnly:
            channels.append(self._graph_channel(query))
        found = await asyncio.gather(*channels)
        items = sorted((item for channel in found for item in channel), key=_order)
        return RetrievalResult(items=items[:k], strategy=ran, query=query)

    def retrieve_sync(
        self, query: str, k: int = 5, strategy: RetrievalStrategy | None = None
    ) -> RetrievalResult:
        return run_sync(self.retrieve(query, k, strategy))

    async def _knowledge_channel(self, query: str) -> list[RetrievalItem]:
        config = self.config
        if config.knowledge_k == 0:
            return []
        found = await asyncio.to_thread(
            self.knowledge_store.search, query, config.knowledge_k, config.knowledge_mode
        )
        return [RetrievalItem.from_entry(s.entry, s.score) for s in found]

    async def _graph_channel(self, query: str) -> list[RetrievalItem]:
        graph, config = self.knowledge_graph, self.config
        assert graph is not None
        if config.graph_k == 0 or not query.strip():
            return []
        seeds = await graph.find_by_keywords(query, limit=config.graph_k)
        walks = await asyncio.gather(
            *(
                graph.get_related(
                    seed.entity.id, depth=config.graph_depth, direction=config.direction
                )
                for seed in seeds
            )
        )
        best: dict[str, ScoredEntity] = {}

        def keep(found: ScoredEntity) -> None:
            old = best.get(found.entity.id)
            if old is None or found.score > old.score:
                best[found.entity.id] = found

        for seed, related in zip(seeds, walks, strict=True):
            base = config.graph_weight * seed.score
            keep(seed.model_copy(update={"score": base}))
            for hit in related:
                keep(hit.model_copy(update={"score": base * hit.score}))
        items = sorted((RetrievalItem.from_entity(s) for s in best.values()), key=_order)
        return items[: config.graph_k]


def search_memory_tool(retriever: MemoryRetriever, *, name: str = "search_memory") -> Tool:
    """A tool ``search_memory(query: str, k: int = 5) -> str`` an ``Agent`` can be given.

    It returns one line per item (``[kind] id score: text``), or ``"no results"``.
    """
    from agcore_lab.llm.tools import Tool

    async def search_memory(query: str, k: int = 5) -> str:
        """Search the knowledge store and knowledge graph for what is known about a topic.

        Args:
            query: Keywords or a question.
            k: How many results to return.
        """
        result = await retriever.retrieve(query, max(0, min(k, 50)))
        return result.to_text() or "no results"

    return Tool.from_function(search_memory, name=name)

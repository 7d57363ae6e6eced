"""Knowledge graphs: typed entities and weighted, typed relations, built on networkx.

- :class:`KnowledgeGraph`: the protocol (async methods with ``*_sync`` twins);
- :class:`InMemoryGraph`, :class:`SqliteGraph` and :class:`PostgresGraph`: the backends, all
  passing :mod:`agcore_lab.testing.graph_conformance` (:func:`open_graph` picks the persisted
  one of a store's backend);
- :func:`from_triples`: a graph from a ``source, relation, target[, weight]`` DataFrame;
- :class:`KnowledgeStore`: text knowledge with keyword (TF-IDF) and semantic search;
- :class:`MemoryRetriever`: hybrid retrieval over both, and :func:`search_memory_tool`.

Importing this package imports networkx (``import agcore_lab`` does not).
"""

from agcore_lab.kg.base import KnowledgeGraph
from agcore_lab.kg.knowledge_store import KnowledgeEntry, KnowledgeStore, ScoredEntry
from agcore_lab.kg.memory_graph import InMemoryGraph, from_triples
from agcore_lab.kg.open_graph import open_graph
from agcore_lab.kg.postgres_graph import PostgresGraph
from agcore_lab.kg.retriever import (
    MemoryRetriever,
    RetrievalItem,
    RetrievalResult,
    RetrievalStrategy,
    RetrieverConfig,
    search_memory_tool,
)
from agcore_lab.kg.sqlite_graph import SqliteGraph
from agcore_lab.kg.types import (
    EntityNotFoundError,
    GraphEntity,
    GraphRelation,
    RelationDirection,
    RelationKey,
    ScoredEntity,
    TagConstraints,
)
from agcore_lab.kg.walk import walk

__all__ = [
    "EntityNotFoundError",
    "GraphEntity",
    "GraphRelation",
    "InMemoryGraph",
    "KnowledgeEntry",
    "KnowledgeGraph",
    "KnowledgeStore",
    "MemoryRetriever",
    "PostgresGraph",
    "RelationDirection",
    "RelationKey",
    "RetrievalItem",
    "RetrievalResult",
    "RetrievalStrategy",
    "RetrieverConfig",
    "ScoredEntity",
    "ScoredEntry",
    "SqliteGraph",
    "TagConstraints",
    "from_triples",
    "open_graph",
    "search_memory_tool",
    "walk",
]

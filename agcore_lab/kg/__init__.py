"""Knowledge graphs: typed entities and weighted, typed relations, built on networkx.

- :class:`KnowledgeGraph`: the protocol (async methods with ``*_sync`` twins);
- :class:`InMemoryGraph` and :class:`SqliteGraph`: the two backends, both passing
  :mod:`agcore_lab.testing.graph_conformance`;
- :func:`from_triples`: a graph from a ``source, relation, target[, weight]`` DataFrame.

Importing this package imports networkx (``import agcore_lab`` does not).
"""

from agcore_lab.kg.base import KnowledgeGraph
from agcore_lab.kg.memory_graph import InMemoryGraph, from_triples
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
    "KnowledgeGraph",
    "RelationDirection",
    "RelationKey",
    "ScoredEntity",
    "SqliteGraph",
    "TagConstraints",
    "from_triples",
    "walk",
]

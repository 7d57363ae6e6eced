"""The ``KnowledgeGraph`` protocol: entity-level memory beside document-level memory.

Every method that reads or writes the graph is ``async`` and has a ``*_sync`` twin (one line
through :func:`agcore_lab.aio.run_sync`). Every backend must pass the conformance suite in
:mod:`agcore_lab.testing.graph_conformance`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from agcore_lab.kg.types import (
    GraphEntity,
    GraphRelation,
    RelationDirection,
    ScoredEntity,
    TagConstraints,
)

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

__all__ = ["KnowledgeGraph"]


@runtime_checkable
class KnowledgeGraph(Protocol):
    """A graph of typed entities and weighted, typed relations.

    Errors: an unknown entity id where one must exist raises
    :class:`~agcore_lab.kg.types.EntityNotFoundError` (a ``NotFoundError``) naming it; bad
    arguments (too many tags, negative depth, a malformed triples table) raise
    ``InvalidInputError``. A failed call leaves the graph as it was.
    """

    tag_constraints: TagConstraints

    async def add_entity(self, entity: GraphEntity) -> GraphEntity:
        """Add ``entity``, or replace the one with its id (its relations are kept)."""
        ...

    async def get_entity(self, entity_id: str) -> GraphEntity | None:
        """The entity with this id, or ``None``."""
        ...

    async def remove_entity(self, entity_id: str) -> bool:
        """Remove the entity and every relation to or from it; ``False`` if it was not there."""
        ...

    async def add_relation(self, relation: GraphRelation) -> GraphRelation:
        """Add ``relation``, or update the one with its ``(source, relation_type, target)``.

        Raises:
            EntityNotFoundError: ``source`` or ``target`` is not in the graph.
        """
        ...

    async def remove_relation(self, source: str, relation_type: str, target: str) -> bool:
        """Remove one relation; ``False`` if it was not there."""
        ...

    async def get_related(
        self,
        entity_id: str,
        depth: int = 1,
        direction: RelationDirection = RelationDirection.Outgoing,
        relation_types: Iterable[str] | None = None,
    ) -> list[ScoredEntity]:
        """Entities reachable from ``entity_id`` in at most ``depth`` steps, best first.

        A breadth-first walk (see :func:`agcore_lab.kg.walk.walk`): the score of a path is the
        product of its relation weights; the first arrival at an entity wins (among arrivals
        at the same depth, the higher score); ``depth=0`` returns nothing.

        Raises:
            EntityNotFoundError: ``entity_id`` is not in the graph.
            InvalidInputError: ``depth`` is negative.
        """
        ...

    async def find_by_keywords(
        self, keywords: str | Sequence[str], limit: int = 10
    ) -> list[ScoredEntity]:
        """Entities whose name, type, description or tags contain the keywords, best first."""
        ...

    async def find_tags(self, tags: Iterable[str], match_all: bool = False) -> list[GraphEntity]:
        """Entities with any (or, with ``match_all``, every) of ``tags``, sorted by id."""
        ...

    async def set_entity_tags(self, entity_id: str, tags: Iterable[str]) -> GraphEntity:
        """Replace the entity's tags; return the updated entity."""
        ...

    async def import_triples(self, triples: pd.DataFrame) -> int:
        """Add the relations of a ``source, relation, target[, weight]`` table (creating
        missing entities); return how many rows were imported."""
        ...

    def add_entity_sync(self, entity: GraphEntity) -> GraphEntity: ...

    def get_entity_sync(self, entity_id: str) -> GraphEntity | None: ...

    def remove_entity_sync(self, entity_id: str) -> bool: ...

    def add_relation_sync(self, relation: GraphRelation) -> GraphRelation: ...

    def remove_relation_sync(self, source: str, relation_type: str, target: str) -> bool: ...

    def get_related_sync(
        self,
        entity_id: str,
        depth: int = 1,
        direction: RelationDirection = RelationDirection.Outgoing,
        relation_types: Iterable[str] | None = None,
    ) -> list[ScoredEntity]: ...

    def find_by_keywords_sync(
        self, keywords: str | Sequence[str], limit: int = 10
    ) -> list[ScoredEntity]: ...

    def find_tags_sync(self, tags: Iterable[str], match_all: bool = False) -> list[GraphEntity]: ...

    def set_entity_tags_sync(self, entity_id: str, tags: Iterable[str]) -> GraphEntity: ...

    def import_triples_sync(self, triples: pd.DataFrame) -> int: ...

    def to_networkx(self) -> nx.MultiDiGraph:
        """A copy of the graph: node attributes are the entity fields, edges are keyed by
        relation type with ``weight``, ``relation_type`` and ``properties``."""
        ...

    def to_dataframes(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(entities, relations)`` as two flat DataFrames."""
        ...

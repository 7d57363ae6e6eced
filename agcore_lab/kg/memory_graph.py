"""``InMemoryGraph``: a :class:`~agcore_lab.kg.base.KnowledgeGraph` on a networkx
``MultiDiGraph``, with a reverse index from tags to entities.

:class:`~agcore_lab.kg.sqlite_graph.SqliteGraph` subclasses it: every write goes through one of
the ``_persist_*`` hooks (no-ops here) before memory is changed, so a failed write leaves the
graph as it was.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING

import networkx as nx
from pydantic import JsonValue, TypeAdapter

from agcore_lab.aio import run_sync
from agcore_lab.errors import InvalidInputError
from agcore_lab.kg import _frames
from agcore_lab.kg._adjacency import BestWeights
from agcore_lab.kg._load import add_edges, add_nodes
from agcore_lab.kg._records import new_entities
from agcore_lab.kg._search import KeywordIndex
from agcore_lab.kg.types import (
    EntityNotFoundError,
    GraphEntity,
    GraphRelation,
    RelationDirection,
    RelationKey,
    ScoredEntity,
    TagConstraints,
)
from agcore_lab.kg.walk import checked, scored, search, walk_untyped

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EdgeRow", "InMemoryGraph", "from_triples"]

EdgeRow = tuple[str, str, str, float, dict[str, JsonValue]]
"""``(source, relation_type, target, weight, properties)``: one relation as loaded."""
_RELATIONS = TypeAdapter(list[GraphRelation])
_ENDS = itemgetter(0, 2)  # (source, target) of a triple or an EdgeRow


class InMemoryGraph:
    """A knowledge graph held in memory.

    Args:
        tag_constraints: Limits on tags (at most 8 per entity by default).

    Example:
        >>> g = InMemoryGraph()
        >>> _ = g.add_entity_sync(GraphEntity(id="ada", entity_type="person"))
        >>> _ = g.add_entity_sync(GraphEntity(id="engine", entity_type="machine"))
        >>> _ = g.add_relation_sync(GraphRelation(source="ada", target="engine",
        ...                                       relation_type="programmed", weight=0.9))
        >>> [(r.entity.id, r.score, r.path) for r in g.get_related_sync("ada")]
        [('engine', 0.9, ['ada', 'engine'])]

    Notes:
        Thread-safe: one lock guards every read and write. The async methods do no I/O of
        their own and never yield to the event loop.
    """

    def __init__(self, *, tag_constraints: TagConstraints | None = None) -> None:
        self.tag_constraints = tag_constraints or TagConstraints()
        self._lock = threading.RLock()
        self._entities: dict[str, GraphEntity] = {}
        self._graph = nx.MultiDiGraph()
        self._tags: dict[str, set[str]] = {}
        self._keywords = KeywordIndex()
        # Per direction (outgoing, incoming): the best weight per neighbour, for walks that
        # follow every relation type; a node's row is made when a walk first reaches it.
        self._best: dict[bool, BestWeights] = {}
        # What a walk in each direction reads: the rows of _best, made with them.
        self._sides: dict[RelationDirection, list[dict[str, dict[str, float]]]] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(entities={len(self)}, relations={self.relation_count})"

    def __len__(self) -> int:
        return len(self._entities)

    def __contains__(self, entity_id: object) -> bool:
        return entity_id in self._entities

    @property
    def relation_count(self) -> int:
        """How many relations the graph holds."""
        return int(self._graph.number_of_edges())

    # -- memory -----------------------------------------------------------------------------

    def _reset(self, entities: Iterable[GraphEntity], relations: Iterable[EdgeRow]) -> None:
        self._entities, self._graph, self._tags = {}, nx.MultiDiGraph(), {}
        self._keywords.clear()
        self._best, self._sides = {}, {}
        for entity in entities:
            self._put_entity(entity)
        # A relation's ends are entities (the stores keep it so; a stray end becomes a node,
        # as networkx's add_edges_from would make it).
        rows = list(relations)
        add_nodes(self._graph, chain.from_iterable(map(_ENDS, rows)))
        add_edges(
            self._graph,
            (
                (source, target, rtype, {"weight": weight, "properties": props})
                if props
                else (source, target, rtype, {"weight": weight})
                for source, rtype, target, weight, props in rows
            ),
        )

    def _put_entity(self, entity: GraphEntity) -> None:
        old = self._entities.get(entity.id)
        if old is not None:
            self._untag(old)
        self._entities[entity.id] = entity
        self._keywords.put(entity)
        self._graph.add_node(entity.id)
        for tag in entity.tags:
            self._tags.setdefault(tag, set()).add(entity.id)

    def _untag(self, entity: GraphEntity) -> None:
        for tag in entity.tags:
            owners = self._tags.get(tag)
            if owners is not None:
                owners.discard(entity.id)
                if not owners:
                    del self._tags[tag]

    def _put_relation(self, relation: GraphRelation) -> None:
        # An edge holds its weight, and its properties only when there are some: a bulk
        # import then stores one small dict per edge, and relations are built when asked for.
        source, target, key = relation.source, relation.target, relation.relation_type
        self._graph.add_edge(source, target, key=key, weight=relation.weight)
        data = self._graph._succ[source][target][key]
        if relation.properties:
            data["properties"] = dict(relation.properties)
        else:
            data.pop("properties", None)
        for best in self._best.values():
            best.put_pair(source, target)

    def _relations(self) -> list[GraphRelation]:
        return _RELATIONS.validate_python(
            [
                {
                    "source": source,
                    "target": target,
                    "relation_type": key,
                    "weight": data["weight"],
                    "properties": data.get("properties", {}),
                }
                for source, target, key, data in self._graph.edges(keys=True, data=True)
            ]
        )

    # -- persistence hooks (SqliteGraph writes its file here) ----------------------------

    def _persist_upserts(
        self, entities: Sequence[GraphEntity], relations: Sequence[GraphRelation]
    ) -> None:
        """Store these entities and relations (adding or replacing), all or nothing."""

    def _persist_import(
        self, entities: Sequence[GraphEntity], weights: Mapping[RelationKey, float]
    ) -> None:
        """Store an import: new entities, and relations added or given a new weight (a
        relation already in the graph keeps its properties), all or nothing."""

    def _persist_entity_removal(self, entity_id: str) -> None:
        """Delete the entity, its tags and its relations."""

    def _persist_relation_removal(self, key: RelationKey) -> None:
        """Delete one relation."""

    # -- checks -----------------------------------------------------------------------------

    def _check_tags(self, entity: GraphEntity) -> None:
        if not isinstance(entity, GraphEntity):
            raise InvalidInputError(
                f"expected a GraphEntity, got {type(entity).__name__}; make one with "
                "GraphEntity(id=..., name=..., entity_type=...)"
            )
        limit = self.tag_constraints.max_tags_per_entity
        if len(entity.tags) > limit:
            raise InvalidInputError(
                f"entity {entity.id!r} has {len(entity.tags)} tags; at most {limit} are allowed "
                "(raise TagConstraints.max_tags_per_entity or drop some)",
                entity_id=entity.id,
            )

    def _require(self, entity_id: str, role: str = "entity") -> GraphEntity:
        entity = self._entities.get(entity_id)
        if entity is None:
            raise EntityNotFoundError(
                f"{role} {entity_id!r} is not in the graph; add it with add_entity first",
                entity_id=entity_id,
            )
        return entity

    # -- the KnowledgeGraph protocol ----------------------------------------------------------

    async def add_entity(self, entity: GraphEntity) -> GraphEntity:
        """Add ``entity``, or replace the one with its id (its relations are kept).

        Raises:
            InvalidInputError: More tags than ``tag_constraints`` allow.
        """
        with self._lock:
            self._check_tags(entity)
            self._persist_upserts([entity], [])
            self._put_entity(entity)
            return entity

    async def get_entity(self, entity_id: str) -> GraphEntity | None:
        """The entity with this id, or ``None``."""
        with self._lock:
            return self._entities.get(entity_id)

    async def remove_entity(self, entity_id: str) -> bool:
        """Remove the entity and every relation to or from it; ``False`` if it was not there."""
        with self._lock:
            entity = self._entities.get(entity_id)
            if entity is None:
                return False
            self._persist_entity_removal(entity_id)
            self._untag(entity)
            self._keywords.discard(entity_id)
            del self._entities[entity_id]
            for best in self._best.values():
                best.remove_node(entity_id)  # before networkx forgets its neighbours
            self._graph.remove_node(entity_id)
            return True

    async def add_relation(self, relation: GraphRelation) -> GraphRelation:
        """Add ``relation``, or update the one with its ``(source, relation_type, target)``.

        Raises:
            EntityNotFoundError: ``source`` or ``target`` is not in the graph (it names which).
        """
        if not isinstance(relation, GraphRelation):
            raise InvalidInputError(
                f"expected a GraphRelation, got {type(relation).__name__}; make one with "
                "GraphRelation(source=..., relation_type=..., target=...)"
            )
        with self._lock:
            self._require(relation.source, "relation source")
            self._require(relation.target, "relation target")
            self._persist_upserts([], [relation])
            self._put_relation(relation)
            return relation

    async def remove_relation(self, source: str, relation_type: str, target: str) -> bool:
        """Remove one relation; ``False`` if it was not there."""
        with self._lock:
            if not self._graph.has_edge(source, target, key=relation_type):
                return False
            self._persist_relation_removal((source, relation_type, target))
            self._graph.remove_edge(source, target, key=relation_type)
            for best in self._best.values():
                best.put_pair(source, target)
            return True

    async def get_related(
        self,
        entity_id: str,
        depth: int = 1,
        direction: RelationDirection = RelationDirection.Outgoing,
        relation_types: Iterable[str] | None = None,
    ) -> list[ScoredEntity]:
        """Entities reachable from ``entity_id`` in at most ``depth`` steps, best first.

        See :func:`agcore_lab.kg.walk.walk` for the rules.

        Raises:
            EntityNotFoundError: ``entity_id`` is not in the graph.
            InvalidInputError: ``depth`` is negative.
        """
        with self._lock:
            self._require(entity_id)
            if relation_types is not None:
                found, paths = search(self._graph, entity_id, depth, direction, relation_types)
                return scored(self._entities, found, paths)
            direction = checked(depth, direction)
            sides = self._sides.get(direction)
            if sides is None:
                sides = self._sides[direction] = self._sides_of(direction)
            return walk_untyped(sides, self._entities, entity_id, depth)

    def _sides_of(self, direction: RelationDirection) -> list[dict[str, dict[str, float]]]:
        """The best-weight rows a walk in this direction reads (outgoing, then incoming)."""
        sides = []
        if direction is not RelationDirection.Incoming:
            sides.append(self._best_weights(incoming=False))
        if direction is not RelationDirection.Outgoing:
            sides.append(self._best_weights(incoming=True))
        return sides

    def _best_weights(self, *, incoming: bool) -> dict[str, dict[str, float]]:
        best = self._best.get(incoming)
        if best is None:
            best = self._best[incoming] = BestWeights(self._graph, incoming=incoming)
        return best.weights

    async def find_by_keywords(
        self, keywords: str | Sequence[str], limit: int = 10
    ) -> list[ScoredEntity]:
        """Entities matching the keywords, best first (see
        :func:`agcore_lab.kg._search.match_keywords` for the scoring: a name matching every
        keyword scores 1). Answered from a trigram index built on the first search and kept
        up to date on writes.

        Raises:
            InvalidInputError: ``limit`` is negative.
        """
        with self._lock:
            return self._keywords.search(self._entities, keywords, limit)

    async def find_tags(self, tags: Iterable[str], match_all: bool = False) -> list[GraphEntity]:
        """Entities with any (or, with ``match_all``, every) of ``tags``, sorted by id.

        No tags finds nothing.
        """
        wanted = list(dict.fromkeys(tags))
        if not wanted:
            return []
        with self._lock:
            owners = [self._tags.get(tag, set()) for tag in wanted]
            ids = set.intersection(*owners) if match_all else set.union(*owners)
            return [self._entities[i] for i in sorted(ids)]

    async def set_entity_tags(self, entity_id: str, tags: Iterable[str]) -> GraphEntity:
        """Replace the entity's tags; return the updated entity.

        Raises:
            EntityNotFoundError: No such entity.
            InvalidInputError: More tags than ``tag_constraints`` allow.
        """
        with self._lock:
            entity = self._require(entity_id)
            updated = GraphEntity.model_validate({**entity.model_dump(), "tags": list(tags)})
            return await self.add_entity(updated)

    async def import_triples(self, triples: pd.DataFrame) -> int:
        """Add the relations of a ``source, relation, target[, weight]`` table.

        Missing entities are created (``name`` = id, ``entity_type`` = ``"entity"``); a triple
        already in the graph gets the new weight and keeps its properties. All rows are
        checked before anything is written; the import is one write.

        Returns:
            How many rows were imported.

        Raises:
            InvalidInputError: A column is missing or a row is malformed (named in the message).

        Example:
            >>> import pandas as pd
            >>> g = InMemoryGraph()
            >>> g.import_triples_sync(pd.DataFrame(
            ...     {"source": ["a"], "relation": ["knows"], "target": ["b"]}))
            1
            >>> len(g)
            2
        """
        return self._import(_frames.parse_triples(triples))

    def _import(self, parsed: list[_frames.Triple]) -> int:
        with self._lock:
            entities = self._entities
            ends = dict.fromkeys(chain.from_iterable(map(_ENDS, parsed)))
            # The ends are checked non-empty strings: the new entities need no validation.
            new = new_entities([end for end in ends if end not in entities])
            weights = {(s, r, t): w for s, r, t, w in parsed}  # the last row of a triple wins
            self._persist_import(new, weights)
            for entity in new:
                entities[entity.id] = entity
                self._keywords.put(entity)
            add_nodes(self._graph, ends)
            # An edge already there only gets the new weight (it keeps its properties).
            add_edges(self._graph, ((s, t, r, {"weight": w}) for (s, r, t), w in weights.items()))
            for best in self._best.values():
                best.put_pairs(dict.fromkeys((s, t) for s, _, t in weights))
        return len(parsed)

    # -- sync twins -------------------------------------------------------------------------

    def add_entity_sync(self, entity: GraphEntity) -> GraphEntity:
        """Blocking :meth:`add_entity`."""
        return run_sync(self.add_entity(entity))

    def get_entity_sync(self, entity_id: str) -> GraphEntity | None:
        """Blocking :meth:`get_entity`."""
        return run_sync(self.get_entity(entity_id))

    def remove_entity_sync(self, entity_id: str) -> bool:
        """Blocking :meth:`remove_entity`."""
        return run_sync(self.remove_entity(entity_id))

    def add_relation_sync(self, relation: GraphRelation) -> GraphRelation:
        """Blocking :meth:`add_relation`."""
        return run_sync(self.add_relation(relation))

    def remove_relation_sync(self, source: str, relation_type: str, target: str) -> bool:
        """Blocking :meth:`remove_relation`."""
        return run_sync(self.remove_relation(source, relation_type, target))

    def get_related_sync(
        self,
        entity_id: str,
        depth: int = 1,
        direction: RelationDirection = RelationDirection.Outgoing,
        relation_types: Iterable[str] | None = None,
    ) -> list[ScoredEntity]:
        """Blocking :meth:`get_related`."""
        return run_sync(self.get_related(entity_id, depth, direction, relation_types))

    def find_by_keywords_sync(
        self, keywords: str | Sequence[str], limit: int = 10
    ) -> list[ScoredEntity]:
        """Blocking :meth:`find_by_keywords`."""
        return run_sync(self.find_by_keywords(keywords, limit))

    def find_tags_sync(self, tags: Iterable[str], match_all: bool = False) -> list[GraphEntity]:
        """Blocking :meth:`find_tags`."""
        return run_sync(self.find_tags(tags, match_all))

    def set_entity_tags_sync(self, entity_id: str, tags: Iterable[str]) -> GraphEntity:
        """Blocking :meth:`set_entity_tags`."""
        return run_sync(self.set_entity_tags(entity_id, tags))

    def import_triples_sync(self, triples: pd.DataFrame) -> int:
        """Blocking :meth:`import_triples`."""
        return run_sync(self.import_triples(triples))

    # -- analysis ---------------------------------------------------------------------------

    def to_networkx(self) -> nx.MultiDiGraph:
        """A copy of the graph as a networkx ``MultiDiGraph``.

        Node attributes are the entity fields (``name``, ``entity_type``, ``description``,
        ``tags``, ``properties``); edges are keyed by relation type and carry ``weight``,
        ``relation_type`` and ``properties``. Changing the copy does not change the graph.
        """
        with self._lock:
            return _frames.to_networkx(list(self._entities.values()), self._relations())

    def to_dataframes(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(entities, relations)`` as two flat DataFrames.

        ``entities`` has the columns id, name, entity_type, description, tags, properties
        (sorted by id); ``relations`` has source, relation_type, target, weight, properties.
        """
        with self._lock:
            return _frames.to_dataframes(list(self._entities.values()), self._relations())


def from_triples(
    triples: pd.DataFrame, *, tag_constraints: TagConstraints | None = None
) -> InMemoryGraph:
    """A new :class:`InMemoryGraph` holding the relations of a triples table.

    See :meth:`InMemoryGraph.import_triples` for the table's format.
    """
    graph = InMemoryGraph(tag_constraints=tag_constraints)
    graph._import(_frames.parse_triples(triples))  # no I/O: safe on any thread or loop
    return graph

"""``SqliteGraph``: the in-memory graph, persisted in a ``SqliteStore`` file.

The namespace's rows (see :mod:`agcore_lab.store._graph`) are loaded into networkx once, when
the graph is opened; walks and searches then run in memory. Every write goes to SQLite first,
in one transaction, and only then to memory: a failed write leaves both as they were.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from agcore_lab.errors import InvalidInputError
from agcore_lab.kg.memory_graph import EdgeRow, InMemoryGraph
from agcore_lab.kg.types import GraphEntity, GraphRelation, RelationKey, TagConstraints
from agcore_lab.store._graph import (
    EntityRow,
    RelationRow,
    delete_entity,
    delete_relation,
    read_graph,
    upsert_entities,
    upsert_relations,
)
from agcore_lab.store.sqlite import SqliteStore

__all__ = ["SqliteGraph"]


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _entity_row(entity: GraphEntity) -> EntityRow:
    return (
        entity.id,
        entity.name,
        entity.entity_type,
        entity.description,
        _json(entity.properties),
        list(entity.tags),
    )


def _relation_row(relation: GraphRelation) -> RelationRow:
    return (*relation.key, relation.weight, _json(relation.properties))


class SqliteGraph(InMemoryGraph):
    """A :class:`~agcore_lab.kg.base.KnowledgeGraph` kept in a SQLite file.

    Args:
        store: The :class:`~agcore_lab.store.sqlite.SqliteStore` whose file holds the graph
            (its connection and lock are shared).
        namespace: Several graphs can live in one file under different names.
        tag_constraints: Limits on tags (at most 8 per entity by default).

    Raises:
        StorageError: The namespace cannot be read.

    Example:
        >>> db = SqliteStore(":memory:")
        >>> graph = SqliteGraph(db, "people")
        >>> _ = graph.add_entity_sync(GraphEntity(id="ada"))
        >>> len(SqliteGraph(db, "people"))  # a second view of the same file sees it
        1

    Notes:
        Thread-safe, and several processes may share the file: each write is a transaction.
        Another process's writes are seen after :meth:`reload`. The async methods write
        SQLite in place (short local transactions), as the store's own methods do. The tables
        are flat: ``store.read_dataframe("select * from kg_relations")`` is useful as it is.
    """

    def __init__(
        self,
        store: SqliteStore,
        namespace: str = "default",
        *,
        tag_constraints: TagConstraints | None = None,
    ) -> None:
        if not namespace:
            raise InvalidInputError("namespace must not be empty")
        super().__init__(tag_constraints=tag_constraints)
        self.store = store
        self.namespace = namespace
        self.reload()

    def __repr__(self) -> str:
        return (
            f"SqliteGraph({self.store.path!r}, namespace={self.namespace!r}, "
            f"entities={len(self)}, relations={self.relation_count})"
        )

    def reload(self) -> None:
        """Read the namespace from the file again (to see other processes' writes)."""
        with self._lock:
            with self.store.transaction(write=False) as conn:
                entity_rows, relation_rows = read_graph(conn, self.namespace)
            entities = [
                GraphEntity(
                    id=eid,
                    name=name,
                    entity_type=etype,
                    description=desc,
                    tags=list(tags),
                    properties=json.loads(props),
                )
                for eid, name, etype, desc, props, tags in entity_rows
            ]
            # The rows were valid when written: no model per relation, and no JSON parse for
            # the usual empty properties.
            relations: list[EdgeRow] = [
                (source, rtype, target, weight, {} if props == "{}" else json.loads(props))
                for source, rtype, target, weight, props in relation_rows
            ]
            self._reset(entities, relations)

    def _persist_upserts(
        self, entities: Sequence[GraphEntity], relations: Sequence[GraphRelation]
    ) -> None:
        try:
            entity_rows = [_entity_row(e) for e in entities]
            relation_rows = [_relation_row(r) for r in relations]
        except ValueError as exc:
            raise InvalidInputError(f"properties are not JSON-serializable: {exc}") from exc
        with self.store.transaction() as conn:
            upsert_entities(conn, self.namespace, entity_rows)
            upsert_relations(conn, self.namespace, relation_rows)

    def _persist_import(
        self, entities: Sequence[GraphEntity], weights: Mapping[RelationKey, float]
    ) -> None:
        edges = self._graph._succ
        relation_rows: list[RelationRow] = []
        for (source, rtype, target), weight in weights.items():
            old = edges.get(source, {}).get(target, {}).get(rtype)
            props = old.get("properties") if old else None
            relation_rows.append((source, rtype, target, weight, _json(props) if props else "{}"))
        entity_rows = [_entity_row(e) for e in entities]
        with self.store.transaction() as conn:
            upsert_entities(conn, self.namespace, entity_rows)
            upsert_relations(conn, self.namespace, relation_rows)

    def _persist_entity_removal(self, entity_id: str) -> None:
        with self.store.transaction() as conn:
            delete_entity(conn, self.namespace, entity_id)

    def _persist_relation_removal(self, key: RelationKey) -> None:
        with self.store.transaction() as conn:
            delete_relation(conn, self.namespace, *key)

"""``PostgresGraph``: the in-memory knowledge graph, persisted on a PostgreSQL server.

The twin of :class:`~agcore_lab.kg.sqlite_graph.SqliteGraph` for a
:class:`~agcore_lab.store.postgres.PostgresStore`: the same flat tables (``kg_entities``,
``kg_entity_tags``, ``kg_relations``, schema 5 of :mod:`agcore_lab.store._pg_schema`) written
by the same statements (:mod:`agcore_lab.store._graph`, through the PostgreSQL dialect layer).
The namespace is loaded into networkx once, when the graph is opened; walks and searches run
in memory; every write goes to the server first, in one transaction.
"""

from __future__ import annotations

from agcore_lab.kg.sqlite_graph import SqliteGraph
from agcore_lab.kg.types import TagConstraints
from agcore_lab.rag.postgres_vectors import postgres_store
from agcore_lab.store.postgres import PostgresStore

__all__ = ["PostgresGraph"]


class PostgresGraph(SqliteGraph):
    """A :class:`~agcore_lab.kg.base.KnowledgeGraph` kept on a PostgreSQL server.

    Args:
        store: The :class:`~agcore_lab.store.postgres.PostgresStore` whose schema holds the
            graph (its pool is shared), or a ``postgresql://`` URL to open one.
        namespace: Several graphs can live in one schema under different names.
        tag_constraints: Limits on tags (at most 8 per entity by default).

    Raises:
        InvalidInputError: An empty namespace, or ``store`` is not PostgreSQL.
        StorageError: The server cannot be reached, or the namespace cannot be read.

    Example:
        ``graph = PostgresGraph("postgresql://127.0.0.1/agcore", "people")``, then
        ``graph.add_entity_sync(GraphEntity(id="ada"))`` as with any graph
        (``open_graph(store, "people")`` picks this class for a PostgreSQL store).

    Notes:
        Thread-safe, and many processes on many machines may share a namespace: each write
        is a transaction. Another process's writes are seen after :meth:`reload`.
        ``store.read_dataframe("select * from kg_relations")`` reads the flat tables.
    """

    def __init__(
        self,
        store: PostgresStore | str,
        namespace: str = "default",
        *,
        tag_constraints: TagConstraints | None = None,
    ) -> None:
        super().__init__(postgres_store(store), namespace, tag_constraints=tag_constraints)

    def __repr__(self) -> str:
        return (
            f"PostgresGraph({self.store.path!r}, namespace={self.namespace!r}, "
            f"entities={len(self)}, relations={self.relation_count})"
        )

"""``open_graph(store, namespace)``: the persisted knowledge graph of a store's backend."""

from __future__ import annotations

import os

from agcore_lab.errors import InvalidInputError
from agcore_lab.kg.sqlite_graph import SqliteGraph
from agcore_lab.kg.types import TagConstraints
from agcore_lab.store.base import Store

__all__ = ["open_graph"]


def open_graph(
    store: Store | str | os.PathLike[str] | None = None,
    namespace: str = "default",
    *,
    tag_constraints: TagConstraints | None = None,
) -> SqliteGraph:
    """The knowledge graph ``namespace`` kept in ``store``, whichever its backend.

    Args:
        store: An open store — a :class:`~agcore_lab.store.postgres.PostgresStore` gives a
            :class:`~agcore_lab.kg.postgres_graph.PostgresGraph`, a
            :class:`~agcore_lab.store.sqlite.SqliteStore` a
            :class:`~agcore_lab.kg.sqlite_graph.SqliteGraph` — or a store URL for
            :func:`~agcore_lab.store.open.open_store` (``None`` reads ``AGCORE_STORE_URL``).
        namespace: The graph's name inside the store.
        tag_constraints: Limits on tags (at most 8 per entity by default).

    Raises:
        InvalidInputError: ``store`` is a backend without a persisted graph.

    Example:
        >>> graph = open_graph(":memory:", "people")
        >>> type(graph).__name__
        'SqliteGraph'
    """
    from agcore_lab.store.open import open_store
    from agcore_lab.store.postgres import PostgresStore
    from agcore_lab.store.sqlite import SqliteStore

    opened = open_store(store) if store is None or isinstance(store, str | os.PathLike) else store
    if isinstance(opened, PostgresStore):
        from agcore_lab.kg.postgres_graph import PostgresGraph

        return PostgresGraph(opened, namespace, tag_constraints=tag_constraints)
    if isinstance(opened, SqliteStore):
        return SqliteGraph(opened, namespace, tag_constraints=tag_constraints)
    raise InvalidInputError(
        f"no persisted knowledge graph for a {type(opened).__name__}; give a SqliteStore, a "
        "PostgresStore or a store URL"
    )

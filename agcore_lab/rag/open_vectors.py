"""``open_vector_store(store, namespace)``: the persisted vector store of a store's backend."""

from __future__ import annotations

import os

from agcore_lab.errors import InvalidInputError
from agcore_lab.rag.vectorstores import InMemoryVectorStore
from agcore_lab.store.base import Store

__all__ = ["open_vector_store"]


def open_vector_store(
    store: Store | str | os.PathLike[str] | None = None,
    namespace: str = "default",
    *,
    capacity: int = 1024,
) -> InMemoryVectorStore:
    """The vector store ``namespace`` kept in ``store``, whichever its backend.

    Args:
        store: An open store — a :class:`~agcore_lab.store.postgres.PostgresStore` gives a
            :class:`~agcore_lab.rag.postgres_vectors.PostgresVectorStore`, a
            :class:`~agcore_lab.store.sqlite.SqliteStore` a
            :class:`~agcore_lab.rag.sqlite_vectors.SqliteVectorStore` — or a store URL for
            :func:`~agcore_lab.store.open.open_store` (``None`` reads ``AGCORE_STORE_URL``).
        namespace: The vector store's name inside the store.
        capacity: Rows to allocate in memory beyond those loaded.

    Raises:
        InvalidInputError: ``store`` is a backend without a persisted vector store.

    Example:
        >>> vectors = open_vector_store(":memory:", "docs")
        >>> type(vectors).__name__
        'SqliteVectorStore'
    """
    from agcore_lab.store.open import open_store
    from agcore_lab.store.postgres import PostgresStore
    from agcore_lab.store.sqlite import SqliteStore

    opened = open_store(store) if store is None or isinstance(store, str | os.PathLike) else store
    if isinstance(opened, PostgresStore):
        from agcore_lab.rag.postgres_vectors import PostgresVectorStore

        return PostgresVectorStore(opened, namespace, capacity=capacity)
    if isinstance(opened, SqliteStore):
        from agcore_lab.rag.sqlite_vectors import SqliteVectorStore

        return SqliteVectorStore(opened, namespace, capacity=capacity)
    raise InvalidInputError(
        f"no persisted vector store for a {type(opened).__name__}; give a SqliteStore, a "
        "PostgresStore or a store URL"
    )

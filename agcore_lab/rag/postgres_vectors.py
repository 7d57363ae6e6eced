"""``PostgresVectorStore``: the in-memory vector store, persisted on a PostgreSQL server.

The twin of :class:`~agcore_lab.rag.sqlite_vectors.SqliteVectorStore` for a
:class:`~agcore_lab.store.postgres.PostgresStore` (see :mod:`agcore_lab.store._pg_vectors`
for the tables): the namespace is loaded into memory once, when the store is opened; searches
are exact, in numpy, on that matrix. Every write goes to the server first, in one transaction,
and only then to memory: a failed write leaves both as they were. Every kernel and worker of a
lab that opens the same namespace shares its documents (:meth:`reload` reads what the others
wrote since).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from agcore_lab.errors import InvalidInputError
from agcore_lab.ids import utcnow
from agcore_lab.rag.documents import Document
from agcore_lab.rag.vectorstores import InMemoryVectorStore
from agcore_lab.store._pg_vectors import (
    delete_pg_vectors,
    insert_pg_vectors,
    pg_namespace_dim,
    read_pg_vectors,
)
from agcore_lab.store.postgres import PostgresStore

__all__ = ["PostgresVectorStore"]


def postgres_store(store: PostgresStore | str) -> PostgresStore:
    """``store`` itself, or a :class:`PostgresStore` opened on the URL ``store``."""
    if isinstance(store, PostgresStore):
        return store
    if isinstance(store, str) and store.split("://", 1)[0].lower() in ("postgresql", "postgres"):
        from agcore_lab.store.open import open_store

        opened = open_store(store)
        assert isinstance(opened, PostgresStore)
        return opened
    raise InvalidInputError(
        f"expected a PostgresStore or a postgresql:// URL, got {type(store).__name__}"
        + (f" {store!r}" if isinstance(store, str) else "")
        + "; for SQLite use SqliteVectorStore, or open_vector_store() for either"
    )


class PostgresVectorStore(InMemoryVectorStore):
    """A :class:`~agcore_lab.rag.vectorstores.VectorStore` kept on a PostgreSQL server.

    Args:
        store: The :class:`~agcore_lab.store.postgres.PostgresStore` whose schema holds the
            vectors (its pool is shared), or a ``postgresql://`` URL to open one.
        namespace: Several vector stores can live in one schema under different names.
        capacity: Rows to allocate in memory beyond those loaded.

    Raises:
        InvalidInputError: An empty namespace, or ``store`` is not PostgreSQL.
        StorageError: The server cannot be reached, or the namespace cannot be read.

    Example:
        ``vectors = PostgresVectorStore("postgresql://127.0.0.1/agcore", "docs")``, then
        ``vectors.add(documents, embedding.embed(texts))`` and ``vectors.search(query)`` as
        with any vector store (``open_vector_store(store, "docs")`` picks this class for a
        PostgreSQL store).

    Notes:
        Thread-safe, and many processes on many machines may share a namespace: writes are
        transactions, ids and the dimension are checked against the server, not just this
        process's memory. Another process's writes are seen after :meth:`reload`. The
        stored vectors are the normalized ones (unit length), which is what search uses.
    """

    def __init__(
        self, store: PostgresStore | str, namespace: str = "default", *, capacity: int = 1024
    ) -> None:
        if not isinstance(namespace, str) or not namespace:
            raise InvalidInputError("namespace must be a non-empty string")
        super().__init__(capacity=capacity)
        self.store = postgres_store(store)
        self.namespace = namespace
        self.reload()

    def __repr__(self) -> str:
        return (
            f"PostgresVectorStore({self.store.path!r}, namespace={self.namespace!r}, "
            f"dim={self._dim}, documents={self._count})"
        )

    def reload(self) -> None:
        """Read the namespace from the server again (to see other processes' writes)."""
        with self._lock:
            with self.store.transaction(write=False) as conn:
                # One snapshot for the documents and their vectors, whoever writes meanwhile.
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                dim = pg_namespace_dim(conn, self.namespace)
                loaded = (
                    read_pg_vectors(conn, self.namespace, dim, spare=self._capacity)
                    if dim is not None
                    else None
                )
            self._adopt(dim, loaded)

    def _persist_add(
        self, docs: list[Document], vectors: NDArray[np.float32], gone: list[str]
    ) -> None:
        if not docs and not gone:
            return
        rows = [(d.id, d.content, d.metadata, d.mime_type) for d in docs]
        with self.store.transaction() as conn:
            delete_pg_vectors(conn, self.namespace, gone)
            insert_pg_vectors(conn, self.namespace, rows, vectors, utcnow().isoformat())

    def _persist_remove(self, gone: list[str]) -> None:
        with self.store.transaction() as conn:
            delete_pg_vectors(conn, self.namespace, gone)

    def file_rows(self) -> int:
        """Rows of this namespace on the server now (may differ from ``len()`` when another
        process has written since :meth:`reload`)."""
        with self.store.transaction(write=False) as conn:
            row = conn.execute(
                "SELECT count(*) FROM vector_docs WHERE namespace = ?", (self.namespace,)
            ).fetchone()
        return int(row[0])

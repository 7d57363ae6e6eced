"""``SqliteVectorStore``: the in-memory vector store, persisted in a ``SqliteStore`` file.

Each document is one row of ``vector_docs`` (see :mod:`agcore_lab.store._vectors`): flat
columns for pandas; the unit vectors are float32 bytes in blocks of many vectors per row, and
the ``vectors`` view shows each document with its own ``embedding`` BLOB. The namespace is
loaded into memory once, when the store is opened (block by block, into one matrix); searches
then run on the in-memory matrix. Every write goes to SQLite first, in one transaction, and
only then to memory: a failed write leaves both the file and the memory as they were. After a
write of more than :data:`BULK_BYTES` the write-ahead log is folded into the file and
truncated, so the file and its log stay close to the raw bytes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from agcore_lab.errors import InvalidInputError
from agcore_lab.ids import utcnow
from agcore_lab.rag.documents import Document
from agcore_lab.rag.vectorstores import InMemoryVectorStore
from agcore_lab.store._vectors import (
    delete_vectors,
    insert_vectors,
    namespace_dim,
    read_vectors,
    truncate_wal,
)
from agcore_lab.store.sqlite import SqliteStore

__all__ = ["BULK_BYTES", "SqliteVectorStore"]

BULK_BYTES = 4 << 20
"""A write of more vector bytes than this truncates the write-ahead log after it commits."""


class SqliteVectorStore(InMemoryVectorStore):
    """A :class:`~agcore_lab.rag.vectorstores.VectorStore` kept in a SQLite file.

    Args:
        store: The :class:`~agcore_lab.store.sqlite.SqliteStore` whose file holds the vectors
            (its connection and lock are shared).
        namespace: Several vector stores can live in one file under different names.
        capacity: Rows to allocate in memory beyond those loaded.

    Raises:
        StorageError: The namespace cannot be read.

    Example:
        >>> from agcore_lab import SqliteStore
        >>> from agcore_lab.rag import Document, MockEmbedding
        >>> db = SqliteStore(":memory:")
        >>> vectors = SqliteVectorStore(db, "docs")
        >>> vectors.add([Document(id="a", content="alpha")], MockEmbedding(8).embed(["alpha"]))
        >>> len(SqliteVectorStore(db, "docs"))  # a second view of the same file sees it
        1

    Notes:
        Thread-safe, and several processes may share the file: writes are transactions, and
        ids and the dimension are checked against the file, not just this process's memory.
        Another process's writes are seen after :meth:`reload`. The stored vectors are the
        normalized ones (unit length), which is what search uses.
    """

    def __init__(
        self, store: SqliteStore, namespace: str = "default", *, capacity: int = 1024
    ) -> None:
        if not isinstance(namespace, str) or not namespace:
            raise InvalidInputError("namespace must be a non-empty string")
        super().__init__(capacity=capacity)
        self.store = store
        self.namespace = namespace
        self.reload()

    def __repr__(self) -> str:
        return (
            f"SqliteVectorStore({self.store.path!r}, namespace={self.namespace!r}, "
            f"dim={self._dim}, documents={self._count})"
        )

    def reload(self) -> None:
        """Read the namespace from the file again (to see other processes' writes)."""
        with self._lock:
            with self.store.transaction(write=False) as conn:
                dim = namespace_dim(conn, self.namespace)
                loaded = (
                    read_vectors(conn, self.namespace, dim, spare=self._capacity)
                    if dim is not None
                    else None
                )
            self._adopt(dim, loaded)

    def _persist_add(
        self, docs: list[Document], vectors: NDArray[np.float32], gone: list[str]
    ) -> None:
        if not docs and not gone:
            return
        with self.store.transaction() as conn:
            if gone:
                delete_vectors(conn, self.namespace, gone)
            if docs:
                # Columns, not a tuple per document (which the garbage collector would walk).
                columns = (
                    [d.content for d in docs],
                    [d.metadata for d in docs],  # only read
                    [d.mime_type for d in docs],
                )
                insert_vectors(
                    conn,
                    self.namespace,
                    [d.id for d in docs],
                    columns,
                    vectors,
                    utcnow().isoformat(),
                )
        self._after_write(vectors.nbytes + len(gone) * 4 * (self._dim or 0))

    def _persist_remove(self, gone: list[str]) -> None:
        with self.store.transaction() as conn:
            delete_vectors(conn, self.namespace, gone)
        self._after_write(len(gone) * 4 * (self._dim or 0))

    def _after_write(self, written: int) -> None:
        if written > BULK_BYTES and self.store.path != ":memory:":
            truncate_wal(self.store.connection)

    def file_rows(self) -> int:
        """Rows of this namespace in the file now (may differ from ``len()`` when another
        process has written since :meth:`reload`)."""
        with self.store.transaction(write=False) as conn:
            row = conn.execute(
                "SELECT count(*) FROM vector_docs WHERE namespace = ?", (self.namespace,)
            ).fetchone()
        return int(row[0])

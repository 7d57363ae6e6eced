"""``SqliteVectorStore``: the in-memory vector store, persisted in a ``SqliteStore`` file.

Each document is one row of ``vector_docs`` (see :mod:`agcore_lab.store._vectors`): flat
columns for pandas; the unit vectors are float32 bytes in blocks of many vectors per row, and
the ``vectors`` view shows each document with its own ``embedding`` BLOB. The namespace is
loaded into memory once, when the store is opened (block by block, into one matrix); searches
then run on the in-memory matrix. Every write goes to SQLite first, in one transaction, and
only then to memory: a failed write leaves both the file and the memory as they were. After a
write of more than :data:`BULK_BYTES` the write-ahead log is folded into the file and
truncated, so the file and its log stay close to the raw bytes (inside
:meth:`SqliteVectorStore.bulk`, once, when the block ends). While a write of more than
:data:`WRITEBACK_BYTES` runs, the kernel is asked to start writing its pages to the disk
(:mod:`agcore_lab.store._writeback`), so the syncs of the checkpoint after it wait for less.

Given a path instead of a store, the vector store opens the file itself, and a file it makes
gets pages of :data:`~agcore_lab.store._vectors.VECTOR_PAGE_SIZE` (64 KiB) instead of 4 KiB:
far fewer pages, so far fewer system calls, per vector written (a session store keeps SQLite's
default, which suits its small rows).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

import numpy as np
from numpy.typing import NDArray

from agcore_lab.errors import InvalidInputError
from agcore_lab.ids import utcnow
from agcore_lab.rag.documents import Document
from agcore_lab.rag.vectorstores import InMemoryVectorStore
from agcore_lab.store._sqlite_errors import check_path
from agcore_lab.store._vectors import (
    VECTOR_PAGE_SIZE,
    check_page_size,
    delete_vectors,
    insert_vectors,
    namespace_dim,
    read_vectors,
    truncate_wal,
    vector_file,
)
from agcore_lab.store._writeback import early_writeback
from agcore_lab.store.sqlite import SqliteStore

__all__ = ["BULK_BYTES", "WRITEBACK_BYTES", "SqliteVectorStore"]

BULK_BYTES = 4 << 20
"""A write of more vector bytes than this truncates the write-ahead log after it commits."""

WRITEBACK_BYTES = 1 << 20
"""A write of more vector bytes than this has the kernel start writing its pages out while it
runs (:func:`~agcore_lab.store._writeback.early_writeback`), so the syncs of the checkpoint
after it wait for less."""

_LOG_BYTES = 4 << 20
"""How big the write-ahead log of a file the vector store opened grows before it is folded
into the file (SQLite's default is 1,000 pages: 4 MB of 4 KiB pages, 64 MB of 64 KiB ones)."""


class SqliteVectorStore(InMemoryVectorStore):
    """A :class:`~agcore_lab.rag.vectorstores.VectorStore` kept in a SQLite file.

    Args:
        store: The :class:`~agcore_lab.store.sqlite.SqliteStore` whose file holds the vectors
            (its connection and lock are shared), or the path of a file for vectors: the
            vector store then opens it (:meth:`close` closes it), and a file it makes has
            pages of ``page_size`` bytes.
        namespace: Several vector stores can live in one file under different names.
        capacity: Rows to allocate in memory beyond those loaded.
        page_size: The page size of a file made from a path (a power of two from 512 to
            65536; default 65536). A file that exists keeps its own.

    Raises:
        InvalidInputError: An empty namespace, a bad ``page_size``, or a ``page_size`` with a
            store that is open already (its page size was fixed when its file was made).
        StorageError: The file cannot be made or opened, or the namespace cannot be read.

    Example:
        >>> from agcore_lab import SqliteStore
        >>> from agcore_lab.rag import Document, MockEmbedding
        >>> db = SqliteStore(":memory:")
        >>> vectors = SqliteVectorStore(db, "docs")
        >>> vectors.add([Document(id="a", content="alpha")], MockEmbedding(8).embed(["alpha"]))
        >>> len(SqliteVectorStore(db, "docs"))  # a second view of the same file sees it
        1

        A file of its own for vectors, with 64 KiB pages:

        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "vectors.db"
        >>> own = SqliteVectorStore(path, "docs")
        >>> own.store.connection.execute("PRAGMA page_size").fetchone()[0]
        65536
        >>> own.close()

    Notes:
        Thread-safe, and several processes may share the file: writes are transactions, and
        ids and the dimension are checked against the file, not just this process's memory.
        Another process's writes are seen after :meth:`reload`. The stored vectors are the
        normalized ones (unit length), which is what search uses.
    """

    def __init__(
        self,
        store: SqliteStore | str | os.PathLike[str],
        namespace: str = "default",
        *,
        capacity: int = 1024,
        page_size: int | None = None,
    ) -> None:
        if not isinstance(namespace, str) or not namespace:
            raise InvalidInputError("namespace must be a non-empty string")
        super().__init__(capacity=capacity)
        self._owns_store = not isinstance(store, SqliteStore)
        self._bulk_depth = 0  # open bulk() blocks
        self._bulk_written = False  # a bulk write is waiting for the block's end to truncate
        if isinstance(store, SqliteStore):
            if page_size is not None:
                raise InvalidInputError(
                    "page_size is for a file the vector store makes; this SqliteStore is open "
                    "already (give a path instead, or leave page_size out)"
                )
            self.store = store
        else:
            self.store = _open_vector_file(store, page_size)
        self.namespace = namespace
        try:
            self.reload()
        except BaseException:
            if self._owns_store:
                self.store.close()
            raise

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
        written = vectors.nbytes + len(gone) * 4 * (self._dim or 0)
        with self._writing(written), self.store.transaction() as conn:
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
        self._after_write(written)

    def _persist_remove(self, gone: list[str]) -> None:
        written = len(gone) * 4 * (self._dim or 0)
        with self._writing(written), self.store.transaction() as conn:
            delete_vectors(conn, self.namespace, gone)
        self._after_write(written)

    def _writing(self, written: int) -> AbstractContextManager[None]:
        """Around a write of ``written`` vector bytes and its commit: early writeback when it
        is big (:mod:`agcore_lab.store._writeback`), else nothing."""
        if written > WRITEBACK_BYTES:
            return early_writeback(self.store.path)
        return nullcontext()

    def _after_write(self, written: int) -> None:
        if written > BULK_BYTES and self.store.path != ":memory:":
            if self._bulk_depth:
                self._bulk_written = True
            else:
                truncate_wal(self.store.connection)

    @contextmanager
    def bulk(self) -> Iterator[SqliteVectorStore]:
        """A block of many adds (or removals) in a row: the write-ahead log is truncated once,
        when the block ends, not after each write of more than :data:`BULK_BYTES`.

        Each write is still its own transaction: other processes see it as soon as it returns,
        and a failed one writes nothing. Inside the block the log is still folded into the file
        every few MB (SQLite's automatic checkpoint), then written over from its start, so it
        stays about as big as the largest write; truncating it after every write made each
        next one grow it again on fresh pages. The block may nest (the outermost one
        truncates) and is entered by any thread; it truncates even when it ends by raising.
        It is the way to make many big adds into a session store's file (4 KiB pages): the
        log's regrowth after each truncation costs most there.

        Example:
            >>> import tempfile, pathlib
            >>> from agcore_lab.rag import Document, MockEmbedding
            >>> vectors = SqliteVectorStore(pathlib.Path(tempfile.mkdtemp()) / "v.db", "docs")
            >>> with vectors.bulk():
            ...     for batch in range(3):
            ...         ids = [f"{batch}-{i}" for i in range(100)]
            ...         vectors.add([Document(id=i, content=i) for i in ids],
            ...                     MockEmbedding(8).embed(ids))
            >>> len(vectors)
            300
            >>> vectors.close()
        """
        with self._lock:
            self._bulk_depth += 1
        try:
            yield self
        finally:
            with self._lock:
                self._bulk_depth -= 1
                due = self._bulk_depth == 0 and self._bulk_written
                if due:
                    self._bulk_written = False
                    truncate_wal(self.store.connection)

    def close(self) -> None:
        """Close the file if this vector store opened it (given a path); a
        :class:`~agcore_lab.store.sqlite.SqliteStore` passed in is left open for its owner."""
        if self._owns_store:
            self.store.close()

    def file_rows(self) -> int:
        """Rows of this namespace in the file now (may differ from ``len()`` when another
        process has written since :meth:`reload`)."""
        with self.store.transaction(write=False) as conn:
            row = conn.execute(
                "SELECT count(*) FROM vector_docs WHERE namespace = ?", (self.namespace,)
            ).fetchone()
        return int(row[0])


def _open_vector_file(path: str | os.PathLike[str], page_size: int | None) -> SqliteStore:
    """The store of the vector file at ``path``: made with pages of ``page_size`` bytes if it
    does not exist yet; its write-ahead log folded into the file every :data:`_LOG_BYTES`."""
    if not isinstance(path, str | os.PathLike):
        raise InvalidInputError(
            f"store must be a SqliteStore or a file path, not {type(path).__name__}"
        )
    checked = check_path(path if isinstance(path, str) else os.fspath(path))
    size = check_page_size(VECTOR_PAGE_SIZE if page_size is None else page_size)
    if checked != ":memory:":
        vector_file(checked, size)
    store = SqliteStore(checked)
    pages = store.connection.execute("PRAGMA page_size").fetchone()[0]
    store.connection.execute(f"PRAGMA wal_autocheckpoint = {max(1, _LOG_BYTES // pages)}")
    return store

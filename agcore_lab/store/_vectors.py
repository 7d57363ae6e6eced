"""Vectors in SQLite: one row per document, the embeddings in blocks of many vectors.

``vector_docs`` has one row per document with flat, pandas-friendly columns (namespace, id,
source, chunk position, content, MIME type), ``metadata_json`` (all of the document's
metadata), and where its vector is: ``block`` and ``slot``. ``vector_blocks`` holds the unit
vectors as little-endian float32 bytes, up to :data:`BLOCK_BYTES` of them per row (never JSON
text). Big BLOBs go to full overflow pages, so the file is close to the raw bytes whatever the
page size (one 1.5 KB vector per row left a quarter of each 4 KiB page empty). The view
``vectors`` shows one row per document with its vector as the ``embedding`` BLOB, as the
table did before blocks (schema 4): ``pd.read_sql("select * from vectors", conn)`` still works.

A namespace's blocks, in block order, hold its documents' vectors in insertion order (``seq``);
a document's ``slot`` is its position in its block. Small adds do not each get a block: a new
block takes in the namespace's last blocks while they are no bigger than what is being added
and all of it fits in one block (like a binary counter, so each vector is rewritten
O(log block size) times). A removal rewrites the blocks it touches. ``vector_namespaces``
records each namespace's dimension, so two processes cannot mix lengths in one namespace.
The documents' rows are written a block at a time by multi-row INSERTs
(:mod:`agcore_lab.store._vector_rows`).

Used by :class:`~agcore_lab.rag.sqlite_vectors.SqliteVectorStore`; every function runs inside
a transaction the caller holds, except :func:`truncate_wal`. An id stored already makes
:func:`insert_vectors` raise with that transaction rolled back (the rows' INSERT is OR ROLLBACK).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from agcore_lab.errors import ConflictError, InvalidInputError, StorageError
from agcore_lab.store._vector_rows import DocColumns, Segment, insert_doc_rows

__all__ = [
    "BLOCK_BYTES",
    "VECTOR_PAGE_SIZE",
    "DocColumns",
    "VectorRows",
    "check_page_size",
    "delete_vectors",
    "insert_vectors",
    "move_vectors_into_blocks",
    "namespace_dim",
    "read_vectors",
    "truncate_wal",
    "vector_file",
]

BLOCK_BYTES = 1 << 17
"""The most vector bytes in one ``vector_blocks`` row (128 KiB: 85 vectors of dimension 384)."""

VECTOR_PAGE_SIZE = 1 << 16
"""The page size of a file made for vectors (:func:`vector_file`): 64 KiB, SQLite's largest."""

# (doc ids, (content, metadata_json, mime_type) per row, a float32 matrix whose first rows are
# the vectors)
VectorRows = tuple[list[str], list[tuple[str, str, str]], NDArray[np.float32]]


def namespace_dim(conn: sqlite3.Connection, namespace: str) -> int | None:
    """The dimension recorded for ``namespace``, or ``None`` if it has none yet."""
    row = conn.execute(
        "SELECT dim FROM vector_namespaces WHERE namespace = ?", (namespace,)
    ).fetchone()
    return None if row is None else int(row[0])


def block_capacity(dim: int) -> int:
    """How many vectors of dimension ``dim`` one block holds."""
    return max(1, BLOCK_BYTES // (4 * dim))


def move_vectors_into_blocks(conn: sqlite3.Connection) -> None:
    """Migration m008's data step: move every vector of the schema-4 ``vectors`` table into
    ``vector_blocks`` (in insertion order) and record each document's ``block`` and ``slot``
    (the DDL before and after it is in :mod:`agcore_lab.store.migrations`)."""
    namespaces = conn.execute("SELECT namespace, dim FROM vector_namespaces").fetchall()
    for namespace, dim in namespaces:
        cursor = conn.execute(
            "SELECT seq, embedding FROM vectors WHERE namespace = ? ORDER BY seq", (namespace,)
        )
        while rows := cursor.fetchmany(block_capacity(int(dim))):
            if any(len(blob) != 4 * dim for _, blob in rows):
                raise StorageError(
                    f"namespace {namespace!r} holds a vector that is not of dimension {dim}",
                    namespace=namespace,
                )
            block = _insert_block(conn, namespace, b"".join(blob for _, blob in rows), len(rows))
            conn.executemany(
                "UPDATE vectors SET block = ?, slot = ? WHERE seq = ?",
                [(block, slot, seq) for slot, (seq, _) in enumerate(rows)],
            )


def _insert_block(
    conn: sqlite3.Connection, namespace: str, data: bytes | memoryview, count: int
) -> int:
    cursor = conn.execute(
        "INSERT INTO vector_blocks (namespace, count, embeddings) VALUES (?, ?, ?)",
        (namespace, count, data),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def insert_vectors(
    conn: sqlite3.Connection,
    namespace: str,
    ids: Sequence[str],
    documents: DocColumns,
    vectors: NDArray[np.float32],
    created_at: str,
) -> None:
    """Insert documents (``ids``, with their contents, metadata and MIME types as three
    columns, ``documents``) with their unit ``vectors``.

    Raises:
        InvalidInputError: The namespace holds vectors of another dimension.
        ConflictError: An id is already stored in the namespace (perhaps by another process).
    """
    dim = int(vectors.shape[1])
    stored = namespace_dim(conn, namespace)
    if stored is None:
        conn.execute(
            "INSERT INTO vector_namespaces (namespace, dim, created_at) VALUES (?, ?, ?)",
            (namespace, dim, created_at),
        )
    elif stored != dim:
        raise InvalidInputError(
            f"namespace {namespace!r} holds vectors of dimension {stored}, not {dim}",
            namespace=namespace,
        )
    # The vectors' bytes, sliced per block without a copy (bound as BLOBs straight from them).
    little = np.ascontiguousarray(vectors.astype("<f4", copy=False))
    raw: memoryview = memoryview(little.reshape(-1)).cast("B")  # type: ignore[arg-type]
    width = 4 * dim
    capacity, count = block_capacity(dim), len(ids)
    # The namespace's last blocks join the first new one while they are no bigger than what is
    # added and everything fits in one block (so small adds do not each leave a small block).
    merged: list[tuple[int, int]] = []
    pending = count
    for block, size in conn.execute(
        "SELECT block, count FROM vector_blocks INDEXED BY vector_blocks_namespace "
        "WHERE namespace = ? ORDER BY block DESC LIMIT 64",
        (namespace,),
    ):
        if size > pending or size + pending > capacity:
            break
        merged.append((block, size))
        pending += size
    merged.reverse()
    segments: list[Segment] = []  # (block, first slot, start, stop) per run of new documents
    start = 0
    if merged:
        old = b"".join(
            conn.execute("SELECT embeddings FROM vector_blocks WHERE block = ?", (b,)).fetchone()[0]
            for b, _ in merged
        )
        block = _insert_block(conn, namespace, b"".join((old, raw)), pending)
        blocks = [b for b, _ in merged]
        marks = ",".join("?" * len(blocks))
        conn.execute(f"DELETE FROM vector_blocks WHERE block IN ({marks})", blocks)
        # Old slots shift by the sizes of the merged blocks before theirs.
        offset = 0
        for b, size in merged:
            conn.execute(
                "UPDATE vector_docs SET block = ?, slot = slot + ? "
                "WHERE namespace = ? AND block = ?",
                (block, offset, namespace, b),
            )
            offset += size
        segments.append((block, offset, 0, count))
        start = count
    while start < count:
        stop = min(start + capacity, count)
        block = _insert_block(conn, namespace, raw[start * width : stop * width], stop - start)
        segments.append((block, 0, start, stop))
        start = stop
    try:
        insert_doc_rows(conn, namespace, ids, documents, segments, capacity)
    except sqlite3.IntegrityError:
        # The unique index on (namespace, doc_id) refused a row: an id stored already, perhaps
        # by another process. The INSERT is OR ROLLBACK (so SQLite keeps no statement journal
        # for it): the whole transaction is undone by now, and what is stored is what others
        # committed, so which ids are taken is asked only now. A transaction still open means
        # something else failed (a trigger's RAISE(ABORT)): the caller rolls it back.
        if conn.in_transaction:
            raise
        taken = _taken(conn, namespace, list(ids))
        if not taken:
            raise
        raise ConflictError(
            f"ids already stored in namespace {namespace!r}: {', '.join(taken[:5])}; "
            "remove them first or add them with replace=[...]",
            namespace=namespace,
        ) from None


def _taken(conn: sqlite3.Connection, namespace: str, ids: list[str]) -> list[str]:
    found: list[str] = []
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        marks = ",".join("?" * len(batch))
        found += [
            r[0]
            for r in conn.execute(
                f"SELECT doc_id FROM vector_docs WHERE namespace = ? AND doc_id IN ({marks})",
                (namespace, *batch),
            )
        ]
    return found


def delete_vectors(conn: sqlite3.Connection, namespace: str, ids: Sequence[str]) -> int:
    """Delete these ids from the namespace, rewriting the blocks they were in; return how
    many rows went."""
    dim = namespace_dim(conn, namespace)
    if dim is None:
        return 0
    width = 4 * dim
    touched: dict[int, list[int]] = {}
    for start in range(0, len(ids), 500):
        batch = list(ids[start : start + 500])
        marks = ",".join("?" * len(batch))
        for block, slot in conn.execute(
            f"SELECT block, slot FROM vector_docs WHERE namespace = ? AND doc_id IN ({marks})",
            (namespace, *batch),
        ):
            touched.setdefault(block, []).append(slot)
        conn.execute(
            f"DELETE FROM vector_docs WHERE namespace = ? AND doc_id IN ({marks})",
            (namespace, *batch),
        )
    for block, slots in touched.items():
        (data,) = conn.execute(
            "SELECT embeddings FROM vector_blocks WHERE block = ?", (block,)
        ).fetchone()
        keep = np.ones(len(data) // width, dtype=bool)
        keep[slots] = False
        if not keep.any():
            conn.execute("DELETE FROM vector_blocks WHERE block = ?", (block,))
            continue
        rows = np.frombuffer(data, dtype=np.uint8).reshape(-1, width)[keep]
        conn.execute(
            "UPDATE vector_blocks SET count = ?, embeddings = ? WHERE block = ?",
            (int(rows.shape[0]), rows.tobytes(), block),
        )
        # Slots follow insertion order, so the documents left take slots 0, 1, ... by seq.
        seqs = conn.execute(
            "SELECT seq FROM vector_docs WHERE namespace = ? AND block = ? ORDER BY seq",
            (namespace, block),
        ).fetchall()
        conn.executemany(
            "UPDATE vector_docs SET slot = ? WHERE seq = ?",
            [(slot, seq) for slot, (seq,) in enumerate(seqs)],
        )
    return sum(len(slots) for slots in touched.values())


def read_vectors(conn: sqlite3.Connection, namespace: str, dim: int, spare: int = 0) -> VectorRows:
    """All rows of the namespace in insertion order.

    The blocks are copied one at a time into a matrix allocated once, with ``spare`` free rows
    after the vectors (room to grow): no list of BLOBs, no joined buffer.

    Raises:
        StorageError: The blocks do not match the documents (a damaged file).
    """
    (total,) = conn.execute(
        "SELECT coalesce(sum(count), 0) FROM vector_blocks WHERE namespace = ?", (namespace,)
    ).fetchone()
    matrix = np.empty((total + spare, dim), dtype="<f4")
    flat = matrix.reshape(-1)
    offset = 0
    for count, data in conn.execute(
        "SELECT count, embeddings FROM vector_blocks INDEXED BY vector_blocks_namespace "
        "WHERE namespace = ? ORDER BY block",
        (namespace,),
    ):
        if len(data) != count * dim * 4 or offset + count > total:
            raise StorageError(
                f"namespace {namespace!r}: a block of vectors is not {count} x {dim} float32",
                namespace=namespace,
            )
        flat[offset * dim : (offset + count) * dim] = np.frombuffer(data, dtype="<f4")
        offset += count
    # Streamed: no list of row tuples beside the two lists kept; one string per MIME type.
    ids: list[str] = []
    records: list[tuple[str, str, str]] = []
    mime_types: dict[str, str] = {}
    for doc_id, content, metadata_json, mime_type in conn.execute(
        "SELECT doc_id, content, metadata_json, mime_type FROM vector_docs "
        "INDEXED BY vector_docs_block WHERE namespace = ? ORDER BY block, seq",
        (namespace,),
    ):
        ids.append(doc_id)
        records.append((content, metadata_json, mime_types.setdefault(mime_type, mime_type)))
    if len(ids) != total:
        raise StorageError(
            f"namespace {namespace!r}: {len(ids)} documents but {total} vectors",
            namespace=namespace,
        )
    return ids, records, matrix.astype(np.float32, copy=False)


def truncate_wal(conn: sqlite3.Connection) -> None:
    """Fold the write-ahead log into the file and truncate it (after a bulk write, whose log
    would otherwise stay as big as what was written while the file is open). Best effort,
    outside any transaction: if another connection is reading, the log is left as it is."""
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except sqlite3.Error:
        pass


def check_page_size(page_size: object) -> int:
    """``page_size`` if SQLite accepts it (a power of two from 512 to 65536).

    Raises:
        InvalidInputError: It is not.
    """
    if (
        isinstance(page_size, bool)
        or not isinstance(page_size, int)
        or not 512 <= page_size <= 65536
        or page_size & (page_size - 1)
    ):
        raise InvalidInputError(
            f"page_size must be a power of two from 512 to 65536, not {page_size!r}",
            page_size=repr(page_size),
        )
    return page_size


def vector_file(path: str, page_size: int) -> None:
    """Make ``path`` an empty database with pages of ``page_size`` bytes in WAL mode, unless
    it exists already (a file's page size is fixed when it is made: an existing file keeps
    its own). The store's schema is added by whoever opens it next, as for any new file.

    Big pages mean fewer pages per vector: every page a bulk add writes costs two system calls
    in the write-ahead log and two more when the checkpoint copies it into the file.

    Raises:
        StorageError: The file or its directory cannot be made.
    """
    target = Path(path)
    if target.exists():
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(target, isolation_level=None)
        try:
            # Both only take effect on an empty file: if another process made it meanwhile,
            # its page size stands (and its WAL mode is the same).
            conn.execute(f"PRAGMA page_size = {check_page_size(page_size)}")
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
        finally:
            conn.close()
    except (sqlite3.Error, OSError) as exc:
        raise StorageError(
            f"cannot create the vector file {os.fspath(path)!r}: {exc}", path=os.fspath(path)
        ) from exc

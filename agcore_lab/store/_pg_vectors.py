"""Vectors in PostgreSQL: one row per document, its unit vector as float32 bytes.

``vector_docs`` (schema 5 of :mod:`agcore_lab.store._pg_schema`) has the flat, pandas-friendly
columns of SQLite's (namespace, id, source, chunk position, content, MIME type,
``metadata_json``) and the document's unit vector in ``embedding``: little-endian float32
bytes (``BYTEA``), the same bytes as SQLite's ``vectors`` view shows; ``vectors`` is a view of
it with the same columns as that SQLite view, so ``select * from vectors`` reads alike on both
backends. ``seq`` keeps insertion order. ``vector_namespaces`` records each namespace's
dimension, so two processes cannot mix lengths in one namespace.

PostgreSQL keeps rows of a few kilobytes compact on its own (TOAST), so there is no need for
SQLite's blocks: a removal deletes rows, nothing is rewritten. Search stays exact, in numpy,
on the matrix loaded by :func:`read_pg_vectors`.

Used by :class:`~agcore_lab.rag.postgres_vectors.PostgresVectorStore` and by
``agcore-lab migrate``; every function runs inside a transaction the caller holds (a
:class:`~agcore_lab.store._pg_dialect.PgConnection`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from agcore_lab.errors import ConflictError, InvalidInputError, StorageError
from agcore_lab.store._json import compact
from agcore_lab.store._pg_dialect import PgConnection
from agcore_lab.store._vectors import VectorRows

__all__ = [
    "delete_pg_vectors",
    "insert_pg_vectors",
    "pg_namespace_dim",
    "read_pg_vectors",
]


def _flat(value: object, kind: type) -> Any:
    """``value`` when it is of ``kind`` (``bool`` is not an ``int`` here), else ``None``."""
    if value is None or isinstance(value, bool):
        return None
    return value if isinstance(value, kind) else None


def pg_namespace_dim(conn: PgConnection, namespace: str) -> int | None:
    """The dimension recorded for ``namespace``, or ``None`` if it has none yet."""
    row = conn.execute(
        "SELECT dim FROM vector_namespaces WHERE namespace = ?", (namespace,)
    ).fetchone()
    return None if row is None else int(row[0])


def insert_pg_vectors(
    conn: PgConnection,
    namespace: str,
    rows: Sequence[tuple[str, str, dict[str, Any], str]],
    vectors: np.ndarray[Any, Any],
    created_at: str,
) -> None:
    """Insert ``rows`` (id, content, metadata, MIME type) with their unit ``vectors``.

    Raises:
        InvalidInputError: The namespace holds vectors of another dimension.
        ConflictError: An id is already stored in the namespace (perhaps by another process).
    """
    if not rows:
        return
    dim = int(vectors.shape[1])
    stored = pg_namespace_dim(conn, namespace)
    if stored is None:
        conn.execute(
            "INSERT INTO vector_namespaces (namespace, dim, created_at) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (namespace, dim, created_at),
        )
        stored = pg_namespace_dim(conn, namespace)
    if stored != dim:
        raise InvalidInputError(
            f"namespace {namespace!r} holds vectors of dimension {stored}, not {dim}",
            namespace=namespace,
        )
    ids = [row[0] for row in rows]
    taken = [
        r[0]
        for r in conn.execute(
            "SELECT doc_id FROM vector_docs WHERE namespace = ? AND doc_id = ANY(?) ORDER BY seq",
            (namespace, ids),
        ).fetchall()
    ]
    if taken:
        raise ConflictError(
            f"ids already stored in namespace {namespace!r}: {', '.join(taken[:5])}; "
            "remove them first or add them with replace=[...]",
            namespace=namespace,
        )
    little = np.ascontiguousarray(vectors, dtype="<f4")
    # COPY: one round trip for the whole batch, whatever its size.
    with conn.raw.cursor().copy(
        "COPY vector_docs (namespace, doc_id, source_id, chunk_index, start_index, end_index, "
        "mime_type, content, metadata_json, embedding) FROM STDIN"
    ) as copy:
        for (doc_id, content, metadata, mime_type), vector in zip(rows, little, strict=True):
            get = metadata.get
            copy.write_row(
                (
                    namespace,
                    doc_id,
                    _flat(get("source_id"), str),
                    _flat(get("chunk_index"), int),
                    _flat(get("start_index"), int),
                    _flat(get("end_index"), int),
                    mime_type,
                    content,
                    compact(metadata),
                    vector.tobytes(),
                )
            )


def delete_pg_vectors(conn: PgConnection, namespace: str, ids: Sequence[str]) -> int:
    """Delete these ids from the namespace; return how many rows went."""
    if not ids:
        return 0
    return conn.execute(
        "DELETE FROM vector_docs WHERE namespace = ? AND doc_id = ANY(?)", (namespace, list(ids))
    ).rowcount


def read_pg_vectors(conn: PgConnection, namespace: str, dim: int, spare: int = 0) -> VectorRows:
    """All rows of the namespace in insertion order, the vectors in one matrix allocated once
    with ``spare`` free rows after them (room to grow).

    The vectors come as one binary ``COPY`` stream (fixed-size records, written straight
    into the matrix a megabyte at a time), not one Python row each: a round of Python per row
    would cost ten times the transfer. Run it in a ``REPEATABLE READ`` transaction when
    writers may be busy, so the documents and the vectors are read from one snapshot.

    Raises:
        StorageError: A stored vector is not ``dim`` float32 values (a damaged table).
    """
    ids: list[str] = []
    records: list[tuple[str, str, str]] = []
    mime_types: dict[str, str] = {}
    for doc_id, content, metadata_json, mime_type in conn.raw.execute(
        "SELECT doc_id, content, metadata_json, mime_type FROM vector_docs "
        "WHERE namespace = %s ORDER BY seq",
        (namespace,),
    ):
        ids.append(doc_id)
        records.append((content, metadata_json, mime_types.setdefault(mime_type, mime_type)))
    total, width = len(ids), 4 * dim
    matrix = np.empty((total + spare, dim), dtype="<f4")
    rows = _CopiedRows(matrix, total, width, namespace)
    with conn.raw.cursor().copy(
        "COPY (SELECT embedding FROM vector_docs WHERE namespace = %s ORDER BY seq) "
        "TO STDOUT (FORMAT binary)",
        (namespace,),
    ) as copy:
        for data in copy:
            rows.feed(data)
    rows.finish()
    return ids, records, matrix.astype(np.float32, copy=False)


class _CopiedRows:
    """Parses a binary ``COPY`` of one ``bytea`` column of ``width``-byte values into rows of
    ``matrix``: a 19-byte header, then per row a field count (2 bytes, 1), a length (4 bytes,
    ``width``) and the bytes; a trailer of ``-1``."""

    _HEADER = b"PGCOPY\n\xff\r\n\x00"

    def __init__(self, matrix: np.ndarray[Any, Any], total: int, width: int, ns: str) -> None:
        self.out = matrix.reshape(-1).view(np.uint8)
        self.total, self.width, self.namespace = total, width, ns
        self.pending = bytearray()
        self.rows = 0
        self.header = False
        self.record = np.dtype([("count", ">i2"), ("length", ">i4"), ("data", "u1", (width,))])

    def _damaged(self) -> StorageError:
        return StorageError(
            f"namespace {self.namespace!r}: the stored vectors are not {self.total} x "
            f"{self.width // 4} float32",
            namespace=self.namespace,
        )

    def feed(self, data: Any) -> None:
        self.pending += data
        if len(self.pending) >= 1 << 20:
            self._drain()

    def _drain(self) -> None:
        if not self.header:
            if len(self.pending) < 19:
                return
            if not self.pending.startswith(self._HEADER):
                raise self._damaged()
            extension = int.from_bytes(self.pending[15:19], "big")
            del self.pending[: 19 + extension]
            self.header = True
        size = self.record.itemsize
        count = len(self.pending) // size
        if not count:
            return
        if self.rows + count > self.total:
            raise self._damaged()
        parsed = np.frombuffer(memoryview(self.pending)[: count * size], dtype=self.record)
        if (parsed["count"] != 1).any() or (parsed["length"] != self.width).any():
            raise self._damaged()
        start = self.rows * self.width
        self.out[start : start + count * self.width] = parsed["data"].reshape(-1)
        del parsed
        del self.pending[: count * size]
        self.rows += count

    def finish(self) -> None:
        if self.pending.endswith(b"\xff\xff"):
            del self.pending[-2:]
        self._drain()
        if self.pending or self.rows != self.total:
            raise self._damaged()

"""Vectors in SQLite: one row per document, the embedding as a float32 BLOB.

``vectors`` has flat, pandas-friendly columns (namespace, id, source, chunk position, content,
MIME type) plus ``metadata_json`` (all of the document's metadata) and ``embedding``: the unit
vector as little-endian float32 bytes, ``4 * dim`` of them (never JSON text). ``seq`` (the
rowid) keeps insertion order; the ``vectors_namespace`` index (which ends with the rowid) reads
a namespace back in that order without sorting. ``vector_namespaces`` records each namespace's
dimension, so two processes cannot mix lengths in one namespace.

Used by :class:`~agcore_lab.rag.sqlite_vectors.SqliteVectorStore`; every function runs inside
a transaction the caller holds.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agcore_lab.errors import ConflictError, InvalidInputError, StorageError

__all__ = [
    "VECTOR_SCHEMA",
    "VectorRows",
    "delete_vectors",
    "insert_vectors",
    "namespace_dim",
    "read_vectors",
]

VECTOR_SCHEMA = """
CREATE TABLE vector_namespaces (
    namespace  TEXT PRIMARY KEY,
    dim        INTEGER NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE vectors (
    seq           INTEGER PRIMARY KEY,
    namespace     TEXT NOT NULL,
    doc_id        TEXT NOT NULL,
    source_id     TEXT,
    chunk_index   INTEGER,
    start_index   INTEGER,
    end_index     INTEGER,
    mime_type     TEXT NOT NULL,
    content       TEXT NOT NULL,
    metadata_json TEXT NOT NULL,
    embedding     BLOB NOT NULL
);
CREATE UNIQUE INDEX vectors_doc ON vectors(namespace, doc_id);
CREATE INDEX vectors_namespace ON vectors(namespace)
"""

# (doc ids, (content, metadata_json, mime_type) per row, a float32 matrix whose first rows are
# the vectors)
VectorRows = tuple[list[str], list[tuple[str, str, str]], NDArray[np.float32]]


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _flat(metadata: dict[str, Any], key: str, kind: type) -> Any:
    value = metadata.get(key)
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def namespace_dim(conn: sqlite3.Connection, namespace: str) -> int | None:
    """The dimension recorded for ``namespace``, or ``None`` if it has none yet."""
    row = conn.execute(
        "SELECT dim FROM vector_namespaces WHERE namespace = ?", (namespace,)
    ).fetchone()
    return None if row is None else int(row[0])


def insert_vectors(
    conn: sqlite3.Connection,
    namespace: str,
    rows: Sequence[tuple[str, str, dict[str, Any], str]],
    vectors: NDArray[np.float32],
    created_at: str,
) -> None:
    """Insert ``rows`` (id, content, metadata, MIME type) with their unit ``vectors``.

    Raises:
        InvalidInputError: The namespace holds vectors of another dimension.
        ConflictError: An id is already stored in the namespace (perhaps by another process).
    """
    dim = int(vectors.shape[1])
    stored = namespace_dim(conn, namespace)
    if stored is None:
        conn.execute("INSERT INTO vector_namespaces VALUES (?, ?, ?)", (namespace, dim, created_at))
    elif stored != dim:
        raise InvalidInputError(
            f"namespace {namespace!r} holds vectors of dimension {stored}, not {dim}",
            namespace=namespace,
        )
    # Checked first, in this transaction: another process may have stored them.
    taken = _taken(conn, namespace, [row[0] for row in rows])
    if taken:
        raise ConflictError(
            f"ids already stored in namespace {namespace!r}: {', '.join(taken[:5])}; "
            "remove them first or add them with replace=[...]",
            namespace=namespace,
        )
    little = vectors.astype("<f4", copy=False)
    conn.executemany(
        "INSERT INTO vectors (namespace, doc_id, source_id, chunk_index, start_index, "
        "end_index, mime_type, content, metadata_json, embedding) "
        "VALUES (?,?,?,?,?,?,?,?,?,?)",
        [
            (
                namespace,
                doc_id,
                _flat(metadata, "source_id", str),
                _flat(metadata, "chunk_index", int),
                _flat(metadata, "start_index", int),
                _flat(metadata, "end_index", int),
                mime_type,
                content,
                _compact(metadata),
                little[i].tobytes(),
            )
            for i, (doc_id, content, metadata, mime_type) in enumerate(rows)
        ],
    )


def _taken(conn: sqlite3.Connection, namespace: str, ids: list[str]) -> list[str]:
    found: list[str] = []
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        marks = ",".join("?" * len(batch))
        found += [
            r[0]
            for r in conn.execute(
                f"SELECT doc_id FROM vectors WHERE namespace = ? AND doc_id IN ({marks})",
                (namespace, *batch),
            )
        ]
    return found


def delete_vectors(conn: sqlite3.Connection, namespace: str, ids: Sequence[str]) -> int:
    """Delete these ids from the namespace; return how many rows went."""
    gone = 0
    for start in range(0, len(ids), 500):
        batch = list(ids[start : start + 500])
        marks = ",".join("?" * len(batch))
        gone += conn.execute(
            f"DELETE FROM vectors WHERE namespace = ? AND doc_id IN ({marks})",
            (namespace, *batch),
        ).rowcount
    return gone


def read_vectors(conn: sqlite3.Connection, namespace: str, dim: int, spare: int = 0) -> VectorRows:
    """All rows of the namespace in insertion order.

    The vectors are copied straight into one float32 matrix with ``spare`` free rows after
    them (room to grow), with no intermediate joined buffer.
    """
    rows = conn.execute(
        "SELECT doc_id, content, metadata_json, mime_type, embedding FROM vectors "
        "INDEXED BY vectors_namespace WHERE namespace = ? ORDER BY seq",
        (namespace,),
    ).fetchall()
    count, width = len(rows), dim * 4
    matrix = np.empty((count + spare, dim), dtype="<f4")
    view = matrix.data.cast("B")
    offset = 0
    for row in rows:
        blob = row[4]
        if len(blob) != width:
            raise StorageError(
                f"namespace {namespace!r}: vector of {row[0]!r} is not of dimension {dim}",
                namespace=namespace,
            )
        view[offset : offset + width] = blob
        offset += width
    ids = [row[0] for row in rows]
    records = [(row[1], row[2], row[3]) for row in rows]
    return ids, records, matrix.astype(np.float32, copy=False)

"""Vector stores: the ``VectorStore`` protocol and ``InMemoryVectorStore``.

A store keeps documents with one vector each and finds the nearest ones by cosine similarity.
Vectors are normalized on insert, so cosine is a dot product: one contiguous float32 matrix
times the query, then ``argpartition`` for the exact top k — no per-query copies of the matrix
and no float64. The matrix grows by a quarter of its capacity at a time. A matrix of 4 MiB or
more lives in a mapping of its own advised for transparent huge pages, whether it was grown or
allocated whole (:mod:`agcore_lab.rag._matrix_memory`), so filling and searching it cost the
same either way.

:class:`~agcore_lab.rag.sqlite_vectors.SqliteVectorStore` is the same store persisted in a
:class:`~agcore_lab.store.sqlite.SqliteStore`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import JsonValue

from agcore_lab.errors import ConflictError, InvalidInputError
from agcore_lab.rag._matrix_memory import MAPPED, MAPPED_BYTES, MappedMatrix
from agcore_lab.rag._validate import (
    as_float32,
    check_count,
    check_filter,
    check_k,
    check_nonzero,
    id_list,
)
from agcore_lab.rag.documents import Document
from agcore_lab.rag.embeddings import normalize_rows

__all__ = ["InMemoryVectorStore", "MetadataFilter", "SearchHit", "VectorStore"]

MetadataFilter = Mapping[str, JsonValue]
# A row not yet turned into a Document: (content, metadata JSON, MIME type).
_Record = tuple[str, str, str]
_CHUNK = 4096  # rows normalized (or checked) at a time: temporaries stay small
_SLACK_BYTES = 4 << 20  # at most this much room beyond an add when the matrix grows
MAX_DIM = (
    1 << 20
)  # far beyond any embedding model (OpenAI's largest: 3,072); numpy refuses huge shapes
MAX_CAPACITY = 1 << 31  # rows reserved up front at most (more still fit: the matrix grows)
_NO_ROWS: NDArray[np.float32] = np.empty((0, 0), dtype=np.float32)  # while the mapping moves
_NO_ROWS.flags.writeable = False


class SearchHit(NamedTuple):
    """One search result: the document and its cosine similarity to the query (-1 to 1)."""

    document: Document
    score: float


@runtime_checkable
class VectorStore(Protocol):
    """Documents with one vector each, searchable by cosine similarity.

    Ids are unique within a store. Filters are equality on metadata keys, all of which must
    match (``{"source_id": "a.md", "lang": "en"}``).
    """

    @property
    def dim(self) -> int | None:
        """The vector length (``None`` until the first add)."""
        ...

    def add(
        self, documents: Sequence[Document], embeddings: ArrayLike, *, replace: Iterable[str] = ()
    ) -> None:
        """Add documents with their vectors (one row each), first removing the ids in
        ``replace`` in the same write. A duplicate id or a vector of the wrong length is an
        error and changes nothing."""
        ...

    def search(
        self, query_embedding: ArrayLike, k: int = 4, filter: MetadataFilter | None = None
    ) -> list[SearchHit]:
        """The ``k`` most similar documents, best first."""
        ...

    def remove(self, ids: Iterable[str]) -> int:
        """Remove these ids (unknown ones are ignored); return how many went."""
        ...

    def get(self, ids: Iterable[str]) -> list[Document]:
        """The documents with these ids, in that order; unknown ids are skipped."""
        ...

    def ids(self, filter: MetadataFilter | None = None) -> list[str]:
        """The ids stored (matching ``filter``), in insertion order."""
        ...

    def __len__(self) -> int: ...


def _json_key(value: object) -> str:
    """A canonical form for equality of JSON values (``true`` is not ``1``; ``1.0`` is ``1``)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


class InMemoryVectorStore:
    """A :class:`VectorStore` in memory.

    Args:
        dim: The vector length (at most 1,048,576); taken from the first add when not given.
        capacity: Rows to allocate at first (at most 2**31); the matrix grows by a quarter
            when full.

    Example:
        >>> from agcore_lab.rag import Document, MockEmbedding
        >>> embedding = MockEmbedding(dim=16)
        >>> docs = [Document(id=t, content=t, metadata={"n": len(t)}) for t in ("a", "bb", "cc")]
        >>> store = InMemoryVectorStore()
        >>> store.add(docs, embedding.embed([d.content for d in docs]))
        >>> [hit.document.id for hit in store.search(embedding.embed(["bb"])[0], k=1)]
        ['bb']
        >>> store.ids(filter={"n": 2})
        ['bb', 'cc']

    Notes:
        Thread-safe: one lock guards writes and searches. ``remove`` keeps insertion order,
        moving the rows after each removed one (O(rows)).
    """

    def __init__(self, dim: int | None = None, *, capacity: int = 1024) -> None:
        dim = check_count(dim, "dim", optional=True, maximum=MAX_DIM)
        self._dim = dim
        self._capacity = check_count(capacity, "capacity", maximum=MAX_CAPACITY)
        self._matrix: NDArray[np.float32] = np.empty((0, dim or 0), dtype=np.float32)
        # The mapping ``_matrix`` is the start of (``None``: a numpy array, or a loader's).
        self._memory: MappedMatrix | None = None
        self._count = 0
        self._ids: list[str] = []
        self._rows: list[Document | _Record] = []
        self._index: dict[str, int] = {}
        self._by_key: dict[str, dict[str, list[int]]] = {}  # metadata key -> value -> rows
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self._dim}, documents={self._count})"

    def __len__(self) -> int:
        return self._count

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._index

    @property
    def dim(self) -> int | None:
        """The vector length (``None`` until the first add)."""
        return self._dim

    @property
    def capacity(self) -> int:
        """Rows allocated for the matrix (it grows by a quarter, or to fit an add, when full)."""
        return int(self._matrix.shape[0])

    # -- writing ----------------------------------------------------------------------------

    def add(
        self, documents: Sequence[Document], embeddings: ArrayLike, *, replace: Iterable[str] = ()
    ) -> None:
        """Add documents with their vectors, after removing the ids in ``replace``.

        Raises:
            InvalidInputError: Not one vector per document, a vector of the wrong length, with
                NaN / infinity or all zeros, or an id twice in ``documents``.
            ConflictError: An id is already stored (and not in ``replace``).
        """
        docs = list(documents)
        vectors, ids = self._vectors(docs, embeddings)
        with self._lock:
            gone = [doc_id for doc_id in dict.fromkeys(id_list(replace, name="replace"))]
            gone = [doc_id for doc_id in gone if doc_id in self._index]
            leaving = set(gone)
            taken = (
                []  # the usual case, answered at C speed
                if self._index.keys().isdisjoint(ids)
                else [i for i in ids if i in self._index and i not in leaving]
            )
            if taken:
                raise ConflictError(
                    f"ids already stored: {', '.join(taken[:5])}; remove them first or pass "
                    "replace=[...]",
                    count=len(taken),
                )
            unit = self._stage(vectors)
            self._persist_add(docs, unit, gone)
            if vectors.shape[0] and self._dim is None:
                self._dim = int(vectors.shape[1])
            self._drop(gone)
            if gone and unit.shape[0]:  # the staged rows move down to follow the ones left
                self._matrix[self._count : self._count + unit.shape[0]] = unit
            self._append(docs, unit.shape[0], ids)

    def remove(self, ids: Iterable[str]) -> int:
        """Remove these ids; unknown ids are ignored (so it is idempotent).

        A bare string is one id: ``remove("ab")`` removes ``"ab"``.
        """
        wanted = id_list(ids)
        with self._lock:
            gone = [doc_id for doc_id in dict.fromkeys(wanted) if doc_id in self._index]
            if gone:
                self._persist_remove(gone)
                self._drop(gone)
            return len(gone)

    def _persist_add(
        self, docs: list[Document], vectors: NDArray[np.float32], gone: list[str]
    ) -> None:
        """Store the change durably before memory changes (nothing to do in memory)."""

    def _adopt(
        self,
        dim: int | None,
        loaded: tuple[list[str], Iterable[Any], NDArray[np.float32]] | None,
    ) -> None:
        """Replace what this store holds with ``loaded`` (ids, records, matrix) read back from
        a durable store's namespace of dimension ``dim`` (``None``: the namespace is empty).
        The caller holds the lock."""
        self._by_key.clear()
        self._dim = dim
        self._memory = None
        if loaded is None:
            self._matrix = np.empty((0, 0), dtype=np.float32)
            self._ids, self._rows, self._index, self._count = [], [], {}, 0
            return
        ids, records, matrix = loaded
        self._matrix = matrix
        self._ids = ids
        self._rows = list(records)
        self._index = {doc_id: row for row, doc_id in enumerate(ids)}
        self._count = len(ids)

    def _persist_remove(self, gone: list[str]) -> None:
        """Store the removal durably before memory changes (nothing to do in memory)."""

    def _vectors(
        self, docs: list[Document], embeddings: ArrayLike
    ) -> tuple[NDArray[np.float32], list[str]]:
        """Validate: a float32 ``(len(docs), dim)`` array, not yet normalized (the caller's
        own array when it already is one: it is only read, never changed), and the ids."""
        vectors = as_float32(embeddings, "embeddings", copy=False)
        if vectors.size == 0 and not docs:
            return np.zeros((0, self._dim or 0), dtype=np.float32), []
        if vectors.ndim != 2 or vectors.shape[0] != len(docs):
            raise InvalidInputError(
                f"need one vector per document: {len(docs)} documents, embeddings of shape "
                f"{vectors.shape}"
            )
        if self._dim is not None and vectors.shape[1] != self._dim:
            raise InvalidInputError(
                f"vectors have dimension {vectors.shape[1]}, this store holds dimension {self._dim}"
            )
        if vectors.shape[1] == 0 or not _finite(vectors):
            raise InvalidInputError("vectors must be non-empty and finite (no NaN or infinity)")
        check_nonzero(vectors, "vector")
        for doc in docs:
            if not isinstance(doc, Document):
                raise InvalidInputError(f"expected Document objects, got {type(doc).__name__}")
        ids = [doc.id for doc in docs]
        if len(set(ids)) != len(ids):
            raise InvalidInputError(f"id {_first_repeat(ids)!r} appears twice in one add")
        return vectors, ids

    def _stage(self, vectors: NDArray[np.float32]) -> NDArray[np.float32]:
        """Normalize ``vectors`` straight into the free rows after the stored ones (growing
        the matrix first when needed) and return that view. No other copy is made, and the
        stored rows are untouched, so a write that fails afterwards changes nothing."""
        count, added = self._count, vectors.shape[0]
        if not added:
            return vectors
        self._reserve(count + added, int(vectors.shape[1]))
        target = self._matrix[count : count + added]
        for start in range(0, added, _CHUNK):  # the same arithmetic as normalize_rows
            rows = vectors[start : start + _CHUNK]
            norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
            norms[norms == 0] = 1.0
            np.divide(rows, norms[:, None], out=target[start : start + _CHUNK])
        return target

    def _reserve(self, rows: int, dim: int) -> None:
        """Make room for ``rows`` rows of ``dim`` in the matrix, keeping the stored ones.

        The capacity grows by a quarter (or to ``rows`` when that is more; never more than
        :data:`_SLACK_BYTES` of rows beyond ``rows``), in place, so growing does not copy the
        stored rows, nor touch the free rows. A matrix of :data:`MAPPED_BYTES` or more lives in
        a mapping of its own (:class:`MappedMatrix`, advised for huge pages), which the kernel
        moves with ``mremap``; our own view of it is dropped first (a mapping with views
        cannot move), and were another view of it alive, the rows would be copied into a new
        mapping instead. A smaller matrix (or any, where such mappings do not exist) is a numpy
        array, reallocated with ``ndarray.resize``. No other view of the matrix outlives a call
        holding the lock, which is what makes that safe (``refcheck=False``). A matrix the
        store did not allocate (one handed over by a loader) is copied once into one it did.
        """
        matrix, count = self._matrix, self._count
        if rows <= matrix.shape[0] and matrix.shape[1] == dim:
            return
        slack = max(1, _SLACK_BYTES // (4 * dim))
        grown = min(matrix.shape[0] + matrix.shape[0] // 4, rows + slack)
        capacity = max(self._capacity, rows, grown)
        if not count or matrix.shape[1] != dim:
            self._allocate(capacity, dim)
            return
        memory, mapped = self._memory, MAPPED and 4 * capacity * dim >= MAPPED_BYTES
        if memory is not None:
            held, moved = matrix.shape[0], False
            del matrix
            self._matrix = _NO_ROWS
            try:
                moved = memory.grow(capacity, dim)
            finally:
                self._matrix = memory.view(capacity if moved else held, dim)
            if moved:
                return
            matrix = self._matrix
        elif not mapped and matrix.flags.owndata and matrix.flags.c_contiguous:
            # Read-only while resized: numpy then leaves the new rows as they are instead
            # of zeroing them (they are written before they are counted), so the pages
            # beyond the add stay untouched, not resident.
            matrix.flags.writeable = False
            try:
                matrix.resize((capacity, dim), refcheck=False)
            finally:
                matrix.flags.writeable = True
            return
        self._matrix = matrix  # kept until the copy is made, should the allocation fail
        self._allocate(capacity, dim)
        self._matrix[:count] = matrix[:count]

    def _allocate(self, rows: int, dim: int) -> None:
        """A new matrix of ``rows`` rows of ``dim``, contents undefined: in a mapping of its
        own when big enough (and possible), else a numpy array."""
        if MAPPED and 4 * rows * dim >= MAPPED_BYTES:
            try:
                memory = MappedMatrix(rows, dim)
            except OSError:  # out of address space: numpy may still find room, or say so
                pass
            else:
                self._matrix, self._memory = memory.view(rows, dim), memory
                return
        self._matrix, self._memory = np.empty((rows, dim), dtype=np.float32), None

    def _append(
        self, docs: Sequence[Document | _Record], added: int, ids: Sequence[str] | None = None
    ) -> None:
        """Take in the ``added`` rows already normalized into the matrix after the stored
        ones (``ids`` is needed when ``docs`` holds records)."""
        count = self._count
        if not added:
            return
        new_ids = [d.id for d in docs if isinstance(d, Document)] if ids is None else ids
        self._index.update(zip(new_ids, range(count, count + len(new_ids)), strict=True))
        self._ids.extend(new_ids)
        self._rows.extend(docs)
        self._count = count + added
        self._by_key.clear()

    def _drop(self, gone: list[str]) -> None:
        if not gone:
            return
        positions = sorted(self._index.pop(doc_id) for doc_id in gone)
        matrix, count = self._matrix, self._count
        # Close each gap by moving the block after it down, keeping insertion order.
        for shift, position in enumerate(positions, start=1):
            stop = positions[shift] if shift < len(positions) else count
            matrix[position + 1 - shift : stop - shift] = matrix[position + 1 : stop]
        dropped = set(positions)
        self._ids = [d for i, d in enumerate(self._ids) if i not in dropped]
        self._rows = [r for i, r in enumerate(self._rows) if i not in dropped]
        self._count = count - len(positions)
        for i in range(positions[0], self._count):
            self._index[self._ids[i]] = i
        self._by_key.clear()

    # -- reading ----------------------------------------------------------------------------

    def _doc(self, row: int) -> Document:
        item = self._rows[row]
        if isinstance(item, Document):
            return item
        content, metadata_json, mime_type = item
        doc = Document.trusted(self._ids[row], content, json.loads(metadata_json), mime_type)
        self._rows[row] = doc
        return doc

    def get(self, ids: Iterable[str]) -> list[Document]:
        """The documents with these ids, in that order; unknown ids are skipped.

        A bare string is one id: ``get("doc-1")`` is ``get(["doc-1"])``.
        """
        wanted = id_list(ids)
        with self._lock:
            return [self._doc(self._index[i]) for i in wanted if i in self._index]

    def vectors(self, ids: Iterable[str] | None = None) -> NDArray[np.float32]:
        """A copy of the stored (unit-length) vectors of ``ids`` in that order — unknown ids
        are skipped — or of every document in insertion order."""
        with self._lock:
            if ids is None:
                return self._matrix[: len(self._ids)].copy()
            rows = [self._index[i] for i in id_list(ids) if i in self._index]
            return self._matrix[rows].copy()

    def ids(self, filter: MetadataFilter | None = None) -> list[str]:
        """The stored ids (those matching ``filter``), in insertion order."""
        check_filter(filter)
        with self._lock:
            if not filter:
                return list(self._ids)
            return [self._ids[row] for row in self._matching(filter)]

    def _matching(self, filter: MetadataFilter) -> NDArray[np.intp]:
        """Rows whose metadata has every key of ``filter`` with an equal JSON value.

        Each key used in a filter gets an index (value -> rows), built in one pass over the
        rows and kept until the next write, so many lookups on one key (the pipeline's
        ``source_id``) cost one pass in all.
        """
        rows = np.arange(0)
        for number, (name, value) in enumerate(filter.items()):
            index = self._by_key.get(name)
            if index is None:
                index = {}
                for row in range(self._count):
                    metadata = self._doc(row).metadata
                    if name in metadata:
                        index.setdefault(_json_key(metadata[name]), []).append(row)
                self._by_key[name] = index
            found = np.array(index.get(_json_key(value), ()), dtype=np.intp)
            rows = found if number == 0 else np.intersect1d(rows, found, assume_unique=True)
            if not rows.size:
                break
        return rows.astype(np.intp, copy=False)

    def _query(self, query: ArrayLike, ndim: int) -> NDArray[np.float32]:
        vectors = as_float32(query, "query", ndmin=ndim)
        if vectors.ndim != ndim or (self._dim is not None and vectors.shape[-1] != self._dim):
            raise InvalidInputError(
                f"query must have shape {'(dim,)' if ndim == 1 else '(n, dim)'} with dim "
                f"{self._dim}, got {vectors.shape}"
            )
        if vectors.size == 0 or not np.isfinite(vectors).all():
            raise InvalidInputError("query must be non-empty and finite (no NaN or infinity)")
        check_nonzero(vectors, "query")
        normalize_rows(vectors.reshape(-1, vectors.shape[-1]))
        return vectors

    def search(
        self, query_embedding: ArrayLike, k: int = 4, filter: MetadataFilter | None = None
    ) -> list[SearchHit]:
        """The ``k`` documents most similar to ``query_embedding``, best first.

        Exact: every stored vector is scored (one float32 matrix-vector product) and the top
        ``k`` are picked with ``argpartition``. Ties are broken by insertion order.

        Raises:
            InvalidInputError: The query is not one finite, non-zero vector of the store's
                dimension; ``k`` is not an int >= 0; ``filter`` is not a mapping.
        """
        k = check_k(k)
        check_filter(filter)
        query = self._query(query_embedding, 1)
        with self._lock:
            if k == 0 or not self._count:
                return []
            scores = self._matrix[: self._count] @ query
            rows = self._matching(filter) if filter else None
            top = _top_k(scores, k, rows)
            return [SearchHit(self._doc(int(r)), float(scores[r])) for r in top]

    def search_batch(
        self, query_embeddings: ArrayLike, k: int = 4, filter: MetadataFilter | None = None
    ) -> list[list[SearchHit]]:
        """:meth:`search` for many queries at once (one matrix-matrix product)."""
        k = check_k(k)
        check_filter(filter)
        queries = self._query(query_embeddings, 2)
        with self._lock:
            if k == 0 or not self._count:
                return [[] for _ in range(queries.shape[0])]
            scores = queries @ self._matrix[: self._count].T
            rows = self._matching(filter) if filter else None
            results = []
            for line in scores:
                top = _top_k(line, k, rows)
                results.append([SearchHit(self._doc(int(r)), float(line[r])) for r in top])
            return results


def _first_repeat(ids: list[str]) -> str:
    seen: set[str] = set()
    for doc_id in ids:
        if doc_id in seen:
            return doc_id
        seen.add(doc_id)
    raise AssertionError("no id repeats")


def _finite(vectors: NDArray[np.float32]) -> bool:
    """No NaN or infinity, checked a slice at a time (no mask as big as the input)."""
    rows = vectors.shape[0]
    return all(np.isfinite(vectors[i : i + _CHUNK]).all() for i in range(0, rows, _CHUNK))


def _top_k(scores: NDArray[np.float32], k: int, rows: NDArray[np.intp] | None) -> NDArray[np.intp]:
    """Row numbers of the ``k`` best scores (only among ``rows`` when given), best first."""
    if rows is not None:
        if not rows.size:
            return rows
        return rows[_top_k(scores[rows], k, None)]
    n = scores.shape[0]
    if k < n:
        top = np.argpartition(scores, n - k)[n - k :]
        # Among scores equal to the k-th best, keep the earliest rows (argpartition picks any).
        floor = scores[top].min()
        above = top[scores[top] > floor]
        ties = np.flatnonzero(scores == floor)
        top = np.concatenate([above, ties[: k - above.size]])
        top.sort()  # insertion order first, so the stable sort below breaks ties by it
    else:
        top = np.arange(n)
    return top[np.argsort(-scores[top], kind="stable")]

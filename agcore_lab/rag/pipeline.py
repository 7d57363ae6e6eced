"""``RagPipeline``: split, embed in batches, store; then retrieve.

Ingesting a document replaces the chunks it had in the store (its chunks are found by their
``source_id``) in the same write that adds the new ones — one write per embedding batch, for the
documents completed by it — so a re-ingest never duplicates chunks and an interrupted ingest
leaves each document either fully old or fully new. A document whose
content, metadata, splitter and embedding are all unchanged is skipped.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from agcore_lab.errors import InvalidInputError
from agcore_lab.rag._validate import check_count, check_filter, check_k
from agcore_lab.rag.documents import Document
from agcore_lab.rag.embeddings import Embedding, HashingEmbedding
from agcore_lab.rag.splitter import RecursiveCharacterSplitter
from agcore_lab.rag.vectorstores import InMemoryVectorStore, MetadataFilter, SearchHit, VectorStore

__all__ = ["TEXT_SUFFIXES", "IngestProgress", "IngestReport", "ProgressCallback", "RagPipeline"]

TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".rst", ".text")
_NONE = np.zeros((0, 0), dtype=np.float32)


@dataclass(frozen=True)
class IngestProgress:
    """How far an ingest is, passed to the progress callback after each batch."""

    documents_done: int
    documents_total: int
    chunks_done: int
    chunks_total: int

    @property
    def fraction(self) -> float:
        """Done, from 0 to 1 (by chunks; by documents when there are no chunks)."""
        if self.chunks_total:
            return self.chunks_done / self.chunks_total
        return self.documents_done / self.documents_total if self.documents_total else 1.0


ProgressCallback = Callable[[IngestProgress], object]


@dataclass(frozen=True)
class IngestReport:
    """What an ingest did.

    Attributes:
        documents: Documents given.
        ingested: Documents split, embedded and stored.
        unchanged: Documents skipped because nothing about them changed.
        chunks: Chunks stored.
        replaced: Old chunks removed (from documents ingested before).
        seconds: Wall time.
    """

    documents: int
    ingested: int
    unchanged: int
    chunks: int
    replaced: int
    seconds: float


@dataclass
class _Planned:
    document: Document
    chunks: list[Document]
    old_ids: list[str]


def _document_list(documents: object) -> list[Document]:
    if isinstance(documents, Document):
        return [documents]
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Iterable):
        raise InvalidInputError(
            "ingest() takes a Document or an iterable of Documents (make one with "
            f"Document.from_text(...)), got {type(documents).__name__}"
        )
    docs = list(documents)
    if not all(isinstance(d, Document) for d in docs):
        raise InvalidInputError("ingest() takes Document objects (Document.from_text(...))")
    return docs


class RagPipeline:
    """Split documents, embed the chunks in batches, keep them in a vector store; retrieve.

    Args:
        splitter: Defaults to ``RecursiveCharacterSplitter()`` (1000 / 200).
        embedding: Defaults to the offline :class:`~agcore_lab.rag.embeddings.HashingEmbedding`.
        store: Defaults to an :class:`~agcore_lab.rag.vectorstores.InMemoryVectorStore`.
        batch_size: Chunks per ``embed`` call.
        skip_unchanged: Skip documents whose stored chunks were made from the same content,
            metadata, splitter and embedding.

    Example:
        >>> from agcore_lab.rag import Document, RagPipeline, RecursiveCharacterSplitter
        >>> pipeline = RagPipeline(RecursiveCharacterSplitter(chunk_size=60, chunk_overlap=0))
        >>> report = pipeline.ingest([
        ...     Document(id="slots", content="A context slot forks the conversation."),
        ...     Document(id="time", content="A checkpoint lets you roll a session back."),
        ... ])
        >>> report.chunks
        2
        >>> pipeline.retrieve("roll back to a checkpoint", k=1)[0].document.metadata["source_id"]
        'time'

    Notes:
        ``ingest`` is synchronous (embedding is CPU work or blocking HTTP); in a notebook pass
        ``progress=IngestProgressBar()`` from :mod:`agcore_lab.jupyter.ingest_progress`.
        Do not run two ingests into one store at the same time.
    """

    def __init__(
        self,
        splitter: RecursiveCharacterSplitter | None = None,
        embedding: Embedding | None = None,
        store: VectorStore | None = None,
        *,
        batch_size: int = 64,
        skip_unchanged: bool = True,
    ) -> None:
        check_count(batch_size, "batch_size")
        self.splitter = splitter or RecursiveCharacterSplitter()
        self.embedding: Embedding = embedding or HashingEmbedding()
        self.store: VectorStore = store if store is not None else InMemoryVectorStore()
        self.batch_size = batch_size
        self.skip_unchanged = skip_unchanged

    def __repr__(self) -> str:
        return f"RagPipeline({self.splitter!r}, {self.embedding!r}, {self.store!r})"

    def _fingerprint(self, doc: Document) -> str:
        digest = hashlib.sha256()
        for part in (
            doc.content,
            json.dumps(doc.metadata, sort_keys=True, ensure_ascii=False, default=str),
            doc.mime_type,
            repr(self.splitter),
            repr(self.embedding),
        ):
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
        return digest.hexdigest()[:16]

    def _plan(self, doc: Document) -> _Planned | None:
        """The chunks to store for ``doc`` (``None`` when it is unchanged)."""
        old_ids = self.store.ids(filter={"source_id": doc.id})
        fingerprint = self._fingerprint(doc)
        if self.skip_unchanged and old_ids:
            first = self.store.get(old_ids[:1])
            meta = first[0].metadata if first else {}
            if meta.get("source_hash") == fingerprint and meta.get("chunk_count") == len(old_ids):
                return None
        chunks = [
            chunk.model_copy(update={"metadata": {**chunk.metadata, "source_hash": fingerprint}})
            for chunk in self.splitter.split(doc)
        ]
        return _Planned(doc, chunks, old_ids)

    def ingest(
        self, documents: Document | Iterable[Document], *, progress: ProgressCallback | None = None
    ) -> IngestReport:
        """Split, embed and store documents, replacing the chunks they had.

        Args:
            documents: The documents (ids must be unique among them).
            progress: Called with an :class:`IngestProgress` at the start and after each
                batch.

        Raises:
            InvalidInputError: Repeated document ids, or an embedding whose dimension differs
                from the store's.
        """
        started = time.perf_counter()
        docs = _document_list(documents)
        if len({d.id for d in docs}) != len(docs):
            raise InvalidInputError("document ids must be unique within one ingest")
        stored_dim = self.store.dim
        if docs and stored_dim is not None and self.embedding.dim != stored_dim:
            raise InvalidInputError(
                f"the embedding makes vectors of dimension {self.embedding.dim}, the store "
                f"holds dimension {stored_dim}"
            )
        planned = [p for p in (self._plan(d) for d in docs) if p is not None]
        unchanged = len(docs) - len(planned)
        texts = [chunk.content for p in planned for chunk in p.chunks]
        total = len(texts)

        done_docs = chunks_done = replaced = 0
        pending: NDArray[np.float32] | None = None  # vectors of chunks not stored yet

        def report() -> None:
            if progress is not None:
                progress(IngestProgress(unchanged + done_docs, len(docs), chunks_done, total))

        def store_ready() -> None:
            # Every document whose chunks are all embedded goes into one add (one write):
            # each document is replaced whole, and a batch costs one transaction.
            nonlocal done_docs, pending, replaced
            ready = done_docs
            embedded = 0 if pending is None else pending.shape[0]
            chunks: list[Document] = []
            old_ids: list[str] = []
            while ready < len(planned) and len(planned[ready].chunks) <= embedded - len(chunks):
                chunks += planned[ready].chunks
                old_ids += planned[ready].old_ids
                ready += 1
            if ready == done_docs:
                return
            vectors = pending[: len(chunks)] if pending is not None and chunks else _NONE
            self.store.add(chunks, vectors, replace=old_ids)
            replaced += len(old_ids)
            if pending is not None:
                pending = pending[len(chunks) :]
            done_docs = ready

        report()
        store_ready()  # documents that have no chunks (any more)
        for start in range(0, total, self.batch_size):
            batch = self.embedding.embed(texts[start : start + self.batch_size])
            pending = batch if pending is None else np.concatenate([pending, batch])
            chunks_done += batch.shape[0]
            store_ready()
            report()
        if not total:
            report()
        return IngestReport(
            documents=len(docs),
            ingested=len(planned),
            unchanged=unchanged,
            chunks=total,
            replaced=replaced,
            seconds=time.perf_counter() - started,
        )

    def ingest_files(
        self,
        paths: str | Path | Iterable[str | Path],
        *,
        root: str | Path | None = None,
        encoding: str = "utf-8",
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Read text and Markdown files and ingest them.

        Args:
            paths: Files, or directories (their ``.md``, ``.markdown``, ``.txt``, ``.rst``
                and ``.text`` files, recursively, in sorted order).
            root: Make document ids relative to this directory (``docs/rag.md`` rather than
                ``/home/me/project/docs/rag.md``); ids are the paths as given otherwise.
            encoding: The files' text encoding.
            progress: As for :meth:`ingest`.

        Raises:
            InvalidInputError: A path does not exist or a file cannot be read as text.
        """
        items = [paths] if isinstance(paths, str | Path) else list(paths)
        files: list[Path] = []
        for item in map(Path, items):
            if item.is_dir():
                files += sorted(
                    p for p in item.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES
                )
            elif item.is_file():
                files.append(item)
            else:
                raise InvalidInputError(f"no such file or directory: {item}")
        base = None if root is None else Path(root).resolve()
        docs = []
        for file in files:
            doc_id = None
            if base is not None:
                try:
                    doc_id = file.resolve().relative_to(base).as_posix()
                except ValueError as exc:
                    raise InvalidInputError(f"{file} is not under root {base}") from exc
            docs.append(Document.from_file(file, id=doc_id, encoding=encoding))
        return self.ingest(docs, progress=progress)

    def retrieve(
        self, query: str, k: int = 4, *, filter: MetadataFilter | None = None
    ) -> list[SearchHit]:
        """The ``k`` chunks most similar to ``query``, best first.

        Raises:
            InvalidInputError: ``query`` is not a string, ``k`` is not an int >= 0, or
                ``filter`` is not a mapping.
        """
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
        check_k(k)
        check_filter(filter)
        return self.store.search(self.embedding.embed([query])[0], k, filter)

    def sources(self) -> list[str]:
        """The ids of the documents that have chunks in the store."""
        return sorted({str(d.metadata.get("source_id")) for d in self.store.get(self.store.ids())})

"""The RAG step of the offline demo: ingest a few built-in notes, then retrieve.

``rag_demo_step(store, out)`` keeps the vectors in the demo's SQLite file (namespace
``demo-notes``), so running the demo again finds the notes unchanged and skips them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

from agcore_lab.rag.documents import Document
from agcore_lab.rag.embeddings import HashingEmbedding
from agcore_lab.rag.open_vectors import open_vector_store
from agcore_lab.rag.pipeline import RagPipeline
from agcore_lab.rag.splitter import RecursiveCharacterSplitter
from agcore_lab.store.postgres import PostgresStore
from agcore_lab.store.sqlite import SqliteStore

__all__ = ["DEMO_NOTES", "DEMO_QUERIES", "rag_demo_step"]

DEMO_NOTES = {
    "notes/slots.md": (
        "# Context slots\n\nA context slot is one line of conversation. Fork a slot to try an "
        "alternative without losing the original, compare the two side by side, then merge "
        "the better one back with the append, replace or summarize strategy."
    ),
    "notes/time-travel.md": (
        "# Time travel\n\nEvery turn ends with a checkpoint. Roll a session back to an "
        "earlier checkpoint to undo turns, or fork a new child session from any checkpoint. "
        "A checkpoint costs the same at turn 1,000 as at turn 10."
    ),
    "notes/storage.md": (
        "# Storage\n\nEverything lives in one SQLite file in WAL mode: sessions, messages, "
        "checkpoints and vectors. Two kernels may open the same file at once."
    ),
    "notes/rag-zh.md": (
        "# 检索增强生成\n\n文档先被切分成片段，再转换成向量存入向量库。"
        "提问时，系统找出最相似的片段，作为上下文交给模型。"
    ),
}
DEMO_QUERIES = ("how do I undo a turn?", "向量库里存的是什么？")


def _clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal columns (CJK characters take two), with "…"."""
    used = 0
    for position, char in enumerate(text):
        used += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
        if used > width - 1:
            return text[:position] + "…"
    return text


def rag_demo_step(store: SqliteStore, out: Callable[[str], None] = print) -> dict[str, Any]:
    """Ingest :data:`DEMO_NOTES` into ``store`` and answer :data:`DEMO_QUERIES`.

    Args:
        store: The demo's SQLite store (the vectors go in namespace ``demo-notes``).
        out: Where the printed lines go.

    Returns:
        ``documents``, ``ingested``, ``unchanged``, ``chunks`` (stored in the namespace),
        and ``answers``: for each query, the ids of the sources of its top chunks.
    """
    backend = "PostgreSQL" if isinstance(store, PostgresStore) else "SQLite"
    out(f"  RAG: split, embed (offline hashing embedding), store in {backend}, retrieve")
    pipeline = RagPipeline(
        RecursiveCharacterSplitter(chunk_size=160, chunk_overlap=30),
        HashingEmbedding(),
        open_vector_store(store, "demo-notes"),
    )
    docs = [
        Document.from_text(text, id=doc_id, mime_type="text/markdown")
        for doc_id, text in DEMO_NOTES.items()
    ]
    report = pipeline.ingest(docs)
    out(
        f"  ingested {report.ingested} note(s) into {report.chunks} chunk(s); "
        f"{report.unchanged} unchanged since the last run; "
        f"{len(pipeline.store)} chunk(s) stored"
    )
    answers: dict[str, list[str]] = {}
    for query in DEMO_QUERIES:
        hits = pipeline.retrieve(query, k=2)
        answers[query] = [str(hit.document.metadata["source_id"]) for hit in hits]
        out(f"  ? {query}")
        for hit in hits:
            out(f"    {hit.score:.3f}  {hit.document.id}")
            out(f"           {_clip(' '.join(hit.document.content.split()), 72)}")
    return {
        "documents": len(docs),
        "ingested": report.ingested,
        "unchanged": report.unchanged,
        "chunks": len(pipeline.store),
        "answers": answers,
    }

"""RagPipeline: batches, progress, re-ingest replaces, unchanged documents skipped, files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agcore_lab.errors import InvalidInputError
from agcore_lab.rag import (
    Document,
    HashingEmbedding,
    IngestProgress,
    InMemoryVectorStore,
    MockEmbedding,
    RagPipeline,
    RecursiveCharacterSplitter,
    SqliteVectorStore,
)
from agcore_lab.rag.demo_step import DEMO_NOTES, rag_demo_step
from agcore_lab.store.sqlite import SqliteStore

SLOTS = "A context slot forks the conversation. Merge it back when the branch wins. " * 4
TIME = "Every turn ends with a checkpoint. Roll a session back to undo a turn. " * 4


def _pipeline(batch_size: int = 3, **kwargs: object) -> RagPipeline:
    return RagPipeline(
        RecursiveCharacterSplitter(chunk_size=60, chunk_overlap=10),
        MockEmbedding(dim=8),
        InMemoryVectorStore(),
        batch_size=batch_size,
        **kwargs,  # type: ignore[arg-type]
    )


def test_ingest_splits_embeds_in_batches_and_reports_progress() -> None:
    pipeline = _pipeline(batch_size=4)
    seen: list[IngestProgress] = []
    report = pipeline.ingest(
        [Document(id="slots", content=SLOTS), Document(id="time", content=TIME)],
        progress=seen.append,
    )
    chunks = len(pipeline.store)
    assert report.documents == 2 and report.ingested == 2 and report.chunks == chunks > 4
    assert report.replaced == 0 and report.unchanged == 0 and report.seconds >= 0
    embedding = pipeline.embedding
    assert isinstance(embedding, MockEmbedding)
    assert all(len(batch) <= 4 for batch in embedding.calls)
    assert sum(len(batch) for batch in embedding.calls) == chunks
    assert seen[0] == IngestProgress(0, 2, 0, chunks)
    assert seen[-1] == IngestProgress(2, 2, chunks, chunks) and seen[-1].fraction == 1.0
    done = [p.chunks_done for p in seen]
    assert done == sorted(done)
    assert pipeline.sources() == ["slots", "time"]


def test_reingest_replaces_chunks_instead_of_duplicating() -> None:
    pipeline = _pipeline()
    pipeline.ingest([Document(id="doc", content=SLOTS), Document(id="other", content=TIME)])
    before = pipeline.store.ids(filter={"source_id": "doc"})
    report = pipeline.ingest([Document(id="doc", content="Now it is short.")])
    assert report.replaced == len(before) and report.chunks == 1
    assert pipeline.store.ids(filter={"source_id": "doc"}) == ["doc#0"]
    assert pipeline.store.get(["doc#0"])[0].content == "Now it is short."
    assert pipeline.store.ids(filter={"source_id": "other"})  # untouched
    # A document emptied of text loses its chunks.
    pipeline.ingest([Document(id="doc", content="   ")])
    assert pipeline.store.ids(filter={"source_id": "doc"}) == []


def test_unchanged_documents_are_skipped_unless_asked() -> None:
    pipeline = _pipeline()
    docs = [Document(id="doc", content=SLOTS, metadata={"v": 1})]
    pipeline.ingest(docs)
    embedding = pipeline.embedding
    assert isinstance(embedding, MockEmbedding)
    calls = len(embedding.calls)
    report = pipeline.ingest(docs)
    assert (report.unchanged, report.ingested, len(embedding.calls)) == (1, 0, calls)
    changed = pipeline.ingest([Document(id="doc", content=SLOTS, metadata={"v": 2})])
    assert changed.ingested == 1  # metadata is part of what "unchanged" means
    always = _pipeline(skip_unchanged=False)
    always.ingest(docs)
    assert always.ingest(docs).ingested == 1


def test_retrieve_finds_the_right_source_with_the_default_embedding() -> None:
    pipeline = RagPipeline(RecursiveCharacterSplitter(chunk_size=80, chunk_overlap=0))
    pipeline.ingest([Document(id="slots", content=SLOTS), Document(id="time", content=TIME)])
    hits = pipeline.retrieve("how do I roll back a session?", k=3)
    assert hits[0].document.metadata["source_id"] == "time"
    filtered = pipeline.retrieve("roll back", k=3, filter={"source_id": "slots"})
    assert {h.document.metadata["source_id"] for h in filtered} == {"slots"}


def test_ingest_errors() -> None:
    pipeline = _pipeline()
    with pytest.raises(InvalidInputError, match="unique"):
        pipeline.ingest([Document(id="a", content="x"), Document(id="a", content="y")])
    pipeline.ingest([Document(id="a", content="x")])
    other = RagPipeline(pipeline.splitter, MockEmbedding(dim=4), pipeline.store)
    with pytest.raises(InvalidInputError, match="dimension 4"):
        other.ingest([Document(id="b", content="y")])
    with pytest.raises(InvalidInputError):
        RagPipeline(batch_size=0)


def test_ingest_files_reads_files_and_directories(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\nAlpha text about slots.", encoding="utf-8")
    (docs / "sub" / "b.txt").write_text("Beta text about checkpoints.", encoding="utf-8")
    (docs / "image.png").write_bytes(b"\x89PNG")
    pipeline = _pipeline()
    report = pipeline.ingest_files(docs, root=tmp_path)
    assert report.documents == 2
    assert pipeline.sources() == ["docs/a.md", "docs/sub/b.txt"]
    chunk = pipeline.store.get(["docs/a.md#0"])[0]
    assert chunk.mime_type == "text/markdown" and chunk.metadata["name"] == "a.md"
    single = _pipeline().ingest_files(docs / "a.md")
    assert single.documents == 1
    with pytest.raises(InvalidInputError, match="no such file"):
        pipeline.ingest_files(tmp_path / "missing")
    with pytest.raises(InvalidInputError, match="not under root"):
        pipeline.ingest_files(docs / "a.md", root=tmp_path / "elsewhere")


def test_pipeline_over_sqlite_survives_reopening(tmp_path: Path) -> None:
    db = tmp_path / "rag.db"
    first = RagPipeline(
        RecursiveCharacterSplitter(80, 10),
        HashingEmbedding(dim=128),
        SqliteVectorStore(SqliteStore(db)),
    )
    first.ingest([Document(id="slots", content=SLOTS), Document(id="time", content=TIME)])
    again = RagPipeline(first.splitter, first.embedding, SqliteVectorStore(SqliteStore(db)))
    assert again.store.ids() == first.store.ids()
    assert again.ingest([Document(id="time", content=TIME)]).unchanged == 1
    assert again.retrieve("roll back", k=1)[0].document.metadata["source_id"] == "time"
    assert np.allclose(
        again.store.search(np.ones(128), k=3)[0].score,
        first.store.search(np.ones(128), k=3)[0].score,
    )


def test_demo_step_ingests_then_skips_on_the_second_run() -> None:
    store = SqliteStore(":memory:")
    lines: list[str] = []
    result = rag_demo_step(store, lines.append)
    assert result["documents"] == len(DEMO_NOTES) == result["ingested"]
    assert result["chunks"] > len(DEMO_NOTES)
    answers = result["answers"]
    assert answers["how do I undo a turn?"][0] == "notes/time-travel.md"
    assert answers["向量库里存的是什么？"][0] == "notes/rag-zh.md"
    assert any("RAG" in line for line in lines)
    again = rag_demo_step(store, lines.append)
    assert again["unchanged"] == len(DEMO_NOTES) and again["chunks"] == result["chunks"]

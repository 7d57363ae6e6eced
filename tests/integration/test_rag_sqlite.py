"""SqliteVectorStore on a real file: persist and reopen, and two processes sharing one file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agcore_lab.errors import ConflictError
from agcore_lab.rag import (
    Document,
    HashingEmbedding,
    MockEmbedding,
    RagPipeline,
    RecursiveCharacterSplitter,
    SqliteVectorStore,
)
from agcore_lab.store.sqlite import SqliteStore

pytestmark = pytest.mark.timeout(120)
DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_persist_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    pipeline = RagPipeline(
        RecursiveCharacterSplitter(400, 50),
        HashingEmbedding(),
        SqliteVectorStore(SqliteStore(path)),
    )
    report = pipeline.ingest_files(DOCS, root=DOCS.parent)
    query = "how do I roll back a session to a checkpoint?"
    before = [(h.document.id, h.score) for h in pipeline.retrieve(query, k=5)]
    assert report.chunks == len(pipeline.store) > 20

    reopened = SqliteVectorStore(SqliteStore(path))
    assert reopened.ids() == pipeline.store.ids() and reopened.dim == 1024
    again = RagPipeline(pipeline.splitter, pipeline.embedding, reopened)
    after = [(h.document.id, h.score) for h in again.retrieve(query, k=5)]
    assert [i for i, _ in after] == [i for i, _ in before]
    assert np.allclose([s for _, s in after], [s for _, s in before], atol=1e-6)
    assert again.ingest_files(DOCS, root=DOCS.parent).unchanged == report.documents
    doc = again.store.get([before[0][0]])[0]
    assert doc.metadata["source_id"] == before[0][0].split("#")[0]
    # The file holds flat rows, readable with pandas.
    frame = SqliteStore(path).read_dataframe(
        "select source_id, count(*) as chunks from vectors group by source_id"
    )
    assert set(frame["source_id"]) == {f"docs/{p.name}" for p in DOCS.glob("*.md")}


def test_file_size_is_close_to_the_raw_vectors(tmp_path: Path) -> None:
    path = tmp_path / "size.db"
    store = SqliteVectorStore(SqliteStore(path), "size")
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((3000, 384), dtype=np.float32)
    store.add([Document(id=f"d{i}", content=f"doc {i}") for i in range(3000)], vectors)
    SqliteStore(path).connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = vectors.nbytes
    assert path.stat().st_size <= 1.4 * raw + 200_000  # + the schema's empty tables


@pytest.fixture
def vector_workers(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    import _vector_workers

    return _vector_workers


def test_two_processes_share_one_file(tmp_path: Path, vector_workers: Any) -> None:
    path = tmp_path / "shared.db"
    SqliteVectorStore(SqliteStore(path), "shared")  # create the schema first
    results = vector_workers.two_writers(path, 40, own_file=False, dim=32)
    # Exactly one process stored "both"; the other got a conflict from the file.
    assert sorted(r["duplicate"] for r in results) == ["added", "conflict"]
    store = SqliteVectorStore(SqliteStore(path), "shared")
    assert len(store) == 81 and store.file_rows() == 81
    assert len(store.ids(filter={"by": "left"})) == len(store.ids(filter={"by": "right"})) == 40
    embed = MockEmbedding(dim=32)
    hit = store.search(embed.embed(["right document 7"])[0], k=1)[0]
    assert hit.document.id == "right-7" and hit.score == pytest.approx(1.0, abs=1e-5)
    # A view does not see another's writes until reload(), but its checks go to the file.
    other = SqliteVectorStore(SqliteStore(path), "shared")
    other.remove(["left-0"])
    other.add([Document(id="late", content="late")], embed.embed(["late"]))
    assert "late" not in store
    with pytest.raises(ConflictError, match="late"):
        store.add([Document(id="late", content="again")], embed.embed(["again"]))
    store.reload()
    assert "left-0" not in store and "late" in store and len(store) == 81


# -- vectors in blocks (schema m009) --------------------------------------------------------

# What the code before blocks wrote: schema version 5, one BLOB per row in the `vectors` table.
OLD_INSERT = (
    "INSERT INTO vectors (namespace, doc_id, source_id, chunk_index, start_index, end_index, "
    "mime_type, content, metadata_json, embedding) VALUES (?,?,?,?,?,?,?,?,?,?)"
)


def _old_file(path: Path, namespaces: dict[str, np.ndarray]) -> None:
    import sqlite3

    from agcore_lab.store.migrations import MIGRATIONS

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN IMMEDIATE")
    for number, migration in enumerate(MIGRATIONS[:5]):  # m001 .. m005, as released
        migration(conn)
        conn.execute(f"PRAGMA user_version = {number + 1}")
    for name, vectors in namespaces.items():
        conn.execute(
            "INSERT INTO vector_namespaces VALUES (?, ?, ?)", (name, vectors.shape[1], "2026")
        )
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        conn.executemany(
            OLD_INSERT,
            [
                (
                    name,
                    f"{name}-{i}",
                    f"s{i // 7}",
                    i,
                    None,
                    None,
                    "text/plain",
                    f"text {i}",
                    json.dumps({"source_id": f"s{i // 7}", "chunk_index": i}),
                    unit[i].astype("<f4").tobytes(),
                )
                for i in range(len(vectors))
            ],
        )
    conn.execute("COMMIT")
    conn.close()


def test_a_file_from_before_blocks_opens_with_every_vector(tmp_path: Path) -> None:
    from agcore_lab.store.migrations import MIGRATIONS

    path = tmp_path / "old.db"
    rng = np.random.default_rng(5)
    old = {"docs": rng.standard_normal((300, 384)), "small": rng.standard_normal((5, 8))}
    _old_file(path, old)
    store = SqliteStore(path)
    assert store.schema_version == len(MIGRATIONS)
    for name, vectors in old.items():
        opened = SqliteVectorStore(store, name)
        assert opened.ids() == [f"{name}-{i}" for i in range(len(vectors))]
        unit = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        assert np.array_equal(opened.vectors(), unit)
        assert opened.get([f"{name}-3"])[0].metadata == {"source_id": "s0", "chunk_index": 3}
        hit = opened.search(vectors[4], k=1)[0]
        assert hit.document.id == f"{name}-4" and hit.score == pytest.approx(1.0, abs=1e-5)
    # The view still shows one row per document with its own vector.
    frame = store.read_dataframe(
        "select doc_id, source_id, embedding from vectors where namespace = 'docs' order by seq"
    )
    assert len(frame) == 300 and frame["source_id"].iloc[8] == "s1"
    docs_unit = old["docs"] / np.linalg.norm(old["docs"], axis=1, keepdims=True)
    stored = np.frombuffer(frame["embedding"].iloc[299], "<f4")
    assert np.array_equal(stored, docs_unit[299].astype(np.float32))
    # And it keeps working: remove, replace, add, reopen.
    docs = SqliteVectorStore(store, "docs")
    docs.remove(["docs-0", "docs-150"])
    docs.add([Document(id="new", content="n")], rng.standard_normal((1, 384)), replace=["docs-7"])
    again = SqliteVectorStore(SqliteStore(path), "docs")
    assert again.ids() == docs.ids() and again.ids()[-1] == "new" and len(again) == 298
    assert np.array_equal(again.vectors(), docs.vectors())


def test_blocks_stay_few_and_in_order_through_small_adds_and_removals(tmp_path: Path) -> None:
    path = tmp_path / "blocks.db"
    store = SqliteVectorStore(SqliteStore(path), "b")
    rng = np.random.default_rng(6)
    for i in range(400):  # one document per add, as the two-process test does
        store.add([Document(id=f"d{i}", content=f"{i}")], rng.standard_normal((1, 64)))
    db = store.store
    blocks = db.read_dataframe("select block, count from vector_blocks where namespace = 'b'")
    # 400 vectors of dimension 64 fit 512 to a block: a binary counter's few partial blocks.
    assert blocks["count"].sum() == 400 and len(blocks) <= 10
    store.remove([f"d{i}" for i in range(0, 400, 3)])
    store.add([Document(id="x", content="x")], rng.standard_normal((1, 64)), replace=["d1"])
    reopened = SqliteVectorStore(SqliteStore(path), "b")
    assert reopened.ids() == store.ids()
    assert np.array_equal(reopened.vectors(), store.vectors())
    frame = db.read_dataframe("select doc_id, embedding from vectors where namespace = 'b'")
    by_id = dict(zip(frame["doc_id"], frame["embedding"], strict=True))
    for row, doc_id in enumerate(store.ids()):
        assert np.array_equal(np.frombuffer(by_id[doc_id], "<f4"), store.vectors()[row])


def test_a_bulk_add_leaves_no_big_write_ahead_log(tmp_path: Path) -> None:
    path = tmp_path / "bulk.db"
    store = SqliteVectorStore(SqliteStore(path), "bulk")
    vectors = np.random.default_rng(7).standard_normal((5000, 384), dtype=np.float32)
    store.add([Document(id=f"d{i}", content="") for i in range(5000)], vectors)
    wal = Path(f"{path}-wal")
    assert not wal.exists() or wal.stat().st_size < 1_000_000  # not the 7.7 MB just written
    assert path.stat().st_size <= 1.12 * vectors.nbytes + 200_000  # + the schema's empty tables
    assert len(SqliteVectorStore(SqliteStore(path), "bulk")) == 5000

"""SqliteVectorStore on a real file: persist and reopen, and two processes sharing one file."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

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

# A writer process: opens the file, waits for the go file, adds `count` documents one add at a
# time (each a transaction, interleaving with the other writer), then tries a duplicate.
WRITER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from agcore_lab.errors import ConflictError
    from agcore_lab.rag import Document, MockEmbedding, SqliteVectorStore
    from agcore_lab.store.sqlite import SqliteStore

    path, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    store = SqliteVectorStore(SqliteStore(path), "shared")
    embed = MockEmbedding(dim=32)
    while not go.exists():
        time.sleep(0.01)
    for i in range(count):
        doc = Document(id=f"{name}-{i}", content=f"{name} document {i}", metadata={"by": name})
        store.add([doc], embed.embed([doc.content]))
    try:
        store.add([Document(id="both", content="x")], embed.embed(["x"]))
        duplicate = "added"
    except ConflictError:
        duplicate = "conflict"
    print(json.dumps({"len": len(store), "duplicate": duplicate}))
    """
)


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


def test_two_processes_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    SqliteVectorStore(SqliteStore(path), "shared")  # create the schema first
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name, "40", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("left", "right")
    ]
    go.touch()
    results = []
    for writer in writers:
        out, err = writer.communicate(timeout=100)
        assert writer.returncode == 0, err
        results.append(json.loads(out))
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

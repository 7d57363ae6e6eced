"""How SqliteVectorStore writes its ``vector_docs`` rows (agcore_lab/store/_vector_rows.py):
multi-row INSERTs, a block at a time, with what the rows share bound once. Whatever the sizes
of the adds, the rows and vectors read back are the ones added; a refused id anywhere in a
batch writes nothing; the statements come in a few shapes only."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agcore_lab.errors import ConflictError, StorageError
from agcore_lab.rag import Document, InMemoryVectorStore, SqliteVectorStore
from agcore_lab.store._vector_rows import ROWS_PER_STATEMENT, SMALL_ROWS
from agcore_lab.store._vectors import block_capacity
from agcore_lab.store.sqlite import SqliteStore

# Batch sizes around the statement sizes: single rows, SMALL_ROWS, a 384-dim block (85 rows),
# ROWS_PER_STATEMENT, and several statements in one add.
SIZES = [1, 2, SMALL_ROWS - 1, SMALL_ROWS, SMALL_ROWS + 1, 84, 85, 86, ROWS_PER_STATEMENT + 1, 300]


def _metadata(batch: int, i: int) -> dict[str, Any]:
    """A different mix per batch: every flat column the same in the whole batch, some of them
    varying, or missing."""
    kind = batch % 4
    if kind == 0:  # the same source, no positions: every optional column is shared
        return {"source_id": "same.md"}
    if kind == 1:  # chunks of a few sources, positions varying
        return {"source_id": f"s{i // 7}", "chunk_index": i, "start_index": 10 * i}
    if kind == 2:  # nothing flat at all, nested detail only
        return {"nested": {"i": i, "tags": ["a", "b"]}} if i % 3 else {}
    return {"source_id": None, "end_index": 5, "title": f"t{i % 2}"}  # a shared NULL and 5


def _batches(dim: int, seed: int = 0) -> tuple[list[list[Document]], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    docs, vectors = [], []
    for batch, size in enumerate(SIZES):
        docs.append(
            [
                Document(
                    id=f"b{batch}-{i}",
                    content=f"text {batch} {i}",
                    metadata=_metadata(batch, i),
                    # One batch in two MIME types (that column is then bound per row).
                    mime_type="text/markdown" if batch == 5 and i % 2 else "text/plain",
                )
                for i in range(size)
            ]
        )
        vectors.append(rng.standard_normal((size, dim), dtype=np.float32))
    return docs, vectors


def _expected_flat(doc: Document) -> tuple[object, ...]:
    meta = doc.metadata
    source = meta.get("source_id")

    def whole(key: str) -> object:
        value = meta.get(key)
        return value if type(value) is int else None

    return (
        doc.id,
        source if isinstance(source, str) else None,
        whole("chunk_index"),
        whole("start_index"),
        whole("end_index"),
        doc.mime_type,
        doc.content,
    )


@pytest.mark.parametrize("dim", [384, 8])  # blocks of 85 rows; blocks of 4,096 (128 per INSERT)
def test_rows_and_vectors_read_back_as_added_whatever_the_batch_sizes(
    tmp_path: Path, dim: int
) -> None:
    path = tmp_path / "rows.db"
    store = SqliteVectorStore(SqliteStore(path), "ns")
    memory = InMemoryVectorStore()
    docs, vectors = _batches(dim)
    for batch_docs, batch_vectors in zip(docs, vectors, strict=True):
        store.add(batch_docs, batch_vectors)
        memory.add(batch_docs, batch_vectors)
    every = [d for batch in docs for d in batch]
    unit = np.vstack(vectors)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)

    conn = sqlite3.connect(path)  # another connection: what any reader of the file sees
    rows = conn.execute(
        "SELECT doc_id, source_id, chunk_index, start_index, end_index, mime_type, content, "
        "metadata_json, embedding FROM vectors WHERE namespace = 'ns' ORDER BY seq"
    ).fetchall()
    assert [row[:7] for row in rows] == [_expected_flat(d) for d in every]
    assert [json.loads(row[7]) for row in rows] == [d.metadata for d in every]
    stored = np.frombuffer(b"".join(row[8] for row in rows), dtype="<f4").reshape(-1, dim)
    assert np.allclose(stored, unit, atol=1e-6)
    # Every block is full but the last ones, and its documents take slots 0, 1, ... in order.
    slots = conn.execute(
        "SELECT d.block, d.slot, b.count FROM vector_docs d JOIN vector_blocks b USING (block) "
        "ORDER BY d.seq"
    ).fetchall()
    by_block: dict[int, list[int]] = {}
    for block, slot, count in slots:
        by_block.setdefault(block, []).append(slot)
        assert count <= block_capacity(dim)
    assert all(found == list(range(len(found))) for found in by_block.values())
    conn.close()

    reopened = SqliteVectorStore(SqliteStore(path), "ns")
    assert reopened.ids() == [d.id for d in every]
    assert np.allclose(reopened.vectors(), unit, atol=1e-6)
    assert reopened.get([every[-1].id, every[0].id]) == [every[-1], every[0]]
    query = np.random.default_rng(9).standard_normal(dim, dtype=np.float32)
    found = [(h.document.id, round(h.score, 5)) for h in reopened.search(query, k=10)]
    assert found == [(h.document.id, round(h.score, 5)) for h in memory.search(query, k=10)]


def test_an_id_taken_in_a_later_statement_writes_nothing_and_the_store_goes_on() -> None:
    db = SqliteStore(":memory:")
    store = SqliteVectorStore(db, "ns")
    other = SqliteVectorStore(db, "ns")  # a second view: its memory does not know "x250"
    rng = np.random.default_rng(1)
    first = [Document(id=f"x{i}", content="first") for i in (250, 900)]
    store.add(first, rng.standard_normal((2, 384), dtype=np.float32))
    batch = [Document(id=f"x{i}", content="second") for i in range(300)]  # four blocks
    with pytest.raises(ConflictError, match="namespace 'ns': x250; remove"):
        other.add(batch, rng.standard_normal((300, 384), dtype=np.float32), replace=["x900"])
    # The whole write was undone: no row, no block, and the replaced id is still stored.
    assert other.file_rows() == 2 and len(other) == 0
    with db.transaction(write=False) as conn:
        assert conn.execute("SELECT sum(count) FROM vector_blocks").fetchone() == (2,)
        assert conn.execute("SELECT doc_id FROM vector_docs ORDER BY seq").fetchall() == [
            ("x250",),
            ("x900",),
        ]
    other.reload()
    fresh = [d for d in batch if d.id != "x250"]
    other.add(fresh, rng.standard_normal((299, 384), dtype=np.float32), replace=["x900"])
    assert other.file_rows() == 300 and other.ids()[:3] == ["x250", "x0", "x1"]


def test_a_row_refused_by_a_trigger_mid_batch_writes_nothing() -> None:
    # Not the unique index: SQLite undoes only that statement, so the store rolls back.
    db = SqliteStore(":memory:")
    store = SqliteVectorStore(db, "ns")
    with db.transaction() as conn:
        conn.execute(
            "CREATE TRIGGER fail BEFORE INSERT ON vector_docs WHEN NEW.doc_id = 'd200' "
            "BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    docs = [Document(id=f"d{i}", content="c") for i in range(300)]
    vectors = np.random.default_rng(2).standard_normal((300, 384), dtype=np.float32)
    with pytest.raises(StorageError, match="refused"):
        store.add(docs, vectors)
    assert len(store) == 0 and store.file_rows() == 0
    with db.transaction(write=False) as conn:
        assert conn.execute("SELECT count(*) FROM vector_blocks").fetchone() == (0,)


def test_the_row_inserts_come_in_three_shapes_whatever_the_sizes() -> None:
    # The driver caches prepared statements by their text (128 per connection, shared with
    # the rest of the store): adds of any size must not fill it with one shape per size.
    db = SqliteStore(":memory:")
    store = SqliteVectorStore(db, "ns")
    seen: set[str] = set()
    db.connection.set_trace_callback(seen.add)
    rng = np.random.default_rng(3)
    at = 0
    for size in [*range(1, 40), 84, 85, 86, 170, 171, 255]:
        docs = [Document(id=f"d{at + i}", content="c", metadata={"n": i}) for i in range(size)]
        store.add(docs, rng.standard_normal((size, 384), dtype=np.float32))
        at += size
    db.connection.set_trace_callback(None)
    # The trace shows each statement with its values: its shape is its number of rows.
    inserts = [sql for sql in seen if sql.startswith("INSERT OR ROLLBACK INTO vector_docs")]
    assert {sql.count("),(") + 1 for sql in inserts} == {block_capacity(384), SMALL_ROWS, 1}
    assert store.file_rows() == at == len(SqliteVectorStore(db, "ns"))


def test_a_low_parameter_limit_gives_smaller_statements() -> None:
    db = SqliteStore(":memory:")
    db.connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 40)
    store = SqliteVectorStore(db, "ns")
    docs = [
        Document(
            id=f"d{i}",
            content=f"c{i}",
            metadata={"source_id": f"s{i}", "chunk_index": i, "start_index": i, "end_index": i},
            mime_type=("text/plain", "text/markdown")[i % 2],
        )
        for i in range(100)
    ]  # eight values per row: at most four rows in 40 parameters
    store.add(docs, np.random.default_rng(4).standard_normal((100, 16), dtype=np.float32))
    reopened = SqliteVectorStore(db, "ns")
    assert reopened.ids() == [d.id for d in docs]
    assert reopened.get(["d99", "d4"]) == [docs[99], docs[4]]
    with db.transaction(write=False) as conn:
        rows = conn.execute(
            "SELECT source_id, chunk_index, start_index, end_index, mime_type FROM vector_docs "
            "ORDER BY seq"
        ).fetchall()
    assert rows == [(f"s{i}", i, i, i, docs[i].mime_type) for i in range(100)]


def test_a_refused_small_add_leaves_the_blocks_it_would_have_merged() -> None:
    # A small add takes the namespace's last small blocks into a new one (deleting them and
    # moving their documents); refused, all of that is undone with it.
    db = SqliteStore(":memory:")
    store, other = SqliteVectorStore(db, "ns"), SqliteVectorStore(db, "ns")
    rng = np.random.default_rng(5)
    kept = rng.standard_normal((1, 384), dtype=np.float32)
    store.add([Document(id="old", content="old")], kept)
    with db.transaction(write=False) as conn:
        before = conn.execute("SELECT block, count FROM vector_blocks").fetchall()
    batch = [Document(id=i, content=i) for i in ("n1", "n2", "old", "n3")]
    with pytest.raises(ConflictError, match="namespace 'ns': old; remove"):
        other.add(batch, rng.standard_normal((4, 384), dtype=np.float32))
    with db.transaction(write=False) as conn:
        assert conn.execute("SELECT block, count FROM vector_blocks").fetchall() == before
        assert conn.execute("SELECT doc_id, block, slot FROM vector_docs").fetchall() == [
            ("old", before[0][0], 0)
        ]
    reopened = SqliteVectorStore(db, "ns")
    assert np.allclose(reopened.vectors(), kept / np.linalg.norm(kept), atol=1e-6)
    # The same add without the taken id merges the two into one block.
    other.add(batch[:2] + batch[3:], rng.standard_normal((3, 384), dtype=np.float32))
    with db.transaction(write=False) as conn:
        assert conn.execute("SELECT count FROM vector_blocks").fetchall() == [(4,)]


@pytest.mark.parametrize("accelerated", [True, False])
def test_metadata_json_is_the_store_encoding_with_or_without_the_c_encoder(
    monkeypatch: pytest.MonkeyPatch, accelerated: bool
) -> None:
    import json.encoder

    from agcore_lab.store import _vector_rows
    from agcore_lab.store._json import compact

    if not accelerated:
        monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    encode = _vector_rows._rows_encoder()
    values: list[dict[str, Any]] = [
        {},
        {"source_id": "a.md", "chunk_index": 3},
        {"title": "Café 会话 😀", "x": 0.25, "big": 1e16, "ok": True, "none": None},
        {"nested": {"list": [1, "two", {"three": 3.0}]}, "quote": 'a "b" \\ c\n'},
    ]
    assert list(encode(values)) == [compact(v) for v in values]
    with pytest.raises(ValueError, match="not JSON compliant"):
        list(encode([{"x": float("nan")}]))

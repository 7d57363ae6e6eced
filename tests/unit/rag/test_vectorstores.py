"""Vector stores: InMemoryVectorStore and SqliteVectorStore behave the same (one suite, two
backends); then what only the SQLite one does: writes first, memory second."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from agcore_lab.errors import ConflictError, InvalidInputError, StorageError
from agcore_lab.rag import (
    Document,
    InMemoryVectorStore,
    MockEmbedding,
    SearchHit,
    SqliteVectorStore,
    VectorStore,
)
from agcore_lab.rag.embeddings import normalize_rows
from agcore_lab.store.sqlite import SqliteStore

EMBED = MockEmbedding(dim=16)


def _docs(*names: str, **meta: object) -> list[Document]:
    return [Document(id=n, content=f"content of {n}", metadata=dict(meta)) for n in names]


def _vectors(docs: list[Document]) -> np.ndarray:
    return EMBED.embed([d.content for d in docs])


def _memory() -> VectorStore:
    return InMemoryVectorStore(capacity=2)


def _sqlite() -> VectorStore:
    return SqliteVectorStore(SqliteStore(":memory:"), "test", capacity=2)


BACKENDS: dict[str, Callable[[], VectorStore]] = {"memory": _memory, "sqlite": _sqlite}


@pytest.fixture(params=sorted(BACKENDS))
def store(request: pytest.FixtureRequest) -> VectorStore:
    return BACKENDS[request.param]()


def test_add_search_get_len(store: VectorStore) -> None:
    docs = _docs("a", "b", "c", "d", "e")  # more than the starting capacity: it grows
    store.add(docs, _vectors(docs))
    assert len(store) == 5 and store.dim == 16 and isinstance(store, VectorStore)
    hits = store.search(EMBED.embed(["content of c"])[0], k=3)
    assert isinstance(hits[0], SearchHit)
    assert hits[0].document.id == "c" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert len(hits) == 3 and [h.score for h in hits] == sorted(
        (h.score for h in hits), reverse=True
    )
    assert [d.id for d in store.get(["e", "nope", "a"])] == ["e", "a"]
    assert store.get(["a"])[0] == docs[0]
    assert store.ids() == ["a", "b", "c", "d", "e"]
    assert store.search(EMBED.embed(["x"])[0], k=50)[-1].document.id in store.ids()
    assert len(store.search(EMBED.embed(["x"])[0], k=50)) == 5
    assert store.search(EMBED.embed(["x"])[0], k=0) == []


def test_scores_are_cosine_whatever_the_scale(store: VectorStore) -> None:
    docs = _docs("a", "b")
    vectors = np.array([[3.0] + [0.0] * 15, [1.0, 1.0] + [0.0] * 14])
    store.add(docs, vectors)
    hits = store.search([10.0] + [0.0] * 15, k=2)
    assert [h.document.id for h in hits] == ["a", "b"]
    assert hits[0].score == pytest.approx(1.0) and hits[1].score == pytest.approx(2**-0.5)


def test_metadata_filters(store: VectorStore) -> None:
    en = _docs("en1", "en2", lang="en", n=1)
    zh = _docs("zh1", lang="zh", n=1)
    flag = _docs("t", lang="en", n=True)
    for batch in (en, zh, flag):
        store.add(batch, _vectors(batch))
    query = EMBED.embed(["content of zh1"])[0]
    assert [h.document.id for h in store.search(query, k=5, filter={"lang": "en"})] != []
    assert {h.document.id for h in store.search(query, k=5, filter={"lang": "en"})} == {
        "en1",
        "en2",
        "t",
    }
    assert store.ids(filter={"lang": "en", "n": 1}) == ["en1", "en2"]  # true is not 1
    assert store.ids(filter={"n": True}) == ["t"]
    assert store.ids(filter={"n": 1.0, "lang": "zh"}) == ["zh1"]  # 1.0 is 1 in JSON
    assert store.search(query, k=5, filter={"lang": "fr"}) == []
    assert store.ids(filter={"missing": None}) == []
    store.remove(["en1"])
    assert store.ids(filter={"lang": "en"}) == ["en2", "t"]  # the cached filter was dropped


def test_remove_is_idempotent_and_keeps_order(store: VectorStore) -> None:
    docs = _docs(*"abcdefg")
    store.add(docs, _vectors(docs))
    assert store.remove(["b", "e", "zzz"]) == 2
    assert store.remove(["b", "e"]) == 0
    assert store.ids() == ["a", "c", "d", "f", "g"]
    for doc_id in store.ids():  # the matrix rows moved with their ids
        assert store.search(EMBED.embed([f"content of {doc_id}"])[0], k=1)[0].document.id == doc_id
    assert store.remove([]) == 0 and len(store) == 5


def test_duplicate_ids_are_clear_errors_and_change_nothing(store: VectorStore) -> None:
    docs = _docs("a", "b")
    store.add(docs, _vectors(docs))
    with pytest.raises(ConflictError, match="already stored: a"):
        store.add(_docs("c", "a"), _vectors(_docs("c", "a")))
    with pytest.raises(InvalidInputError, match="twice"):
        store.add(_docs("x", "x"), _vectors(_docs("x", "x")))
    assert store.ids() == ["a", "b"]


def test_replace_swaps_documents_in_one_add(store: VectorStore) -> None:
    docs = _docs("a", "b")
    store.add(docs, _vectors(docs))
    new = _docs("a", "c", version=2)
    store.add(new, _vectors(new), replace=["a", "b", "never-stored"])
    assert store.ids() == ["a", "c"]
    assert store.get(["a"])[0].metadata == {"version": 2}


def test_dimension_and_shape_errors(store: VectorStore) -> None:
    docs = _docs("a")
    store.add(docs, _vectors(docs))
    with pytest.raises(InvalidInputError, match="dimension 8"):
        store.add(_docs("b"), np.ones((1, 8)))
    with pytest.raises(InvalidInputError, match="one vector per document"):
        store.add(_docs("b", "c"), np.ones((1, 16)))
    with pytest.raises(InvalidInputError, match="finite"):
        store.add(_docs("b"), np.full((1, 16), np.nan))
    with pytest.raises(InvalidInputError, match="query"):
        store.search(np.ones(8))
    with pytest.raises(InvalidInputError, match="query"):
        store.search(np.ones((2, 16)))
    assert store.ids() == ["a"]


def test_empty_store_and_empty_add(store: VectorStore) -> None:
    assert store.search(np.ones(16)) == [] and len(store) == 0 and store.dim is None
    store.add([], np.zeros((0, 16)))
    assert len(store) == 0


def test_no_float64_and_no_matrix_copy_per_query() -> None:
    import tracemalloc

    store = InMemoryVectorStore()
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((20_000, 64))  # float64 in: 10 MB, 5 MB as float32
    store.add(_docs(*[f"d{i}" for i in range(20_000)]), vectors)
    query = rng.standard_normal(64)
    tracemalloc.start()
    try:
        hits = store.search(query, k=3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A copy of the matrix (or a float64 upcast) would cost >= 5 MB here.
    assert peak < 1_000_000, peak
    expected = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)) @ (
        query / np.linalg.norm(query)
    )
    assert [h.document.id for h in hits] == [f"d{i}" for i in np.argsort(-expected)[:3]]
    assert all(type(h.score) is float for h in hits)


def test_capacity_grows_by_a_quarter_instead_of_per_insert() -> None:
    store = InMemoryVectorStore(capacity=4)
    seen: list[int] = []
    for i in range(40):
        doc = _docs(f"d{i}")
        store.add(doc, _vectors(doc))
        if not seen or seen[-1] != store.capacity:
            seen.append(store.capacity)
    assert seen == [4, 5, 6, 7, 8, 10, 12, 15, 18, 22, 27, 33, 41]
    assert [h.document.id for h in store.search(_vectors(_docs("d0"))[0], k=1)] == ["d0"]


def test_an_add_bigger_than_a_quarter_grows_to_fit_it() -> None:
    store = InMemoryVectorStore(capacity=4)
    docs = _docs(*[f"d{i}" for i in range(100)])
    store.add(docs[:10], _vectors(docs[:10]))
    assert store.capacity == 10
    store.add(docs[10:], _vectors(docs[10:]))
    assert store.capacity == 100
    np.testing.assert_array_equal(
        store.vectors(), normalize_rows(_vectors(docs).astype(np.float32))
    )


def test_a_big_matrix_grows_by_at_most_4_mb_beyond_the_add() -> None:
    """numpy zeroes the rows it grows by, which makes them resident: a 32 MB matrix grows by
    4 MB of rows (1,024 of dimension 1,024), not by a quarter (8 MB)."""
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((8_001, 1024)).astype(np.float32)
    docs = _docs(*[f"d{i}" for i in range(8_001)])
    store = InMemoryVectorStore(capacity=16)
    store.add(docs[:8_000], vectors[:8_000])
    assert store.capacity == 8_000
    store.add(docs[8_000:], vectors[8_000:])
    assert store.capacity == 8_001 + 1_024
    np.testing.assert_array_equal(store.vectors(), normalize_rows(vectors.copy()))


def test_growing_in_place_keeps_the_stored_rows_and_search_results() -> None:
    """Adds in steps (each growing the matrix in place) end with the same matrix, and the same
    hits with the same scores, ties included, as one add of everything."""
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((5_000, 32)).astype(np.float32)
    vectors[4_000:4_100] = vectors[10]  # ties across the growth steps
    docs = _docs(*[f"d{i}" for i in range(5_000)])
    whole = InMemoryVectorStore()
    whole.add(docs, vectors)
    steps = InMemoryVectorStore(capacity=16)
    capacities: list[int] = []
    for start in range(0, 5_000, 700):
        steps.add(docs[start : start + 700], vectors[start : start + 700])
        capacities.append(steps.capacity)
    assert len(set(capacities)) > 5  # it did grow, several times
    np.testing.assert_array_equal(steps.vectors(), whole.vectors())
    queries = np.concatenate([vectors[10:11], rng.standard_normal((20, 32)).astype(np.float32)])
    for query in queries:
        for k in (1, 5, 150):
            assert steps.search(query, k) == whole.search(query, k)
    assert steps.search_batch(queries, 7) == whole.search_batch(queries, 7)
    hits = steps.search(vectors[10], k=102)
    assert [h.document.id for h in hits[:101]] == ["d10"] + [f"d{i}" for i in range(4_000, 4_100)]


def test_search_batch_matches_single_searches() -> None:
    store = InMemoryVectorStore()
    docs = _docs(*[f"d{i}" for i in range(30)], group="g")
    store.add(docs, _vectors(docs))
    queries = EMBED.embed(["content of d3", "content of d17", "other"])
    batch = store.search_batch(queries, k=4, filter={"group": "g"})
    for hits, query in zip(batch, queries, strict=True):
        single = store.search(query, k=4)
        assert [h.document.id for h in hits] == [h.document.id for h in single]
        assert [h.score for h in hits] == pytest.approx([h.score for h in single], abs=1e-5)


def test_ties_break_by_insertion_order() -> None:
    store = InMemoryVectorStore()
    store.add(_docs("x", "y", "z"), np.ones((3, 4)))
    assert [h.document.id for h in store.search(np.ones(4), k=2)] == ["x", "y"]


def test_concurrent_adds_and_searches() -> None:
    store = InMemoryVectorStore(capacity=1)
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(40):
                doc = _docs(f"w{w}-{i}")
                store.add(doc, _vectors(doc))
                store.search(np.ones(16), k=3)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(store) == 160


# -- SQLite: the file first, memory second --------------------------------------------------


def test_sqlite_failed_write_leaves_memory_and_file_untouched() -> None:
    db = SqliteStore(":memory:")
    store = SqliteVectorStore(db, "ns")
    docs = _docs("a", "b")
    store.add(docs, _vectors(docs))
    with db.transaction() as conn:  # make the next insert of 'boom' fail inside SQLite
        conn.execute(
            "CREATE TRIGGER fail BEFORE INSERT ON vector_docs WHEN NEW.doc_id = 'boom' "
            "BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
        )
    batch = _docs("c", "boom")
    with pytest.raises(StorageError, match="disk on fire"):
        store.add(batch, _vectors(batch), replace=["a"])
    assert store.ids() == ["a", "b"] and len(store) == 2  # memory untouched
    assert store.file_rows() == 2  # the transaction rolled back: 'a' is still there, no 'c'
    assert [d.id for d in SqliteVectorStore(db, "ns").get(["a", "b", "c"])] == ["a", "b"]
    with db.transaction() as conn:
        conn.execute("DROP TRIGGER fail")
    store.add(batch, _vectors(batch))
    assert store.ids() == ["a", "b", "c", "boom"]


def test_sqlite_duplicate_id_written_by_another_view_is_a_conflict() -> None:
    db = SqliteStore(":memory:")
    first, second = SqliteVectorStore(db, "ns"), SqliteVectorStore(db, "ns")
    first.add(_docs("a"), _vectors(_docs("a")))
    with pytest.raises(ConflictError, match="namespace 'ns': a"):
        second.add(_docs("a"), _vectors(_docs("a")))  # its memory is stale; the file is not
    assert len(second) == 0
    # New ids beside a taken one: the conflict names only the taken one, and none is stored.
    batch = _docs("b", "a", "c")
    with pytest.raises(ConflictError, match="namespace 'ns': a; remove"):
        second.add(batch, _vectors(batch))
    assert len(second) == 0 and second.file_rows() == 1
    with db.transaction(write=False) as conn:
        assert conn.execute("SELECT sum(count) FROM vector_blocks").fetchone() == (1,)
    second.reload()
    assert second.ids() == ["a"]


def test_sqlite_dimension_is_kept_per_namespace() -> None:
    db = SqliteStore(":memory:")
    first, second = SqliteVectorStore(db, "ns"), SqliteVectorStore(db, "ns")
    first.add(_docs("a"), _vectors(_docs("a")))
    with pytest.raises(InvalidInputError, match="dimension 16, not 8"):
        second.add(_docs("b"), np.ones((1, 8)))
    other = SqliteVectorStore(db, "other")
    other.add(_docs("b"), np.ones((1, 8)))
    assert other.dim == 8 and SqliteVectorStore(db, "ns").dim == 16


def test_sqlite_rows_are_flat_and_vectors_are_float32_blobs() -> None:
    db = SqliteStore(":memory:")
    store = SqliteVectorStore(db, "ns")
    doc = Document(
        id="d#0",
        content="text",
        metadata={"source_id": "d", "chunk_index": 0, "start_index": 3, "end_index": 7},
    )
    vector = np.arange(16, dtype=np.float32) + 1
    store.add([doc], vector[None, :])
    frame = db.read_dataframe("select * from vectors")
    row = frame.iloc[0]
    assert (row["namespace"], row["doc_id"], row["source_id"]) == ("ns", "d#0", "d")
    assert (row["chunk_index"], row["start_index"], row["end_index"]) == (0, 3, 7)
    blob = row["embedding"]
    assert isinstance(blob, bytes) and len(blob) == 16 * 4
    stored = np.frombuffer(blob, dtype="<f4")
    assert np.allclose(stored, vector / np.linalg.norm(vector))  # the normalized vector
    assert np.linalg.norm(stored) == pytest.approx(1.0, abs=1e-6)


class _Position(int):
    """An int subclass (as some libraries return): a whole number, so a flat column keeps it."""


def test_sqlite_flat_columns_hold_only_values_of_their_type_in_a_mixed_batch() -> None:
    # Built column by column for the whole batch: a value of another type in one document
    # must make only that document's cell NULL (its metadata_json keeps everything).
    db = SqliteStore(":memory:")
    store = SqliteVectorStore(db, "ns")
    metadata: list[dict[str, object]] = [
        {"source_id": "a", "chunk_index": 0, "start_index": 0, "end_index": 5},
        {"source_id": 7, "chunk_index": True, "start_index": 2.0, "end_index": "9"},
        {"chunk_index": _Position(4), "title": "no source"},
        {},
        {"source_id": None, "chunk_index": None, "nested": {"k": [1, 2]}},
    ]
    docs = [Document(id=f"d{i}", content=f"text {i}", metadata=m) for i, m in enumerate(metadata)]
    store.add(docs, np.eye(len(docs), 8, dtype=np.float32) + 0.5)
    with db.transaction(write=False) as conn:
        rows = conn.execute(
            "SELECT doc_id, source_id, chunk_index, start_index, end_index, metadata_json "
            "FROM vector_docs ORDER BY seq"
        ).fetchall()
    assert [row[:5] for row in rows] == [
        ("d0", "a", 0, 0, 5),
        ("d1", None, None, None, None),
        ("d2", None, 4, None, None),
        ("d3", None, None, None, None),
        ("d4", None, None, None, None),
    ]
    assert [json.loads(row[5]) for row in rows] == [d.metadata for d in docs]
    reopened = SqliteVectorStore(db, "ns")
    assert [d.metadata for d in reopened.get([d.id for d in docs])] == metadata


def test_sqlite_namespace_must_be_named() -> None:
    with pytest.raises(InvalidInputError):
        SqliteVectorStore(SqliteStore(":memory:"), "")


def test_add_leaves_the_callers_array_as_it_was_and_stores_unit_rows() -> None:
    store = InMemoryVectorStore(capacity=2)
    rng = np.random.default_rng(3)
    first = rng.standard_normal((3, 16), dtype=np.float32) * 5
    kept = first.copy()
    store.add(_docs("a", "b", "c"), first)
    assert np.array_equal(first, kept)  # normalized into the store's matrix, not in place
    # A second add grows the matrix (capacity 2 -> 6), and a replace moves the new rows down.
    second = rng.standard_normal((4, 16), dtype=np.float32)
    store.add(_docs("d", "e", "f", "g"), second, replace=["b"])
    assert store.ids() == ["a", "c", "d", "e", "f", "g"]
    expected = np.vstack([kept[[0, 2]], second[:4]])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(store.vectors(), expected, atol=1e-6)
    hit = store.search(second[1], k=1)[0]
    assert hit.document.id == "e" and hit.score == pytest.approx(1.0, abs=1e-5)


def test_vectors_returns_the_stored_unit_vectors_by_id() -> None:
    store = InMemoryVectorStore()
    raw = np.array([[3.0, 4.0], [0.0, 2.0]], dtype=np.float32)
    store.add(_docs("a", "b"), raw)
    assert np.allclose(store.vectors(), [[0.6, 0.8], [0.0, 1.0]])
    assert np.allclose(store.vectors(["b", "nope", "a"]), [[0.0, 1.0], [0.6, 0.8]])
    assert np.allclose(store.vectors("a"), [[0.6, 0.8]])  # a bare string is one id
    copy = store.vectors()
    copy[0] = 0
    assert np.allclose(store.vectors("a"), [[0.6, 0.8]])  # a copy: the store is untouched


def test_sqlite_metadata_json_is_the_store_encoding_and_nan_is_refused() -> None:
    from agcore_lab.store._json import compact

    db = SqliteStore(":memory:")
    store = SqliteVectorStore(db, "ns")
    metadata = {
        "title": "Café 会话 😀",
        "n": 3,
        "x": 0.25,
        "ok": True,
        "none": None,
        "nested": {"list": [1, "two", {"three": 3.0}]},
        "quote": 'a "b" \\ c\n',
    }
    docs = [Document(id="a", content="alpha", metadata=metadata)]
    store.add(docs, _vectors(docs))
    with db.transaction(write=False) as conn:
        (stored,) = conn.execute("SELECT metadata_json FROM vector_docs").fetchone()
    assert stored == compact(metadata)
    assert SqliteVectorStore(db, "ns").get(["a"])[0].metadata == metadata
    bad = [Document.trusted("b", "beta", {"x": float("nan")}, "text/plain")]
    with pytest.raises(ValueError, match="not JSON compliant"):
        store.add(bad, _vectors(bad))
    assert store.ids() == ["a"] and store.file_rows() == 1


@pytest.mark.parametrize("make", [_memory, _sqlite])
def test_an_id_twice_in_one_add_is_named_and_nothing_is_stored(
    make: Callable[[], VectorStore],
) -> None:
    store = make()
    docs = _docs("a", "b", "c", "b", "a")
    with pytest.raises(InvalidInputError, match="id 'b' appears twice in one add"):
        store.add(docs, _vectors(docs))
    assert len(store) == 0 and store.ids() == []


def test_a_loaded_matrix_that_is_a_view_is_copied_once_when_it_grows() -> None:
    """A loader may hand over a view (it does not own its buffer): growing copies it into a
    matrix of the store's own, and the loader's array is left as it was."""
    docs = _docs("a", "b", "c")
    unit = normalize_rows(_vectors(docs).astype(np.float32))
    backing = np.zeros((5, 16), dtype=np.float32)
    backing[1:4] = unit
    store = InMemoryVectorStore()
    with store._lock:
        store._adopt(
            16, (["a", "b", "c"], [(d.content, "{}", d.mime_type) for d in docs], backing[1:4])
        )
    more = _docs("d", "e")
    store.add(more, _vectors(more))
    np.testing.assert_array_equal(store.vectors(["a", "b", "c"]), unit)
    np.testing.assert_array_equal(backing[1:4], unit)
    assert not backing[4].any() and store.ids() == ["a", "b", "c", "d", "e"]
    assert [h.document.id for h in store.search(_vectors(more)[1], k=1)] == ["e"]


def test_a_reloaded_matrix_grows_in_place_and_reopens_the_same(tmp_path: Path) -> None:
    docs = _docs(*[f"d{i}" for i in range(40)])
    vectors = _vectors(docs)
    db = SqliteStore(tmp_path / "v.db")
    SqliteVectorStore(db, "n", capacity=2).add(docs[:5], vectors[:5])
    reopened = SqliteVectorStore(db, "n", capacity=2)  # 5 rows loaded, room for 2 more
    assert reopened.capacity == 7
    for start in range(5, 40, 7):
        reopened.add(docs[start : start + 7], vectors[start : start + 7])
    assert reopened.capacity > 40 - 7
    memory = InMemoryVectorStore()
    memory.add(docs, vectors)
    np.testing.assert_array_equal(reopened.vectors(), memory.vectors())
    again = SqliteVectorStore(SqliteStore(tmp_path / "v.db"), "n")
    np.testing.assert_array_equal(again.vectors(), memory.vectors())
    for query in EMBED.embed(["content of d3", "content of d33", "other"]):
        assert reopened.search(query, 6) == memory.search(query, 6) == again.search(query, 6)


def test_an_absurd_dimension_or_capacity_is_a_typed_error_naming_the_limit() -> None:
    # numpy refuses such shapes with a plain ValueError: the constructor names the limit.
    with pytest.raises(InvalidInputError, match="dim must be <= 1,048,576"):
        InMemoryVectorStore(dim=2**61)
    with pytest.raises(InvalidInputError, match="capacity must be <= "):
        InMemoryVectorStore(dim=8, capacity=2**40)
    assert InMemoryVectorStore(dim=3072).dim == 3072

"""Defects 1 and 9 of the hardening issue: ids, ``k``, filters and zero vectors are checked
the same way by every vector store (and the pipeline), before anything changes."""

from __future__ import annotations

import numpy as np
import pytest

from agcore_lab import SqliteStore
from agcore_lab.errors import InvalidInputError
from agcore_lab.rag import (
    Document,
    InMemoryVectorStore,
    MockEmbedding,
    RagPipeline,
    RecursiveCharacterSplitter,
    SqliteVectorStore,
    VectorStore,
)

EMBED = MockEmbedding(dim=8)


def _memory() -> VectorStore:
    return InMemoryVectorStore()


def _sqlite() -> VectorStore:
    return SqliteVectorStore(SqliteStore(":memory:"), "ns")


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest) -> VectorStore:
    made = _memory() if request.param == "memory" else _sqlite()
    ids = ["a", "b", "ab", "doc-1"]
    made.add([Document(id=i, content=i) for i in ids], EMBED.embed(ids))
    return made


def test_remove_of_a_bare_string_removes_that_one_id(store: VectorStore) -> None:
    assert store.remove("ab") == 1
    assert store.ids() == ["a", "b", "doc-1"]


def test_get_of_a_bare_string_gets_that_one_id(store: VectorStore) -> None:
    assert [d.id for d in store.get("doc-1")] == ["doc-1"]
    assert [d.id for d in store.get(["a", "ab"])] == ["a", "ab"]


def test_replace_given_as_a_bare_string_means_one_id(store: VectorStore) -> None:
    store.add([Document(id="ab", content="new")], EMBED.embed(["new"]), replace="ab")
    assert store.ids() == ["a", "b", "doc-1", "ab"]
    assert store.get("ab")[0].content == "new"


@pytest.mark.parametrize("bad", [[1, 2], b"ab", {"a": 1}, 7, None])
def test_ids_that_are_not_strings_are_refused_and_nothing_goes(
    store: VectorStore, bad: object
) -> None:
    with pytest.raises(InvalidInputError, match="ids"):
        store.remove(bad)  # type: ignore[arg-type]
    assert len(store) == 4


@pytest.mark.parametrize("k", [-1, -100])
def test_negative_k_is_an_error_everywhere(store: VectorStore, k: int) -> None:
    with pytest.raises(InvalidInputError, match="k must be >= 0"):
        store.search(EMBED.embed(["a"])[0], k=k)
    assert isinstance(store, InMemoryVectorStore)
    with pytest.raises(InvalidInputError, match="k must be >= 0"):
        store.search_batch(EMBED.embed(["a", "b"]), k=k)


@pytest.mark.parametrize("k", [2.0, "2", True, None])
def test_k_of_the_wrong_type_is_an_invalid_input_error(store: VectorStore, k: object) -> None:
    with pytest.raises(InvalidInputError, match="k must be an int"):
        store.search(EMBED.embed(["a"])[0], k=k)  # type: ignore[arg-type]


def test_k_zero_finds_nothing(store: VectorStore) -> None:
    assert store.search(EMBED.embed(["a"])[0], k=0) == []


@pytest.mark.parametrize("bad", [["source_id", "a"], "source_id", 3])
def test_a_filter_that_is_not_a_mapping_is_refused(store: VectorStore, bad: object) -> None:
    with pytest.raises(InvalidInputError, match="filter must be a mapping"):
        store.search(EMBED.embed(["a"])[0], filter=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="filter must be a mapping"):
        store.ids(filter=bad)  # type: ignore[arg-type]


def test_an_all_zero_vector_is_refused_on_add_and_nothing_is_stored(store: VectorStore) -> None:
    vectors = EMBED.embed(["x", "y"])
    vectors[1] = 0.0
    docs = [Document(id="x", content="x"), Document(id="y", content="y")]
    with pytest.raises(InvalidInputError, match="all zeros"):
        store.add(docs, vectors)
    assert len(store) == 4 and store.get(["x", "y"]) == []


def test_an_all_zero_query_is_refused(store: VectorStore) -> None:
    with pytest.raises(InvalidInputError, match="all zeros"):
        store.search(np.zeros(8))
    assert isinstance(store, InMemoryVectorStore)
    with pytest.raises(InvalidInputError, match="all zeros"):
        store.search_batch(np.vstack([EMBED.embed(["a"])[0], np.zeros(8)]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"capacity": -1}, "capacity must be >= 1"),
        ({"capacity": 0}, "capacity must be >= 1"),
        ({"dim": 2.5}, "dim must be an int"),
        ({"dim": "8"}, "dim must be an int"),
        ({"dim": True}, "dim must be an int"),
        ({"dim": 0}, "dim must be >= 1"),
    ],
)
def test_constructor_arguments_are_checked(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        InMemoryVectorStore(**kwargs)  # type: ignore[arg-type]


def test_pipeline_retrieve_checks_k_and_filter() -> None:
    pipeline = RagPipeline(RecursiveCharacterSplitter(chunk_size=50, chunk_overlap=0), EMBED)
    pipeline.ingest([Document(id="d", content="alpha beta gamma")])
    with pytest.raises(InvalidInputError, match="k must be >= 0"):
        pipeline.retrieve("alpha", k=-1)
    with pytest.raises(InvalidInputError, match="k must be an int"):
        pipeline.retrieve("alpha", k=1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="filter must be a mapping"):
        pipeline.retrieve("alpha", filter=["source_id"])  # type: ignore[arg-type]
    assert len(pipeline.retrieve("alpha", k=1)) == 1

"""The conformance suite every :class:`~agcore_lab.rag.vectorstores.VectorStore` backend must
pass.

Each check is a plain function of one fresh, empty vector store; it raises ``AssertionError``
naming what broke. Two ways to run them:

- in pytest, subclass :class:`VectorConformance` (the class name must start with ``Test``)
  and override :meth:`VectorConformance.make_vectors`; every check becomes one test;
- anywhere else, call :func:`run_vector_conformance` with a factory.

Example:
    >>> from agcore_lab.rag import InMemoryVectorStore
    >>> run_vector_conformance(InMemoryVectorStore)

The checks use only the protocol (plus ``search_batch`` and ``vectors``, which every backend
here has), so they hold for in-memory, SQLite and PostgreSQL stores alike. What a persisted
backend must also do (re-open, share with other processes) is in
:mod:`agcore_lab.testing.persistence_conformance`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from agcore_lab.errors import ConflictError, InvalidInputError
from agcore_lab.rag.documents import Document
from agcore_lab.rag.embeddings import MockEmbedding
from agcore_lab.rag.vectorstores import VectorStore
from agcore_lab.testing._support import expect, expect_equal, expect_raises, run_checks

__all__ = [
    "VECTOR_CHECKS",
    "VectorConformance",
    "VectorConformanceFailure",
    "VectorFactory",
    "run_vector_conformance",
]

VectorFactory = Callable[[], VectorStore]
Check = Callable[[Any], None]
EMBED = MockEmbedding(dim=16)


class VectorConformanceFailure(AssertionError):
    """One or more vector conformance checks failed; the message lists each with its reason."""


def docs(*names: str, **metadata: object) -> list[Document]:
    """Documents ``names`` with ``content of <name>`` and the same metadata."""
    return [Document(id=n, content=f"content of {n}", metadata=dict(metadata)) for n in names]


def embed(documents: list[Document]) -> np.ndarray[Any, Any]:
    """The mock embeddings of the documents' contents."""
    return EMBED.embed([d.content for d in documents])


def _ids(hits: Iterable[Any]) -> list[str]:
    return [hit.document.id for hit in hits]


def check_add_search_get_len(store: Any) -> None:
    """Added documents are counted, found by their own vector first, read back by id."""
    batch = docs("a", "b", "c", "d", "e")
    store.add(batch, embed(batch))
    expect_equal((len(store), store.dim), (5, 16), "len and dim after adding 5 of dim 16")
    hits = store.search(EMBED.embed(["content of c"])[0], k=3)
    expect_equal(hits[0].document.id, "c", "the best hit of a document's own vector")
    expect(abs(hits[0].score - 1.0) < 1e-5, f"its score is 1, got {hits[0].score}")
    expect_equal(len(hits), 3, "hits for k=3")
    scores = [h.score for h in hits]
    expect_equal(scores, sorted(scores, reverse=True), "scores best first")
    expect_equal([d.id for d in store.get(["e", "nope", "a"])], ["e", "a"], "get in order")
    expect_equal(store.get(["a"])[0], batch[0], "a document read back")
    expect_equal(store.ids(), ["a", "b", "c", "d", "e"], "ids in insertion order")
    expect_equal(len(store.search(EMBED.embed(["x"])[0], k=50)), 5, "k beyond the count")
    expect_equal(store.search(EMBED.embed(["x"])[0], k=0), [], "k=0")


def check_scores_are_cosine(store: Any) -> None:
    """Scores are cosine similarities, whatever the vectors' lengths."""
    store.add(docs("a", "b"), np.array([[3.0] + [0.0] * 15, [1.0, 1.0] + [0.0] * 14]))
    hits = store.search([10.0] + [0.0] * 15, k=2)
    expect_equal(_ids(hits), ["a", "b"], "hits of a scaled query")
    expect(abs(hits[0].score - 1.0) < 1e-6, f"cosine of parallel vectors is 1: {hits[0].score}")
    expect(abs(hits[1].score - 2**-0.5) < 1e-6, f"cosine at 45 degrees: {hits[1].score}")


def check_metadata_filters(store: Any) -> None:
    """Filters match JSON values (``true`` is not ``1``; ``1.0`` is ``1``), all keys at once."""
    for batch in (docs("en1", "en2", lang="en", n=1), docs("zh1", lang="zh", n=1)):
        store.add(batch, embed(batch))
    flag = docs("t", lang="en", n=True)
    store.add(flag, embed(flag))
    query = EMBED.embed(["content of zh1"])[0]
    found = set(_ids(store.search(query, k=5, filter={"lang": "en"})))
    expect_equal(found, {"en1", "en2", "t"}, "search filtered on lang")
    expect_equal(store.ids(filter={"lang": "en", "n": 1}), ["en1", "en2"], "true is not 1")
    expect_equal(store.ids(filter={"n": True}), ["t"], "a boolean filter")
    expect_equal(store.ids(filter={"n": 1.0, "lang": "zh"}), ["zh1"], "1.0 is 1")
    expect_equal(store.search(query, k=5, filter={"lang": "fr"}), [], "no match")
    store.remove(["en1"])
    expect_equal(store.ids(filter={"lang": "en"}), ["en2", "t"], "a filter after a removal")


def check_remove_keeps_order(store: Any) -> None:
    """Removal is idempotent, keeps insertion order, and the rows stay with their ids."""
    batch = docs(*"abcdefg")
    store.add(batch, embed(batch))
    expect_equal(store.remove(["b", "e", "zzz"]), 2, "removed of two known ids and one not")
    expect_equal(store.remove(["b", "e"]), 0, "removing them again")
    expect_equal(store.ids(), ["a", "c", "d", "f", "g"], "ids after removals")
    for doc_id in store.ids():
        best = store.search(EMBED.embed([f"content of {doc_id}"])[0], k=1)[0].document.id
        expect_equal(best, doc_id, f"the best hit of {doc_id}'s vector")
    expect_equal((store.remove([]), len(store)), (0, 5), "an empty removal")


def check_duplicate_ids_change_nothing(store: Any) -> None:
    """A stored id, or one id twice in an add, is a clear error that stores nothing."""
    batch = docs("a", "b")
    store.add(batch, embed(batch))
    error = expect_raises(
        ConflictError, "adding a stored id", store.add, docs("c", "a"), embed(docs("c", "a"))
    )
    expect("a" in str(error), f"the error names the id: {error}")
    expect_raises(
        InvalidInputError, "one id twice", store.add, docs("x", "x"), embed(docs("x", "x"))
    )
    expect_equal(store.ids(), ["a", "b"], "ids after the refused adds")


def check_replace_in_one_add(store: Any) -> None:
    """``replace=`` removes ids and adds documents in one write."""
    batch = docs("a", "b")
    store.add(batch, embed(batch))
    new = docs("a", "c", version=2)
    store.add(new, embed(new), replace=["a", "b", "never-stored"])
    expect_equal(store.ids(), ["a", "c"], "ids after a replacing add")
    expect_equal(store.get(["a"])[0].metadata, {"version": 2}, "the replaced document")


def check_dimension_and_shape_errors(store: Any) -> None:
    """Wrong lengths, counts and non-finite values are refused and store nothing."""
    store.add(docs("a"), embed(docs("a")))
    expect_raises(InvalidInputError, "another dimension", store.add, docs("b"), np.ones((1, 8)))
    expect_raises(
        InvalidInputError, "two docs, one vector", store.add, docs("b", "c"), np.ones((1, 16))
    )
    expect_raises(InvalidInputError, "a NaN vector", store.add, docs("b"), np.full((1, 16), np.nan))
    expect_raises(InvalidInputError, "a query of another dimension", store.search, np.ones(8))
    expect_equal(store.ids(), ["a"], "ids after the refused adds")


def check_empty_store(store: Any) -> None:
    """An empty store finds nothing and has no dimension; an empty add changes nothing."""
    expect_equal((store.search(np.ones(16)), len(store), store.dim), ([], 0, None), "empty")
    store.add([], np.zeros((0, 16)))
    expect_equal(len(store), 0, "len after an empty add")


def check_search_batch_and_ties(store: Any) -> None:
    """``search_batch`` gives the single searches' hits; ties break by insertion order."""
    batch = docs(*[f"d{i}" for i in range(30)], group="g")
    store.add(batch, embed(batch))
    queries = EMBED.embed(["content of d3", "content of d17", "other"])
    batch_hits = store.search_batch(queries, k=4, filter={"group": "g"})
    for hits, query in zip(batch_hits, queries, strict=True):
        expect_equal(_ids(hits), _ids(store.search(query, k=4)), "a batch search's hits")
    store.add(docs("x", "y", "z"), np.ones((3, 16)))
    expect_equal(_ids(store.search(np.ones(16), k=2)), ["x", "y"], "equal scores")


def check_stored_vectors_are_unit_rows(store: Any) -> None:
    """``vectors(ids)`` gives the stored unit vectors, in the order asked."""
    raw = np.arange(1, 33, dtype=np.float32).reshape(2, 16)
    store.add(docs("a", "b"), raw)
    unit = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    got = store.vectors(["b", "nope", "a"])
    expect(got.dtype == np.float32, f"float32 vectors, got {got.dtype}")
    expect(np.allclose(got, unit[::-1], atol=1e-6), "the unit vectors of b then a")


VECTOR_CHECKS: dict[str, Check] = {
    name.removeprefix("check_"): check
    for name, check in sorted(globals().items())
    if name.startswith("check_") and callable(check)
}
"""Every check by name (``add_search_get_len``, ...)."""


def close(store: object) -> None:
    """Close the store a persisted vector store (or graph) holds, if it holds one."""
    inner = getattr(store, "store", None)
    if inner is not None and hasattr(inner, "close"):
        inner.close()


def _run_check(make: VectorFactory, check: Check) -> None:
    store = make()
    try:
        check(store)
    finally:
        close(store)


def run_vector_conformance(
    make_vectors: VectorFactory, *, only: Iterable[str] | None = None
) -> None:
    """Run the vector conformance checks, each on a fresh store from ``make_vectors``.

    Raises:
        VectorConformanceFailure: Some checks failed; the message names each and why.
        KeyError: ``only`` names an unknown check.
    """
    run_checks(
        VECTOR_CHECKS,
        make_vectors,
        _run_check,
        only=only,
        failure=VectorConformanceFailure,
        what="vector",
    )


class VectorConformance:
    """Base class for a pytest suite: one test per vector conformance check.

    Example:
        >>> from agcore_lab.rag import InMemoryVectorStore
        >>> class TestMyVectors(VectorConformance):
        ...     def make_vectors(self) -> VectorStore:
        ...         return InMemoryVectorStore(capacity=2)

    Override :meth:`make_vectors`; it is called once per test (and its ``store`` closed after).
    """

    def make_vectors(self) -> VectorStore:
        """Return a new, empty vector store of the backend under test."""
        raise NotImplementedError("override make_vectors() to return a new, empty store")

    def __init_subclass__(cls, **kwargs: object) -> None:
        # One test method per check, generated: a new check needs no hand-written copy.
        super().__init_subclass__(**kwargs)
        for name, check in VECTOR_CHECKS.items():
            setattr(cls, f"test_{name}", _test_method(check))


def _test_method(check: Check) -> Callable[[VectorConformance], None]:
    def test(self: VectorConformance) -> None:
        _run_check(self.make_vectors, check)

    test.__name__ = f"test_{check.__name__.removeprefix('check_')}"
    test.__doc__ = check.__doc__
    return test

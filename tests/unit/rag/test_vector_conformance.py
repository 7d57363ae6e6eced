"""Every vector store backend passes the one vector conformance suite (generated per backend)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from agcore_lab.rag import InMemoryVectorStore, SqliteVectorStore, VectorStore
from agcore_lab.store.sqlite import SqliteStore
from agcore_lab.testing.vector_conformance import (
    VECTOR_CHECKS,
    VectorConformance,
    VectorConformanceFailure,
    run_vector_conformance,
)


class TestInMemoryVectors(VectorConformance):
    def make_vectors(self) -> VectorStore:
        return InMemoryVectorStore(capacity=2)


class TestSqliteMemoryVectors(VectorConformance):
    def make_vectors(self) -> VectorStore:
        return SqliteVectorStore(SqliteStore(":memory:"), "test", capacity=2)


class TestSqliteFileVectors(VectorConformance):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory, self.counter = tmp_path, itertools.count()

    def make_vectors(self) -> VectorStore:
        store = SqliteStore(self.directory / f"v{next(self.counter)}.db")
        return SqliteVectorStore(store, "test", capacity=2)


class TestSqliteVectorFile(VectorConformance):
    """A file made for vectors from a path (64 KiB pages)."""

    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory, self.counter = tmp_path, itertools.count()

    def make_vectors(self) -> VectorStore:
        return SqliteVectorStore(self.directory / f"v{next(self.counter)}.db", "test", capacity=2)


def test_every_check_has_a_test_method() -> None:
    assert {f"test_{name}" for name in VECTOR_CHECKS} <= set(dir(TestInMemoryVectors))
    assert len(VECTOR_CHECKS) >= 10


class _ForgetfulVectors(InMemoryVectorStore):
    """A broken backend: removal does nothing."""

    def remove(self, ids):  # type: ignore[no-untyped-def,override]
        return 0


def test_the_suite_names_what_a_broken_backend_gets_wrong() -> None:
    with pytest.raises(VectorConformanceFailure) as info:
        run_vector_conformance(_ForgetfulVectors)
    assert "remove_keeps_order" in str(info.value)
    assert "scores_are_cosine" not in str(info.value)
    run_vector_conformance(_ForgetfulVectors, only=["scores_are_cosine"])

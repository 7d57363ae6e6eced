"""SQLite files pass the persistence suite of vector stores and graphs: re-open, checks
against the file, namespaces, and other processes sharing a namespace."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from agcore_lab.kg import open_graph
from agcore_lab.kg.sqlite_graph import SqliteGraph
from agcore_lab.rag import SqliteVectorStore, open_vector_store
from agcore_lab.store.sqlite import SqliteStore
from agcore_lab.testing.persistence_conformance import (
    PERSISTENCE_CHECKS,
    PersistenceConformance,
)

pytestmark = pytest.mark.timeout(300)


class TestSqlitePersistence(PersistenceConformance):
    @pytest.fixture(autouse=True)
    def _directory(self, tmp_path: Path) -> None:
        self.directory, self.counter = tmp_path, itertools.count()

    def new_store_url(self) -> str:
        return f"sqlite:///{self.directory / f'lab-{next(self.counter)}.db'}"


def test_every_check_has_a_test_method() -> None:
    assert {f"test_{n}" for n in PERSISTENCE_CHECKS} <= set(dir(TestSqlitePersistence))


def test_the_factories_pick_the_sqlite_classes(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "lab.db")
    assert type(open_vector_store(store, "docs")) is SqliteVectorStore
    assert type(open_graph(store, "kg")) is SqliteGraph
    by_url = open_vector_store(f"sqlite:///{tmp_path / 'lab.db'}", "docs")
    assert type(by_url) is SqliteVectorStore and by_url.store is not store

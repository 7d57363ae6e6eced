"""Vector stores and knowledge graphs on a real PostgreSQL server: the same conformance suites
as the other backends (vectors, graphs, persistence across re-open and processes), the
factories, and what the tables look like."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from agcore_lab import InvalidInputError, StorageError, open_store
from agcore_lab.kg import GraphEntity, GraphRelation, KnowledgeGraph, PostgresGraph, open_graph
from agcore_lab.rag import PostgresVectorStore, SqliteVectorStore, VectorStore, open_vector_store
from agcore_lab.store.postgres import PostgresStore
from agcore_lab.testing.graph_conformance import GraphConformance
from agcore_lab.testing.persistence_conformance import PersistenceConformance
from agcore_lab.testing.vector_conformance import VectorConformance, docs, embed

pytestmark = pytest.mark.timeout(300)


def _schema() -> str:
    return "t_" + uuid.uuid4().hex[:10]


class _OnServer:
    @pytest.fixture(autouse=True)
    def _server(self, postgres_url: str) -> None:
        self.url = postgres_url


class TestPostgresVectors(_OnServer, VectorConformance):
    def make_vectors(self) -> VectorStore:
        return PostgresVectorStore(PostgresStore(self.url, schema=_schema()), "t", capacity=2)


class TestPostgresGraph(_OnServer, GraphConformance):
    # The graph suite does not close what it makes: close the stores after each test.
    def setup_method(self) -> None:
        self.stores: list[PostgresStore] = []

    def make_graph(self) -> KnowledgeGraph:
        self.stores.append(PostgresStore(self.url, schema=_schema()))
        return PostgresGraph(self.stores[-1])

    def teardown_method(self) -> None:
        for store in self.stores:
            store.close()


class TestPostgresPersistence(_OnServer, PersistenceConformance):
    def new_store_url(self) -> str:
        separator = "&" if "?" in self.url else "?"
        return f"{self.url}{separator}schema={_schema()}"


def test_the_factories_pick_the_postgres_classes(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, schema=_schema())
    vectors = open_vector_store(store, "docs")
    graph = open_graph(store, "kg")
    assert type(vectors) is PostgresVectorStore and vectors.store is store
    assert type(graph) is PostgresGraph and graph.store is store
    assert "PostgresVectorStore" in repr(vectors) and "PostgresGraph" in repr(graph)
    url_vectors = PostgresVectorStore(f"{postgres_url}?schema={store.schema}", "docs")
    assert url_vectors.store.schema == store.schema
    url_vectors.store.close()
    store.close()


def test_a_sqlite_store_or_url_is_refused_by_the_postgres_classes(tmp_path: object) -> None:
    with pytest.raises(InvalidInputError, match="open_vector_store"):
        PostgresVectorStore("sqlite:///lab.db", "docs")
    with pytest.raises(InvalidInputError, match="PostgresStore"):
        PostgresGraph(open_store(":memory:"))  # type: ignore[arg-type]
    assert type(open_vector_store(":memory:")) is SqliteVectorStore


def test_the_tables_are_flat_and_vectors_are_float32_bytes(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, schema=_schema())
    vectors = PostgresVectorStore(store, "docs")
    batch = docs("a", "b", source_id="a.md", chunk_index=2)
    vectors.add(batch, embed(batch))
    rows = store.read_dataframe("select * from vectors order by seq")
    assert list(rows["doc_id"]) == ["a", "b"] and list(rows["chunk_index"]) == [2, 2]
    assert list(rows["source_id"]) == ["a.md", "a.md"]
    stored = np.frombuffer(bytes(rows["embedding"][0]), dtype="<f4")
    assert np.allclose(stored, vectors.vectors(["a"])[0])
    graph = PostgresGraph(store, "g")
    graph.add_entity_sync(GraphEntity(id="a", entity_type="person", tags=["x", "y"]))
    graph.add_entity_sync(GraphEntity(id="b"))
    graph.add_relation_sync(GraphRelation(source="a", target="b", relation_type="k", weight=0.5))
    graph.add_relation_sync(GraphRelation(source="a", target="b", relation_type="k", weight=0.7))
    relations = store.read_dataframe(
        "select source, relation_type, target, weight from kg_relations"
    )
    assert relations.to_dict("records") == [
        {"source": "a", "relation_type": "k", "target": "b", "weight": 0.7}
    ]
    tags = store.read_dataframe("select tag from kg_entity_tags order by position")
    assert list(tags["tag"]) == ["x", "y"]
    store.close()


def test_a_failed_write_changes_neither_the_server_nor_memory(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, schema=_schema())
    vectors = PostgresVectorStore(store, "docs")
    vectors.add(docs("a"), embed(docs("a")))
    with store.transaction() as conn:  # another writer took "b" behind this view's back
        conn.execute(
            "INSERT INTO vector_docs (namespace, doc_id, mime_type, content, metadata_json, "
            "embedding) VALUES (?, ?, ?, ?, ?, ?)",
            ("docs", "b", "text/plain", "x", "{}", embed(docs("b"))[0].astype("<f4").tobytes()),
        )
    with pytest.raises(Exception, match="already stored"):
        vectors.add(docs("c", "b"), embed(docs("c", "b")))
    assert vectors.ids() == ["a"] and vectors.file_rows() == 2
    vectors.reload()
    assert vectors.ids() == ["a", "b"]
    store.close()


def test_a_damaged_vector_row_is_a_clear_error(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, schema=_schema())
    vectors = PostgresVectorStore(store, "docs")
    batch = docs(*[f"d{i}" for i in range(700)])  # 1.08 MB of COPY data: read in two parts
    vectors.add(batch, np.random.default_rng(5).standard_normal((700, 384)))
    assert np.array_equal(PostgresVectorStore(store, "docs").vectors(), vectors.vectors())
    with store.transaction() as conn:
        conn.execute(
            "UPDATE vector_docs SET embedding = ? WHERE doc_id = ?", (b"\x00" * 12, "d350")
        )
    with pytest.raises(StorageError, match="not 700 x 384 float32"):
        PostgresVectorStore(store, "docs")
    store.close()

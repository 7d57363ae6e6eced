"""What every persisted vector store and knowledge graph must do beyond the in-memory suites:
keep everything across a re-open, check writes against the storage (not one process's memory),
keep namespaces apart, and share a namespace with another process.

Each check is a plain function of a :class:`Location` — a store URL naming fresh, empty
storage — and opens the vector stores and graphs there with
:func:`~agcore_lab.rag.open_vectors.open_vector_store` and
:func:`~agcore_lab.kg.open_graph.open_graph`, so one suite holds every backend
:func:`~agcore_lab.store.open.open_store` knows. In pytest, subclass
:class:`PersistenceConformance` and override :meth:`PersistenceConformance.new_store_url`.

Example:
    >>> import tempfile, pathlib
    >>> directory = pathlib.Path(tempfile.mkdtemp())
    >>> run_persistence_conformance(
    ...     lambda: f"sqlite:///{directory / 'lab.db'}", only=["vectors_namespaces_separate"]
    ... )
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from agcore_lab.errors import ConflictError, InvalidInputError
from agcore_lab.kg.open_graph import open_graph
from agcore_lab.kg.types import GraphEntity, GraphRelation
from agcore_lab.rag.documents import Document
from agcore_lab.rag.open_vectors import open_vector_store
from agcore_lab.store.open import open_store
from agcore_lab.testing._support import expect, expect_equal, expect_raises, run_checks
from agcore_lab.testing.vector_conformance import EMBED, close, docs, embed

__all__ = [
    "PERSISTENCE_CHECKS",
    "Location",
    "PersistenceConformance",
    "PersistenceConformanceFailure",
    "run_persistence_conformance",
]


class PersistenceConformanceFailure(AssertionError):
    """One or more persistence checks failed; the message lists each with its reason."""


@dataclass(frozen=True)
class Location:
    """Fresh, empty storage for one check: a store URL any process can open."""

    url: str

    @contextmanager
    def vectors(self, namespace: str = "docs") -> Iterator[Any]:
        """A vector store of ``namespace`` on a store of its own (closed after)."""
        opened = open_vector_store(open_store(self.url), namespace, capacity=2)
        try:
            yield opened
        finally:
            close(opened)

    @contextmanager
    def graph(self, namespace: str = "kg") -> Iterator[Any]:
        """A graph of ``namespace`` on a store of its own (closed after)."""
        opened = open_graph(open_store(self.url), namespace)
        try:
            yield opened
        finally:
            close(opened)

    def worker(self, *args: str) -> list[str]:
        """Run :mod:`agcore_lab.testing._share_worker` in another process; its ids."""
        return _ids_of(self.start_worker(*args))

    def start_worker(self, *args: str) -> subprocess.Popen[str]:
        command, namespace, *ids = args
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agcore_lab.testing._share_worker",
                command,
                self.url,
                namespace,
                *ids,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )


def _ids_of(proc: subprocess.Popen[str]) -> list[str]:
    out, err = proc.communicate(timeout=120)
    expect(proc.returncode == 0, f"the worker process failed: {err.strip()[-2000:]}")
    ids = json.loads(out.strip().splitlines()[-1])["ids"]
    assert isinstance(ids, list)
    return [str(i) for i in ids]


# -- vectors --------------------------------------------------------------------------------


def check_vectors_reopen(location: Location) -> None:
    """Documents, metadata, vectors and order survive a re-open, after adds, a removal and a
    replacement; the ``vectors`` table reads one row per document."""
    first = [
        Document(
            id=f"c{i}",
            content=f"chunk {i} of a.md",
            metadata={"source_id": "a.md", "chunk_index": i, "start_index": 10 * i, "n": [i]},
        )
        for i in range(5)
    ]
    with location.vectors() as vectors:
        vectors.add(first, embed(first))
        more = docs("x", "y", lang="en")
        vectors.add(more, embed(more))
        vectors.remove(["c1"])
        new = docs("x", version=2)
        vectors.add(new, embed(new), replace=["x"])
        ids, stored = vectors.ids(), vectors.vectors()
        documents = vectors.get(ids)
        query = EMBED.embed(["chunk 3 of a.md"])[0]
        hits = [(h.document.id, round(h.score, 6)) for h in vectors.search(query, k=4)]
    with location.vectors() as again:
        expect_equal(again.ids(), ["c0", "c2", "c3", "c4", "y", "x"], "ids after re-opening")
        expect_equal(again.ids(), ids, "the same ids as before closing")
        expect_equal(again.get(ids), documents, "documents after re-opening")
        expect(np.array_equal(again.vectors(), stored), "the same float32 vectors, bit for bit")
        found = [(h.document.id, round(h.score, 6)) for h in again.search(query, k=4)]
        expect_equal(found, hits, "search after re-opening")
        expect_equal(again.dim, 16, "the dimension after re-opening")
        table = again.store.read_dataframe(
            "SELECT doc_id, source_id, chunk_index FROM vectors WHERE namespace = ? "
            "ORDER BY doc_id",
            ("docs",),
        )
        expect_equal(list(table["doc_id"]), sorted(ids), "the vectors table's rows")
        expect_equal(list(table["source_id"][:4]), ["a.md"] * 4, "a flat source_id column")


def check_vectors_checked_against_storage(location: Location) -> None:
    """Ids and the dimension written through another store object are refused here before
    this one reloads, and a refused write stores nothing."""
    with location.vectors() as one, location.vectors() as two:
        one.add(docs("a"), embed(docs("a")))
        expect_equal(len(two), 0, "a view opened before the write (loaded once)")
        expect_raises(
            ConflictError,
            "an id another view stored",
            two.add,
            docs("a", "b"),
            embed(docs("a", "b")),
        )
        expect_raises(
            InvalidInputError, "a dimension another view fixed", two.add, docs("c"), np.ones((1, 8))
        )
        two.reload()
        expect_equal(two.ids(), ["a"], "the other view after reload()")
        expect_equal(two.file_rows(), 1, "rows stored after the refused writes")


def check_vectors_namespaces_separate(location: Location) -> None:
    """Namespaces of one store hold their own documents and dimensions."""
    with location.vectors("one") as one, location.vectors("two") as two:
        one.add(docs("a"), embed(docs("a")))
        two.add(docs("a", "b"), np.ones((2, 4)))
    with location.vectors("one") as one, location.vectors("two") as two:
        expect_equal((one.ids(), one.dim), (["a"], 16), "namespace one")
        expect_equal((two.ids(), two.dim), (["a", "b"], 4), "namespace two")


def check_vectors_two_processes(location: Location) -> None:
    """Another process's adds are seen after ``reload()``, this one's by a new process; two
    processes adding at once both keep their documents."""
    with location.vectors() as vectors:
        vectors.add(docs("base"), embed(docs("base")))
        expect_equal(
            location.worker("vectors-add", "docs", "p0", "p1"),
            ["base", "p0", "p1"],
            "the worker's ids after its add",
        )
        expect_equal(vectors.ids(), ["base"], "this process before reload()")
        vectors.reload()
        expect_equal(vectors.ids(), ["base", "p0", "p1"], "this process after reload()")
        expect(
            np.allclose(vectors.vectors(["p1"]), embed(docs("p1")), atol=1e-6),
            "the other process's vector",
        )
        vectors.add(docs("c0"), embed(docs("c0")))
        expect_equal(location.worker("vectors-ids", "docs")[-1], "c0", "a new process sees c0")
        procs = [location.start_worker("vectors-add", "docs", f"{n}0", f"{n}1") for n in "lr"]
        for proc in procs:
            _ids_of(proc)
        vectors.reload()
        expect_equal(sorted(vectors.ids()[4:]), ["l0", "l1", "r0", "r1"], "concurrent adds")


# -- graphs ---------------------------------------------------------------------------------


def _sample_graph(graph: Any) -> None:
    graph.add_entity_sync(
        GraphEntity(
            id="ada",
            name="Ada Lovelace",
            entity_type="person",
            description="first programmer",
            tags=["math", "computing"],
            properties={"born": 1815, "letters": ["Babbage"]},
        )
    )
    for entity_id in ("engine", "babbage", "turing"):
        graph.add_entity_sync(GraphEntity(id=entity_id, tags=["computing"]))
    graph.add_relation_sync(
        GraphRelation(
            source="ada",
            target="engine",
            relation_type="programmed",
            weight=0.9,
            properties={"year": 1843},
        )
    )
    graph.add_relation_sync(
        GraphRelation(source="babbage", target="engine", relation_type="designed")
    )
    graph.add_relation_sync(GraphRelation(source="engine", target="turing", weight=0.5))
    graph.set_entity_tags_sync("turing", ["logic"])
    graph.remove_entity_sync("babbage")


def check_graph_reopen(location: Location) -> None:
    """Entities, tags, properties, relations and walks survive a re-open."""
    with location.graph() as graph:
        _sample_graph(graph)
        entities, relations = graph.to_dataframes()
        walk = [(r.entity.id, r.score, r.path) for r in graph.get_related_sync("ada", 2)]
    with location.graph() as again:
        got_entities, got_relations = again.to_dataframes()
        expect_equal(got_entities.to_dict("records"), entities.to_dict("records"), "entities")
        expect_equal(got_relations.to_dict("records"), relations.to_dict("records"), "relations")
        expect_equal(
            [(r.entity.id, r.score, r.path) for r in again.get_related_sync("ada", 2)],
            walk,
            "a walk after re-opening",
        )
        expect_equal([e.id for e in again.find_tags_sync(["logic"])], ["turing"], "new tags")
        rows = again.store.read_dataframe(
            "SELECT source, relation_type, target FROM kg_relations WHERE namespace = ? "
            "ORDER BY source",
            ("kg",),
        )
        expect_equal(list(rows["source"]), ["ada", "engine"], "the flat kg_relations table")


def check_graph_namespaces_and_views(location: Location) -> None:
    """Namespaces are separate; a second view sees another's writes after ``reload()``."""
    with location.graph() as one, location.graph() as two, location.graph("other") as other:
        one.add_entity_sync(GraphEntity(id="a"))
        expect_equal(len(two), 0, "a view opened before the write")
        two.reload()
        expect_equal(len(two), 1, "the view after reload()")
        two.add_entity_sync(GraphEntity(id="b"))
        two.add_relation_sync(GraphRelation(source="a", target="b"))
        one.reload()
        expect_equal(one.relation_count, 1, "the first view after the second's write")
        other.reload()
        expect_equal(len(other), 0, "another namespace")


def check_graph_two_processes(location: Location) -> None:
    """Another process's writes are seen after ``reload()``; two writers at once keep both."""
    with location.graph() as graph:
        graph.add_entity_sync(GraphEntity(id="hub"))
        expect_equal(location.worker("graph-add", "kg", "w0"), ["hub", "w0"], "the worker")
        expect_equal(len(graph), 1, "this process before reload()")
        graph.reload()
        expect_equal([r.entity.id for r in graph.get_related_sync("hub")], ["w0"], "reloaded")
        graph.add_entity_sync(GraphEntity(id="mine"))
        expect("mine" in location.worker("graph-ids", "kg"), "a new process sees this write")
        procs = [location.start_worker("graph-add", "kg", f"{n}0", f"{n}1") for n in "lr"]
        for proc in procs:
            _ids_of(proc)
        graph.reload()
        related = sorted(r.entity.id for r in graph.get_related_sync("hub"))
        expect_equal(related, ["l0", "l1", "r0", "r1", "w0"], "two writers at once")


PERSISTENCE_CHECKS: dict[str, Callable[[Location], None]] = {
    name.removeprefix("check_"): check
    for name, check in sorted(globals().items())
    if name.startswith("check_") and callable(check)
}
"""Every check by name (``vectors_reopen``, ``graph_two_processes``, ...)."""


def _run_check(make: Callable[[], str], check: Callable[[Location], None]) -> None:
    check(Location(make()))


def run_persistence_conformance(
    new_store_url: Callable[[], str], *, only: Iterable[str] | None = None
) -> None:
    """Run the persistence checks, each on fresh storage named by ``new_store_url()``.

    Raises:
        PersistenceConformanceFailure: Some checks failed; the message names each and why.
    """
    run_checks(
        PERSISTENCE_CHECKS,
        new_store_url,
        _run_check,
        only=only,
        failure=PersistenceConformanceFailure,
        what="persistence",
    )


class PersistenceConformance:
    """Base class for a pytest suite: one test per persistence check.

    Override :meth:`new_store_url` to return a store URL naming fresh, empty storage
    (``sqlite:///<tmp>/n.db``, ``postgresql://...?schema=<new>``) each time it is called.
    """

    def new_store_url(self) -> str:
        """A store URL naming fresh, empty storage."""
        raise NotImplementedError("override new_store_url() to name fresh, empty storage")

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        for name, check in PERSISTENCE_CHECKS.items():
            setattr(cls, f"test_{name}", _test_method(check))


def _test_method(check: Callable[[Location], None]) -> Callable[[PersistenceConformance], None]:
    def test(self: PersistenceConformance) -> None:
        _run_check(self.new_store_url, check)

    test.__name__ = f"test_{check.__name__.removeprefix('check_')}"
    test.__doc__ = check.__doc__
    return test

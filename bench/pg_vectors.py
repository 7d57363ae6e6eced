"""Benchmark: vector stores and graphs on PostgreSQL beside the same work on SQLite.

Measured in the same run, on the same deterministic data:

1. ``PostgresVectorStore.add``: 20,000 x 384 float32 vectors added 2,000 at a time,
   milliseconds per 1,000, beside ``SqliteVectorStore`` on a file (goal: <= 3x SQLite — a
   server round trip per batch against a local file).
2. Re-open (load the namespace into memory): seconds, beside the floor for the server — one
   ``COPY ... TO STDOUT (FORMAT binary)`` of the namespace's vectors, read and dropped (goal:
   <= 1.5x) — and, for reference, beside SQLite's re-open of its blocks (no goal: one row per
   document on the server costs a message per vector, SQLite reads 85 vectors per row).
3. Search after re-opening: milliseconds per query, top 10 (the same in-memory numpy code on
   both: goal <= 1.2x SQLite).
4. ``PostgresGraph``: 2,000 entities and 6,000 relations added in one import, then re-opened:
   seconds beside ``SqliteGraph`` (goal: re-open <= 3x).

Needs a server: ``AGCORE_TEST_POSTGRES_URL``, else a throwaway one from Debian's PostgreSQL
binaries (as the tests start). Timings are the best of a few repeats. Run:
python bench/pg_vectors.py [--vectors 20000] [--quick]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agcore_lab.kg import PostgresGraph, SqliteGraph
from agcore_lab.rag import Document, PostgresVectorStore, SqliteVectorStore
from agcore_lab.store.postgres import PostgresStore
from agcore_lab.store.sqlite import SqliteStore

DIM = 384


@contextmanager
def server() -> Iterator[str]:
    given = os.environ.get("AGCORE_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    from agcore_lab.testing.postgres_server import TemporaryPostgres

    with TemporaryPostgres() as url:
        yield url


def best(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def verdict(ratio: float, goal: float) -> str:
    return "PASS" if ratio <= goal else "MISS"


def data(n: int) -> tuple[list[Document], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(7)
    docs = [
        Document(id=f"d{i}", content=f"chunk {i}", metadata={"source_id": f"s{i % 50}.md"})
        for i in range(n)
    ]
    return docs, rng.standard_normal((n, DIM), dtype=np.float32)


def add_all(vectors: Any, docs: list[Document], matrix: np.ndarray[Any, Any], step: int) -> None:
    for start in range(0, len(docs), step):
        vectors.add(docs[start : start + step], matrix[start : start + step])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="fewer vectors and repeats")
    args = parser.parse_args()
    n = 4_000 if args.quick else args.vectors
    repeats = 2 if args.quick else 3
    step = max(1, n // 10)
    docs, matrix = data(n)
    results: list[bool] = []
    folder = Path(tempfile.mkdtemp())
    with server() as url:

        def pg_store() -> PostgresStore:
            return PostgresStore(url, schema="b_" + uuid.uuid4().hex[:10])

        def sqlite_store() -> SqliteStore:
            return SqliteStore(folder / f"{uuid.uuid4().hex}.db")

        # 1. add
        stores: dict[str, Any] = {}
        made: list[Any] = []

        def add(kind: str) -> None:
            store = pg_store() if kind == "pg" else sqlite_store()
            cls = PostgresVectorStore if kind == "pg" else SqliteVectorStore
            add_all(cls(store, "bench"), docs, matrix, step)  # type: ignore[arg-type]
            stores[kind] = store
            made.append(store)

        pg_add = best(lambda: add("pg"), repeats)
        lite_add = best(lambda: add("sqlite"), repeats)
        ratio = pg_add / lite_add
        results.append(ratio <= 3.0)
        print(
            f"1. add {n} x {DIM} in batches of {step}: PostgreSQL "
            f"{1000 * pg_add / n * 1000:.1f} ms/1000, SQLite {1000 * lite_add / n * 1000:.1f} "
            f"ms/1000 -> {ratio:.2f}x (goal <= 3x) {verdict(ratio, 3.0)}"
        )

        # 2. re-open
        pg_open = best(lambda: PostgresVectorStore(stores["pg"], "bench"), repeats)
        lite_open = best(lambda: SqliteVectorStore(stores["sqlite"], "bench"), repeats)

        def copy_floor() -> None:
            with stores["pg"].transaction(write=False) as conn:
                sql = (
                    "COPY (SELECT embedding FROM vector_docs WHERE namespace = %s ORDER BY seq) "
                    "TO STDOUT (FORMAT binary)"
                )
                with conn.raw.cursor().copy(sql, ("bench",)) as copy:
                    for _ in copy:
                        pass

        floor = best(copy_floor, repeats)
        ratio, floor_ratio = pg_open / lite_open, pg_open / floor
        results.append(floor_ratio <= 1.5)
        print(
            f"2. re-open: PostgreSQL {pg_open:.3f} s, binary COPY of the vectors {floor:.3f} s "
            f"-> {floor_ratio:.2f}x (goal <= 1.5x) {verdict(floor_ratio, 1.5)}; SQLite "
            f"{lite_open:.3f} s -> {ratio:.2f}x (for reference)"
        )

        # 3. search
        queries = np.random.default_rng(3).standard_normal((50, DIM), dtype=np.float32)
        pg_vectors = PostgresVectorStore(stores["pg"], "bench")
        lite_vectors = SqliteVectorStore(stores["sqlite"], "bench")
        assert [h.document.id for h in pg_vectors.search(queries[0], k=10)] == [
            h.document.id for h in lite_vectors.search(queries[0], k=10)
        ]
        pg_search = best(lambda: [pg_vectors.search(q, k=10) for q in queries], repeats)
        lite_search = best(lambda: [lite_vectors.search(q, k=10) for q in queries], repeats)
        ratio = pg_search / lite_search
        results.append(ratio <= 1.2)
        print(
            f"3. search top 10: PostgreSQL {1000 * pg_search / 50:.2f} ms/query, SQLite "
            f"{1000 * lite_search / 50:.2f} ms/query -> {ratio:.2f}x (goal <= 1.2x) "
            f"{verdict(ratio, 1.2)}"
        )

        # 4. graphs
        entities = 2_000 if not args.quick else 500
        triples = pd.DataFrame(
            {
                "source": [f"e{i % entities}" for i in range(3 * entities)],
                "relation": ["links"] * (3 * entities),
                "target": [f"e{(7 * i + 1) % entities}" for i in range(3 * entities)],
            }
        )
        graph_stores = {"pg": pg_store(), "sqlite": sqlite_store()}
        PostgresGraph(graph_stores["pg"], "g").import_triples_sync(triples)
        SqliteGraph(graph_stores["sqlite"], "g").import_triples_sync(triples)
        pg_graph = best(lambda: PostgresGraph(graph_stores["pg"], "g"), repeats)
        lite_graph = best(lambda: SqliteGraph(graph_stores["sqlite"], "g"), repeats)
        ratio = pg_graph / lite_graph
        results.append(ratio <= 3.0)
        print(
            f"4. graph re-open ({entities} entities, {len(triples)} relations): PostgreSQL "
            f"{pg_graph:.3f} s, SQLite {lite_graph:.3f} s -> {ratio:.2f}x (goal <= 3x) "
            f"{verdict(ratio, 3.0)}"
        )
        for store in [*made, *graph_stores.values()]:
            if isinstance(store, PostgresStore):
                store.drop_schema()
            store.close()
    print(f"all targets {'PASS' if all(results) else 'MISS'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

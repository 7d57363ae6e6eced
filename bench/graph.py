"""Knowledge-graph benchmark: build, walks at depth 2 and 3, keyword search, SqliteGraph reload.

    python bench/graph.py [--scale 1.0]

At scale 1.0: 100,000 entities and 500,000 relations (deterministic, seed 0), built with
``import_triples`` (one bulk call). ``--scale`` shrinks both counts.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from agcore_lab import SqliteStore
from agcore_lab.kg import InMemoryGraph, SqliteGraph


def _median_ms(fn, args_list) -> float:  # type: ignore[no-untyped-def]
    times = []
    for args in args_list:
        start = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    scale = parser.parse_args().scale
    n_entities, n_relations = int(100_000 * scale), int(500_000 * scale)
    print(f"scale {scale}: {n_entities:,} entities, {n_relations:,} relations")
    rng = np.random.default_rng(0)
    src = rng.integers(0, n_entities, n_relations)
    dst = rng.integers(0, n_entities, n_relations)
    triples = pd.DataFrame(
        {
            "source": [f"e{i}" for i in src],
            "relation": rng.choice(["cites", "uses", "part_of"], n_relations),
            "target": [f"e{i}" for i in dst],
            "weight": rng.uniform(0.1, 1.0, n_relations).round(3),
        }
    )
    graph = InMemoryGraph()
    start = time.perf_counter()
    graph.import_triples_sync(triples)
    print(f"build (import_triples): {time.perf_counter() - start:.2f} s, {graph!r}")
    sources = [(f"e{i}",) for i in rng.integers(0, n_entities, 20)]
    for depth in (2, 3):
        ms = _median_ms(lambda s, d=depth: graph.get_related_sync(s, depth=d), sources)
        print(f"get_related depth {depth}: median {ms:.2f} ms over {len(sources)} sources")
    queries = [(f"e{i}",) for i in rng.integers(0, n_entities, 20)]
    ms = _median_ms(lambda q: graph.find_by_keywords_sync(q, limit=10), queries)
    print(f"find_by_keywords: median {ms:.2f} ms over {len(queries)} queries")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "graph.db"
        start = time.perf_counter()
        SqliteGraph(SqliteStore(path)).import_triples_sync(triples)
        print(f"SqliteGraph write: {time.perf_counter() - start:.2f} s")
        start = time.perf_counter()
        reloaded = SqliteGraph(SqliteStore(path))
        print(f"SqliteGraph reload: {time.perf_counter() - start:.2f} s, {reloaded!r}")


if __name__ == "__main__":
    main()

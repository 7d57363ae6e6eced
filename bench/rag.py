"""Benchmark: the RAG layer — splitter, vector search, SQLite persistence, hashing embedding.

Every figure is printed beside its baseline, measured in the same run on the same data (all of
it generated deterministically):

1. Splitter throughput (MB/s) on a few MB of mixed English prose, code and Chinese, at
   (chunk_size, overlap) = (200, 20), (1000, 200), (4000, 400), beside LangChain's
   ``RecursiveCharacterTextSplitter`` with the same settings (target: ours / LangChain >= 1.5;
   the chunks are also checked to be identical).
2. Search in 100,000 x 384 float32 vectors, top 10, single queries and batches of 100:
   milliseconds per query beside a plain numpy ``X @ q`` + ``argpartition`` (target: <= 1.2x)
   and scikit-learn ``NearestNeighbors(metric="cosine", algorithm="brute")``.
3. SQLite: write 100,000 x 384 vectors, then reload them (target: < 0.5 s), and the file size
   against the raw float32 bytes (target: <= 1.4x).
4. Embedding: chunks per second of ``HashingEmbedding``.

Timings are the best of several repeats (the machine may be shared). Run:
python bench/rag.py [--mb 3] [--vectors 100000] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agcore_lab.rag import (
    Document,
    HashingEmbedding,
    InMemoryVectorStore,
    RecursiveCharacterSplitter,
    SqliteVectorStore,
)
from agcore_lab.store.sqlite import SqliteStore

WORDS = (
    "the a of to agent session slot fork merge checkpoint time travel vector store embedding "
    "retrieval chunk overlap separator model tool call memory summary notebook widget kernel "
    "approval dispatch worker lead budget cost token stream"
).split()
HANZI = (
    "机器学习是人工智能的一个分支它使用数据来训练模型"
    "会话检查点向量存储嵌入检索分块重叠分隔符工具调用"
)


def mixed_text(megabytes: float, seed: int = 7) -> str:
    """Paragraphs of English, Python-like code and Chinese, about ``megabytes`` of UTF-8."""
    rng = random.Random(seed)

    def english() -> str:
        sentences = []
        for _ in range(rng.randint(2, 9)):
            words = [rng.choice(WORDS) for _ in range(rng.randint(4, 22))]
            sentences.append(" ".join(words).capitalize() + rng.choice(".!?"))
        return " ".join(sentences)

    def code() -> str:
        lines = [f"def step_{rng.randint(0, 999)}(session, budget):"]
        for i in range(rng.randint(3, 30)):
            indent = "    " * rng.randint(1, 3)
            lines.append(f"{indent}x_{i} = call({rng.choice(WORDS)!r}, {rng.randint(0, 99)})")
        return "\n".join(lines)

    def chinese() -> str:
        return "".join(
            "".join(rng.choice(HANZI) for _ in range(rng.randint(6, 40))) + rng.choice("。！？，")
            for _ in range(rng.randint(2, 12))
        )

    makers = [english, english, code, chinese]
    parts: list[str] = []
    size = 0
    while size < megabytes * 1_000_000:
        part = rng.choice(makers)()
        parts.append(part)
        size += len(part.encode()) + 2
    # Mostly blank lines between paragraphs, now and then a longer run (as real files have).
    seps = ["\n\n"] * 9 + ["\n\n\n"]
    return "".join(p + rng.choice(seps) for p in parts)


def best(fn: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` runs, in seconds."""
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_splitter(megabytes: float, repeats: int) -> None:
    print(f"\n1. Splitter: {megabytes:g} MB of mixed English, code and Chinese")
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter
    except ImportError:
        print("   langchain-text-splitters is not installed (pip install -e '.[dev]'): skipped")
        return
    logging.getLogger("langchain_text_splitters").setLevel(logging.ERROR)
    text = mixed_text(megabytes)
    size_mb = len(text.encode()) / 1e6
    print(f"   {len(text):,} characters, {size_mb:.2f} MB; ratio = ours / LangChain throughput")
    print("   keep_separator  size/overlap  chunks   ours MB/s  LangChain MB/s  ratio")
    for keep in ("end", "start", False):
        for size, overlap in ((200, 20), (1000, 200), (4000, 400)):
            ours = RecursiveCharacterSplitter(size, overlap, keep_separator=keep)
            theirs = RecursiveCharacterTextSplitter(
                chunk_size=size,
                chunk_overlap=overlap,
                separators=list(ours.separators),
                keep_separator=True if keep == "start" else keep,
                length_function=len,
            )
            chunks = ours.split_text(text)
            same = chunks == theirs.split_text(text)
            t_ours = best(lambda o=ours: o.split_text(text), repeats)  # type: ignore[misc]
            t_theirs = best(lambda t=theirs: t.split_text(text), repeats)  # type: ignore[misc]
            label = "end (default)" if keep == "end" else repr(keep)
            print(
                f"   {label:<15} {size:>5}/{overlap:<6} {len(chunks):>7} {size_mb / t_ours:>10.1f} "
                f"{size_mb / t_theirs:>15.1f} {t_theirs / t_ours:>6.2f}"
                f"{'' if same else '  CHUNKS DIFFER'}"
            )
    print("   target: ratio >= 1.5")


def bench_search(count: int, dim: int, repeats: int) -> None:
    print(f"\n2. Search: {count:,} x {dim} float32, top 10")
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((count, dim), dtype=np.float32)
    docs = [Document.trusted(f"d{i}", "", {}, "text/plain") for i in range(count)]
    store = InMemoryVectorStore()
    started = time.perf_counter()
    store.add(docs, vectors)
    print(f"   add (normalize + copy into the matrix): {time.perf_counter() - started:.2f} s")
    # The baseline: the same normalized float32 matrix, searched by hand.
    matrix = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = rng.standard_normal((100, dim), dtype=np.float32)
    singles = queries[:50]
    k = 10

    def numpy_single() -> None:
        for q in singles:
            scores = matrix @ (q / np.linalg.norm(q))
            top = np.argpartition(-scores, k)[:k]
            top[np.argsort(-scores[top])]

    def numpy_batch() -> None:
        qs = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        scores = qs @ matrix.T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        np.take_along_axis(top, np.argsort(-np.take_along_axis(scores, top, 1), axis=1), 1)

    def ours_single() -> None:
        for q in singles:
            store.search(q, k)

    def ours_batch() -> None:
        store.search_batch(queries, k)

    from sklearn.neighbors import NearestNeighbors

    nn = NearestNeighbors(n_neighbors=k, metric="cosine", algorithm="brute").fit(vectors)
    sk_singles = singles[:10]

    def sklearn_single() -> None:
        for q in sk_singles:
            nn.kneighbors(q[None, :])

    def sklearn_batch() -> None:
        nn.kneighbors(queries)

    # Interleaved repeats: ours and the baseline see the same machine state.
    results: dict[str, list[float]] = {name: [] for name in ("os", "ns", "ob", "nb")}
    for _ in range(repeats):
        results["os"].append(best(ours_single, 1) / len(singles))
        results["ns"].append(best(numpy_single, 1) / len(singles))
        results["ob"].append(best(ours_batch, 1) / len(queries))
        results["nb"].append(best(numpy_batch, 1) / len(queries))
    sk_single = best(sklearn_single, max(1, repeats // 2)) / len(sk_singles)
    sk_batch = best(sklearn_batch, max(1, repeats // 2)) / len(queries)
    ours_s, np_s = min(results["os"]), min(results["ns"])
    ours_b, np_b = min(results["ob"]), min(results["nb"])
    print("   ms per query        ours    numpy X@q+argpartition   ratio   sklearn brute cosine")
    print(
        f"   single query   {ours_s * 1e3:>8.3f}  {np_s * 1e3:>14.3f}  {ours_s / np_s:>15.2f}"
        f"  {sk_single * 1e3:>12.3f}"
    )
    print(
        f"   batch of 100   {ours_b * 1e3:>8.3f}  {np_b * 1e3:>14.3f}  {ours_b / np_b:>15.2f}"
        f"  {sk_batch * 1e3:>12.3f}"
    )
    median = statistics.median(o / n for o, n in zip(results["os"], results["ns"], strict=True))
    print(f"   target: ours / numpy <= 1.2 (median single-query ratio over repeats {median:.2f})")


def bench_sqlite(count: int, dim: int, repeats: int) -> None:
    print(f"\n3. SQLite: write and reload {count:,} x {dim} vectors")
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((count, dim), dtype=np.float32)
    docs = [
        Document.trusted(f"doc-{i:07d}", f"chunk {i}", {"source_id": f"s{i // 10}"}, "text/plain")
        for i in range(count)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vectors.db"
        store = SqliteVectorStore(SqliteStore(path), "bench")
        started = time.perf_counter()
        for start in range(0, count, 10_000):
            store.add(docs[start : start + 10_000], vectors[start : start + 10_000])
        written = time.perf_counter() - started
        store.store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = os.path.getsize(path)
        raw = vectors.nbytes

        def reload() -> None:
            opened = SqliteVectorStore(SqliteStore(path), "bench")
            assert len(opened) == count

        reload_s = best(reload, repeats)
        print(f"   write: {written:.2f} s ({count / written:,.0f} vectors/s, 10,000 per add)")
        print(f"   reload (open store + load namespace): {reload_s:.3f} s   target: < 0.5 s")
        print(
            f"   file: {size / 1e6:.1f} MB for {raw / 1e6:.1f} MB of raw float32 = "
            f"{size / raw:.3f}x   target: <= 1.4x"
        )


def bench_embedding(repeats: int) -> None:
    print("\n4. Embedding: HashingEmbedding (word 1-2-grams + character 2-4-grams, dim 1024)")
    text = mixed_text(1.0, seed=3)
    chunks = RecursiveCharacterSplitter(1000, 200).split_text(text)[:1000]
    embedding = HashingEmbedding()
    embedding.embed(chunks[:10])  # load scikit-learn first
    seconds = best(lambda: embedding.embed(chunks), repeats)
    mean = sum(map(len, chunks)) / len(chunks)
    print(
        f"   {len(chunks) / seconds:,.0f} chunks/s ({len(chunks)} chunks of {mean:.0f} "
        f"characters on average, {len(chunks) * mean / seconds / 1e6:.2f} M characters/s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mb", type=float, default=3.0, help="splitter text size")
    parser.add_argument("--vectors", type=int, default=100_000, help="vectors for 2 and 3")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    blas = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    print(f"numpy {np.__version__}; BLAS settings from the environment: {blas or 'none'}")
    started = time.perf_counter()
    bench_splitter(args.mb, repeats)
    bench_search(args.vectors, args.dim, repeats)
    bench_sqlite(args.vectors, args.dim, repeats)
    bench_embedding(repeats)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

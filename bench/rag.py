"""Benchmark: the RAG layer — splitter, vector search, SQLite persistence, hashing embedding.

Every figure is printed beside its baseline, measured in the same run on the same data (all of
it generated deterministically):

1. Splitter throughput (MB/s) on a few MB of mixed English prose, code and Chinese, at
   (chunk_size, overlap) = (200, 20), (1000, 200), (4000, 400), beside LangChain's
   ``RecursiveCharacterTextSplitter`` with the same settings (target: ours / LangChain >= 1.5;
   the chunks are also checked to be identical). The same runs are also compared by this
   process's CPU time, which a busy machine inflates less.
2. Search in 100,000 x 384 float32 vectors, top 10, single queries and batches of 100:
   milliseconds per query beside a plain numpy ``X @ q`` + ``argpartition`` (target: <= 1.2x)
   and scikit-learn ``NearestNeighbors(metric="cosine", algorithm="brute")``.
3. SQLite, 100,000 x 384 vectors added 10,000 at a time into a file for vectors
   (``SqliteVectorStore(path)``: 64 KiB pages, or ``--page-size``): milliseconds per 1,000
   (goal <= 10) beside a minimal ``(id, BLOB)`` table (goal <= 1.5x), the same adds inside
   ``SqliteVectorStore.bulk()`` and into a session store's file (4 KiB pages), there both
   without and inside ``bulk()`` (goal <= 10); the file and its WAL while the store is still
   open, against the raw float32 bytes (goal <= 1.12x); reload beside reading the minimal
   table's BLOB rows into a matrix (goal <= 1.0x) and ``np.load`` of a ``.npy``; the peak
   resident-memory growth of a reload and of one ``InMemoryVectorStore.add`` of every vector,
   each in a fresh interpreter (goal <= 1.3x the raw bytes); and the in-memory half of that
   add, ``InMemoryVectorStore`` fed 10,000 at a time so that its matrix grows, beside a store
   with room for every row from the start: peak resident memory in fresh interpreters (goal
   <= 1.3x the raw bytes); CPU (goal <= 1.15x) and a search on each (goal <= 1.1x) in
   interpreters where both take turns (``--growth`` runs only these rows).
4. Embedding: chunks per second of ``HashingEmbedding``.

Timings are the best of several repeats (the machine may be shared; the splitter rows, a few ms
each, take twice as many). Run:
python bench/rag.py [--mb 3] [--vectors 100000] [--quick] [--only 1 3] [--page-size 65536]
    [--growth]
"""

from __future__ import annotations

import argparse
import contextlib
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


def best_pair(
    ours: Callable[[], object], peer: Callable[[], object], repeats: int
) -> tuple[float, float]:
    """The fastest of ``repeats`` runs of each, interleaved (both see the same machine)."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for fn, out in ((ours, times[0]), (peer, times[1])):
            gc.collect()
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return min(times[0]), min(times[1])


def best_pair_clocks(
    ours: Callable[[], object], peer: Callable[[], object], repeats: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """As :func:`best_pair`, by the wall clock and by this process's CPU time (which a busy
    machine inflates less: time spent waiting for a core does not count)."""
    wall: tuple[list[float], list[float]] = ([], [])
    cpu: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for fn, w, c in ((ours, wall[0], cpu[0]), (peer, wall[1], cpu[1])):
            gc.collect()
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            w.append(time.perf_counter() - start)
            c.append(time.process_time() - start_cpu)
    return (min(wall[0]), min(wall[1])), (min(cpu[0]), min(cpu[1]))


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
    print(
        "   keep_separator  size/overlap  chunks   ours MB/s  LangChain MB/s  ratio"
        "        CPU ratio"
    )
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
            (t_ours, t_theirs), (cpu_ours, cpu_theirs) = best_pair_clocks(
                lambda o=ours: o.split_text(text),  # type: ignore[misc]
                lambda t=theirs: t.split_text(text),  # type: ignore[misc]
                repeats,
            )
            label = "end (default)" if keep == "end" else repr(keep)
            print(
                f"   {label:<15} {size:>5}/{overlap:<6} {len(chunks):>7} {size_mb / t_ours:>10.1f} "
                f"{size_mb / t_theirs:>15.1f} {t_theirs / t_ours:>6.2f}"
                f"  {_verdict(t_theirs / t_ours >= 1.5 and same)}"
                f"  {cpu_theirs / max(cpu_ours, 1e-9):>6.2f}"
                f"{'' if same else '  CHUNKS DIFFER'}"
            )
    print(
        "   goal: ratio >= 1.5 at every size, the same chunks (CPU ratio: the same runs by this"
        f" process's CPU time, steadier on a busy machine; load average {os.getloadavg()[0]:.1f})"
    )


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


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# Runs in a fresh interpreter, so its peak RSS is its own: builds the same vectors, notes the
# resident set, does one thing, and prints seconds and the peak growth over the raw bytes.
PEAK_SCRIPT = """
import json, resource, sys, time
import numpy as np
from agcore_lab.rag import Document, InMemoryVectorStore, SqliteVectorStore
from agcore_lab.store.sqlite import SqliteStore

what, count, dim, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def status(field):  # kB in /proc; VmHWM is this process's own peak (getrusage counts the parent)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field))

def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

def huge_share(matrix):  # the share of the matrix's bytes on transparent huge pages
    low = matrix.ctypes.data
    high, huge, inside = low + matrix.nbytes, 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(None, 2)
            if "-" in head[0] and not head[0].endswith(":"):  # a mapping's first line
                start, end = (int(x, 16) for x in head[0].split("-"))
                inside = start < high and end > low
            elif inside and head[0] == "AnonHugePages:":
                huge += int(head[1]) * 1024
    return min(1.0, huge / max(1, matrix.nbytes))

if what in ("add", "grow", "prealloc", "pair"):
    vectors = np.random.default_rng(1).standard_normal((count, dim), dtype=np.float32)
    docs = [Document.trusted(f"doc-{i:07d}", "", {}, "text/plain") for i in range(count)]
else:
    SqliteStore(path).close()
before = max(status("VmRSS"), status("VmHWM"))
start = time.perf_counter()
extra = {}
if what == "add":
    InMemoryVectorStore().add(docs, vectors)
elif what in ("grow", "prealloc"):  # 10,000 per add: growing as needed, or room for all
    store = InMemoryVectorStore(capacity=count if what == "prealloc" else 1024)
    faults, cpu, thread_cpu = minor_faults(), time.process_time(), time.thread_time()
    system = resource.getrusage(resource.RUSAGE_SELF).ru_stime
    for at in range(0, count, 10_000):
        store.add(docs[at : at + 10_000], vectors[at : at + 10_000])
    extra["cpu"] = time.process_time() - cpu
    extra["thread_cpu"] = time.thread_time() - thread_cpu  # this thread only (no BLAS pool)
    extra["faults"] = minor_faults() - faults
    # Kernel time: the page faults (on a VM, also the host's work behind them).
    extra["system_cpu"] = resource.getrusage(resource.RUSAGE_SELF).ru_stime - system
    extra["huge"] = huge_share(store._matrix[: len(store)])
    queries = np.random.default_rng(2).standard_normal((20, dim), dtype=np.float32)
    seconds = time.perf_counter() - start
    store.search(queries[0], 10)
    rounds = []
    for _ in range(5):
        searched = time.perf_counter()
        for query in queries:
            store.search(query, 10)
        rounds.append((time.perf_counter() - searched) / len(queries))
    extra["search"] = min(rounds)
elif what == "pair":  # both ways in this one interpreter, taking turns: the same machine state
    queries = np.random.default_rng(2).standard_normal((20, dim), dtype=np.float32)
    sides = {"grow": 1024, "prealloc": count}

    def fill(capacity):
        store = InMemoryVectorStore(capacity=capacity)
        cpu = time.process_time()
        for at in range(0, count, 10_000):
            store.add(docs[at : at + 10_000], vectors[at : at + 10_000])
        return store, time.process_time() - cpu

    cpus = {side: [] for side in sides}
    kept = []  # the last two turns' stores are searched (two matrices a side, not one)
    for turn in range(6):  # who goes first alternates; other stores are freed before the next
        for side in sorted(sides, reverse=turn % 2 == 1):
            store, cpu = fill(sides[side])
            cpus[side].append(cpu)
            if turn >= 4:
                kept.append((side, store))
            del store
    fastest = [[float("inf")] * len(queries) for _ in kept]
    for _, store in kept:
        store.search(queries[0], 10)
    for turn in range(15):  # query by query, taking turns: all see the same moment
        for number, query in enumerate(queries):
            order = range(len(kept)) if (turn + number) % 2 == 0 else reversed(range(len(kept)))
            for which in order:
                searched = time.perf_counter()
                kept[which][1].search(query, 10)
                took = time.perf_counter() - searched
                fastest[which][number] = min(fastest[which][number], took)
    for side in sides:
        mine = [which for which, (name, _) in enumerate(kept) if name == side]
        extra[side + "_cpu"], extra[side + "_cpu_max"] = min(cpus[side]), max(cpus[side])
        extra[side + "_search"] = sum(sum(fastest[w]) for w in mine) / len(mine) / len(queries)
        extra[side + "_huge"] = min(huge_share(kept[w][1]._matrix[:count]) for w in mine)
    seconds = time.perf_counter() - start
else:
    assert len(SqliteVectorStore(SqliteStore(path), "bench")) == count
if what not in ("grow", "prealloc", "pair"):
    seconds = time.perf_counter() - start
peak = (status("VmHWM") - before) / (count * dim * 4)
print(json.dumps({"seconds": seconds, "peak": peak, **extra}))
"""


def _peak(what: str, count: int, dim: int, path: str = "") -> tuple[float, float]:
    """(seconds, peak RSS growth / raw bytes) of ``what`` in a fresh interpreter."""
    result = _fresh(what, count, dim, path)
    return float(result["seconds"]), float(result["peak"])


def _fresh(what: str, count: int, dim: int, path: str = "") -> dict[str, float]:
    """:data:`PEAK_SCRIPT`'s figures for ``what``, run in a fresh interpreter."""
    import json
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, what, str(count), str(dim), path],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    return {name: float(value) for name, value in json.loads(out).items()}


def bench_memory_growth(count: int, dim: int, repeats: int) -> None:
    """The in-memory half of the SQLite add: ``InMemoryVectorStore`` fed 10,000 at a time,
    growing its matrix as it goes, beside the same adds into a store with room for all of
    them from the start (no growth at all); then a search on each matrix (growing must not
    slow it).

    The peak resident memory is measured in fresh interpreters (fresh pages, as a new process
    sees them). The CPU and search ratios are measured in one interpreter where both ways take
    turns (fills alternating, searches query by query), three such interpreters, the median
    ratio: on this VM the first touch of fresh memory costs 10 to 450 ms per 150 MB by what
    the host has to back (free page reporting hands freed 2 MiB blocks back to it), process by
    process, which a ratio of fresh processes measures more than the store. Those fresh runs'
    CPU and search figures are printed too (with their huge-page share, faults and kernel CPU).
    """
    runs: dict[str, list[dict[str, float]]] = {"grow": [], "prealloc": []}
    pairs: list[dict[str, float]] = []
    for _ in range(max(3, repeats // 2)):  # interleaved: both see the same machine state
        for what, seen in runs.items():
            seen.append(_fresh(what, count, dim))
        pairs.append(_fresh("pair", count, dim))
    grow, pre = runs["grow"], runs["prealloc"]
    # Each fresh run's own figures: whether its matrix ended up on transparent huge pages
    # changes both the page faults of filling it and the TLB misses of searching it.
    for number, (g, p) in enumerate(zip(grow, pre, strict=True), start=1):
        print(
            f"   fresh run {number}: growing CPU {g['cpu'] * 1e3:.0f} ms (kernel "
            f"{g['system_cpu'] * 1e3:.0f}), {g['faults']:,.0f} faults, {g['huge']:.0%} on huge "
            f"pages, search {g['search'] * 1e3:.2f} ms | room for all CPU {p['cpu'] * 1e3:.0f} ms"
            f" (kernel {p['system_cpu'] * 1e3:.0f}), {p['faults']:,.0f} faults, "
            f"{p['huge']:.0%} on huge pages, search {p['search'] * 1e3:.2f} ms"
        )
    cpu_ratios, search_ratios = [], []
    for number, pair in enumerate(pairs, start=1):
        cpu_ratios.append(pair["grow_cpu"] / pair["prealloc_cpu"])
        search_ratios.append(pair["grow_search"] / pair["prealloc_search"])
        print(
            f"   taking turns {number}: CPU growing {pair['grow_cpu'] * 1e3:.0f} ms (slowest "
            f"{pair['grow_cpu_max'] * 1e3:.0f}), room for all {pair['prealloc_cpu'] * 1e3:.0f} "
            f"ms (slowest {pair['prealloc_cpu_max'] * 1e3:.0f}), ratio {cpu_ratios[-1]:.2f}; "
            f"search {pair['grow_search'] * 1e3:.2f} / {pair['prealloc_search'] * 1e3:.2f} ms "
            f"= {search_ratios[-1]:.2f}; on huge pages {pair['grow_huge']:.0%} / "
            f"{pair['prealloc_huge']:.0%}"
        )
    ms = {"grow": min(r["seconds"] for r in grow) / count * 1e6}
    ms["pre"] = min(r["seconds"] for r in pre) / count * 1e6
    cpu_grow = min(r["cpu"] for r in grow) / count * 1e6
    cpu_pre = min(r["cpu"] for r in pre) / count * 1e6
    peak, peak_pre = min(r["peak"] for r in grow), min(r["peak"] for r in pre)
    fresh_search = min(r["search"] for r in grow) / min(r["search"] for r in pre)
    ratio, search_ratio = statistics.median(cpu_ratios), statistics.median(search_ratios)
    print(
        f"   in-memory part, 10,000 per add, ms per 1,000, fresh runs: growing {ms['grow']:.2f} "
        f"(CPU {cpu_grow:.2f}), room for all from the start {ms['pre']:.2f} (CPU {cpu_pre:.2f}): "
        f"{cpu_grow / cpu_pre:.2f}, search {fresh_search:.2f}; taking turns, median: CPU ratio "
        f"{ratio:.2f}   goal <= 1.15  {_verdict(ratio <= 1.15)}"
    )
    print(
        f"   growing: peak RSS growth {peak:.2f}x raw (room for all: {peak_pre:.2f}x)   goal <= 1.3"
        f"  {_verdict(peak <= 1.3)}; "
        f"search on the grown matrix / on the preallocated one = {search_ratio:.2f}   "
        f"goal <= 1.1  {_verdict(search_ratio <= 1.1)}"
    )


def _recent_memory(raw: int) -> None:
    """Before a timed write of ``raw`` vector bytes: touch and free again as much memory as
    the write will take in (its matrix in memory, the file's and its log's pages in the page
    cache: about 2.5x ``raw``), so that it runs on memory used just now.

    The lab's machine is a virtual machine whose host takes back memory the guest has left
    free for a while (free page reporting): a first touch of such memory costs about 2.5 ms
    per MB, of memory freed just now a tenth of that. Without this, which rows got taken-back
    memory depended on their order: the session store's plain adds ran while the store of the
    row before still held its 154 MB matrix, and spent about 4 ms per 1,000 vectors more on
    faulting in their own (``InMemoryVectorStore._stage``) than the bulk() adds after them,
    which got the memory the plain adds' store had just let go. A machine that does not take
    memory back pays neither."""
    np.ones(int(2.5 * raw), dtype=np.uint8)  # every page written, then freed at once


def _file_bytes(path: Path) -> tuple[int, int]:
    """(database file, WAL file) sizes in bytes."""
    wal = Path(f"{path}-wal")
    return path.stat().st_size, wal.stat().st_size if wal.exists() else 0


def _minimal_table(
    path: Path, ids: list[str], vectors: np.ndarray, per_add: int, page_size: int = 0
) -> tuple[float, float]:
    """The floor for writes: one (id, BLOB) row per vector, the same pragmas (and
    ``page_size`` when given); (seconds, CPU seconds)."""
    import sqlite3

    conn = sqlite3.connect(path, isolation_level=None)
    if page_size:
        conn.execute(f"PRAGMA page_size = {page_size}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE v (id TEXT PRIMARY KEY, embedding BLOB NOT NULL)")
    _recent_memory(vectors.nbytes)
    started, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(ids), per_add):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO v VALUES (?, ?)",
            [(ids[i], vectors[i].tobytes()) for i in range(start, min(start + per_add, len(ids)))],
        )
        conn.execute("COMMIT")
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return seconds, cpu


def _minimal_reload(path: Path, dim: int) -> int:
    """The floor for reloads: every BLOB row of the minimal table into one matrix."""
    import sqlite3

    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT id, embedding FROM v ORDER BY rowid").fetchall()
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(-1, dim)
    conn.close()
    return int(matrix.shape[0])


def _add_all(
    store: SqliteVectorStore,
    docs: list[Document],
    vectors: np.ndarray,
    per_add: int,
    bulk: bool = False,
) -> tuple[float, float]:
    """Every vector into ``store``, ``per_add`` at a time (inside ``store.bulk()`` if
    ``bulk``, its end timed too): (seconds, CPU seconds)."""
    gc.collect()
    _recent_memory(vectors.nbytes)
    started, cpu = time.perf_counter(), time.process_time()
    with store.bulk() if bulk else contextlib.nullcontext():
        for start in range(0, len(docs), per_add):
            store.add(docs[start : start + per_add], vectors[start : start + per_add])
    return time.perf_counter() - started, time.process_time() - cpu


def bench_sqlite(count: int, dim: int, repeats: int, page_size: int | None = None) -> None:
    print(f"\n3. SQLite: write and reload {count:,} x {dim} vectors (10,000 per add)")
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((count, dim), dtype=np.float32)
    docs = [
        Document.trusted(f"doc-{i:07d}", f"chunk {i}", {"source_id": f"s{i // 10}"}, "text/plain")
        for i in range(count)
    ]
    per_add = 10_000
    raw = vectors.nbytes
    with tempfile.TemporaryDirectory() as tmp:
        # Ours: a file of its own for vectors (SqliteVectorStore(path): 64 KiB pages), and the
        # same vectors in a session store's file (SqliteVectorStore(SqliteStore(path)): SQLite's
        # 4 KiB pages), beside the floor.
        path = Path(tmp) / "vectors.db"
        shared_path = Path(tmp) / "sessions.db"
        floor_path = Path(tmp) / "minimal.db"
        # Interleaved repeats on fresh files: ours and the floor see the same machine state.
        ours_s, shared_s, floor_s, ours_cpu, shared_cpu, floor_cpu = [], [], [], [], [], []
        big_s, big_cpu = [], []  # the minimal table with the vector file's page size
        bulk_s, bulk_cpu = [], []  # the vector file, the adds inside SqliteVectorStore.bulk()
        shared_bulk_s, shared_bulk_cpu = [], []  # the session store's file, inside bulk()
        for attempt in range(max(1, repeats // 2)):
            for stale in (path, shared_path, floor_path):
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{stale}{suffix}").unlink(missing_ok=True)
            store = SqliteVectorStore(path, "bench", page_size=page_size)
            wall, cpu = _add_all(store, docs, vectors, per_add)
            ours_s.append(wall)
            ours_cpu.append(cpu)
            if attempt == 0:
                db, wal = _file_bytes(path)  # while the store is open, as a user sees it
                pages = store.store.connection.execute("PRAGMA page_size").fetchone()[0]
            store.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            store = SqliteVectorStore(path, "bench", page_size=page_size)
            wall, cpu = _add_all(store, docs, vectors, per_add, bulk=True)
            bulk_s.append(wall)
            bulk_cpu.append(cpu)
            if attempt == 0:
                bulk_db, bulk_wal = _file_bytes(path)
            store.close()
            shared = SqliteVectorStore(SqliteStore(shared_path), "bench")
            wall, cpu = _add_all(shared, docs, vectors, per_add)
            shared_s.append(wall)
            shared_cpu.append(cpu)
            if attempt == 0:
                shared_db, shared_wal = _file_bytes(shared_path)
            shared.store.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{shared_path}{suffix}").unlink(missing_ok=True)
            shared = SqliteVectorStore(SqliteStore(shared_path), "bench")
            wall, cpu = _add_all(shared, docs, vectors, per_add, bulk=True)
            shared_bulk_s.append(wall)
            shared_bulk_cpu.append(cpu)
            if attempt == 0:
                shared_bulk_db, shared_bulk_wal = _file_bytes(shared_path)
            shared.store.close()
            floor_wall, floor_cpu_s = _minimal_table(
                floor_path, [d.id for d in docs], vectors, per_add
            )
            floor_s.append(floor_wall)
            floor_cpu.append(floor_cpu_s)
            big_path = Path(f"{floor_path}.big")
            for suffix in ("", "-wal", "-shm"):
                Path(f"{big_path}{suffix}").unlink(missing_ok=True)
            big_wall, big_cpu_s = _minimal_table(
                big_path, [d.id for d in docs], vectors, per_add, pages
            )
            big_s.append(big_wall)
            big_cpu.append(big_cpu_s)
        ms_ours, ms_floor = min(ours_s) / count * 1e6, min(floor_s) / count * 1e6
        ms_shared = min(shared_s) / count * 1e6
        print(
            f"   add, ms per 1,000     ours   minimal (id, BLOB) table   ratio   goal   "
            f"(load average {os.getloadavg()[0]:.1f})"
        )
        ratio = ms_ours / ms_floor
        print(
            f"   {'vector file':<19}{ms_ours:>7.2f}  {ms_floor:>20.2f}  {ratio:>10.2f}   <= 1.5 "
            f"(10 ms at a 6.7 ms floor)  {_verdict(ratio <= 1.5)}; <= 10 ms per 1,000 "
            f"{_verdict(ms_ours <= 10.0)}   ({pages // 1024} KiB pages)"
        )
        cpu_ours, cpu_floor = min(ours_cpu) / count * 1e6, min(floor_cpu) / count * 1e6
        print(
            f"   {'  CPU ms per 1,000':<19}{cpu_ours:>7.2f}  {cpu_floor:>20.2f}  "
            f"{cpu_ours / cpu_floor:>10.2f}   (this process's CPU time: steadier on a busy "
            "machine)"
        )
        ms_bulk, cpu_bulk = min(bulk_s) / count * 1e6, min(bulk_cpu) / count * 1e6
        print(
            f"   {'  in bulk()':<19}{ms_bulk:>7.2f}  {ms_floor:>20.2f}  {ms_bulk / ms_floor:>10.2f}"
            f"   (the log truncated once, at the end; CPU {cpu_bulk:.2f}); <= 10 ms per 1,000 "
            f"{_verdict(ms_bulk <= 10.0)}; file then {(bulk_db + bulk_wal) / raw:.3f}x raw"
        )
        cpu_shared = min(shared_cpu) / count * 1e6
        print(
            f"   {'in a session store':<19}{ms_shared:>7.2f}  {ms_floor:>20.2f}  "
            f"{ms_shared / ms_floor:>10.2f}   (4 KiB pages; CPU {cpu_shared:.2f}); <= 10 ms "
            f"per 1,000 {_verdict(ms_shared <= 10.0)}"
        )
        ms_sbulk, cpu_sbulk = min(shared_bulk_s) / count * 1e6, min(shared_bulk_cpu) / count * 1e6
        print(
            f"   {'  in bulk()':<19}{ms_sbulk:>7.2f}  {ms_floor:>20.2f}  "
            f"{ms_sbulk / ms_floor:>10.2f}   (4 KiB pages, the log truncated once; CPU "
            f"{cpu_sbulk:.2f}); <= 10 ms per 1,000 {_verdict(ms_sbulk <= 10.0)}; file then "
            f"{(shared_bulk_db + shared_bulk_wal) / raw:.3f}x raw"
        )
        ms_big, cpu_big = min(big_s) / count * 1e6, min(big_cpu) / count * 1e6
        print(
            f"   {'':<19}{'':>7}  {ms_big:>20.2f}  {ms_ours / ms_big:>10.2f}   (the minimal "
            f"table with {pages // 1024} KiB pages too; CPU {cpu_big:.2f}, ours / it "
            f"{cpu_ours / cpu_big:.2f})"
        )
        floor_db, floor_wal = _file_bytes(floor_path)
        size = (db + wal) / raw
        print(
            f"   file after the bulk add, store open: {db / 1e6:.1f} MB + WAL {wal / 1e6:.1f} MB "
            f"for {raw / 1e6:.1f} MB raw = {size:.3f}x (in a session store: "
            f"{(shared_db + shared_wal) / raw:.3f}x; minimal table: "
            f"{(floor_db + floor_wal) / raw:.3f}x)   goal <= 1.12  {_verdict(size <= 1.12)}"
        )

        def reload() -> None:
            opened = SqliteVectorStore(path, "bench")
            assert len(opened) == count
            opened.close()

        reload_s, floor_reload = best_pair(
            reload, lambda: _minimal_reload(floor_path, dim), repeats
        )
        npy = Path(tmp) / "vectors.npy"
        np.save(npy, vectors)
        npy_s = best(lambda: np.load(npy), repeats)
        _, peak = _peak("reload", count, dim, str(path))
        ratio = reload_s / floor_reload
        print(
            f"   reload (open + load namespace): {reload_s:.3f} s; BLOB rows {floor_reload:.3f} s"
            f", .npy {npy_s:.3f} s; ours / BLOB rows = {ratio:.2f}   goal <= 1.0  "
            f"{_verdict(ratio <= 1.0)}"
        )
        print(f"   reload peak RSS growth: {peak:.2f}x raw   goal <= 1.3  {_verdict(peak <= 1.3)}")
    _, add_peak = _peak("add", count, dim)
    print(
        f"   InMemoryVectorStore.add of {count:,} at once, peak RSS growth: {add_peak:.2f}x raw"
        f"   goal <= 1.3  {_verdict(add_peak <= 1.3)}"
    )
    bench_memory_growth(count, dim, repeats)


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
    parser.add_argument(
        "--only", nargs="*", type=int, choices=(1, 2, 3, 4), help="run only these sections"
    )
    parser.add_argument(
        "--page-size", type=int, default=None, help="page size of the vector file made in 3"
    )
    parser.add_argument(
        "--growth", action="store_true", help="run only section 3's in-memory growth rows"
    )
    args = parser.parse_args()
    if args.growth:
        print(f"\n3. In-memory growth rows only: {args.vectors:,} x {args.dim} (10,000 per add)")
        bench_memory_growth(args.vectors, args.dim, 3 if args.quick else 7)
        return
    only = set(args.only or (1, 2, 3, 4))
    repeats = 3 if args.quick else 7
    blas = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    print(f"numpy {np.__version__}; BLAS settings from the environment: {blas or 'none'}")
    started = time.perf_counter()
    if 1 in only:
        # A row is a few ms: twice the runs, for a minimum of each side on a quiet moment.
        bench_splitter(args.mb, 2 * repeats)
    if 2 in only:
        bench_search(args.vectors, args.dim, repeats)
    if 3 in only:
        bench_sqlite(args.vectors, args.dim, repeats, args.page_size)
    if 4 in only:
        bench_embedding(repeats)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

"""The memory under InMemoryVectorStore's matrix: a grown matrix and one allocated whole get
the same treatment (a mapping of their own, advised for transparent huge pages, grown by
mremap), with the same rows and search results as the plain numpy matrix used elsewhere."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import agcore_lab.rag.vectorstores as vectorstores
from agcore_lab.rag import Document, InMemoryVectorStore, SqliteVectorStore
from agcore_lab.rag._matrix_memory import HUGE_PAGE, MAPPED, MAPPED_BYTES, MappedMatrix
from agcore_lab.rag.embeddings import normalize_rows
from agcore_lab.store.sqlite import SqliteStore

linux = pytest.mark.skipif(not MAPPED, reason="anonymous huge-page mappings are Linux's")
THP = Path("/sys/kernel/mm/transparent_hugepage").is_dir()
DIM = 256  # 1 KiB a row: 4,096 rows are the 4 MiB from which a matrix gets a mapping


def _docs(count: int, start: int = 0) -> list[Document]:
    return [Document.trusted(f"d{i}", f"chunk {i}", {}, "text/plain") for i in range(start, count)]


def _vectors(count: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, DIM), dtype=np.float32)


def _fill(store: InMemoryVectorStore, vectors: np.ndarray, step: int) -> InMemoryVectorStore:
    docs = _docs(len(vectors))
    for at in range(0, len(vectors), step):
        store.add(docs[at : at + step], vectors[at : at + step])
    return store


def _mapping_of(address: int) -> tuple[int, int, set[str]]:
    """(start, end, VmFlags) of this process's mapping that holds ``address``."""
    start = end = 0
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                start, end = (int(x, 16) for x in head[0].split("-"))
            elif head[0] == "VmFlags:" and start <= address < end:
                return start, end, set(head[1:])
    raise AssertionError(f"no mapping holds {address:#x}")


def _same_answers(one: InMemoryVectorStore, other: InMemoryVectorStore) -> None:
    np.testing.assert_array_equal(one.vectors(), other.vectors())
    queries = np.concatenate([one.vectors()[7:8], _vectors(6, seed=9)])
    for query in queries:
        for k in (1, 10, 300):
            assert one.search(query, k) == other.search(query, k)
    assert one.search_batch(queries, 5) == other.search_batch(queries, 5)


@linux
def test_a_grown_and_a_preallocated_matrix_get_the_same_memory() -> None:
    """Grown from 16 rows in adds of 1,500 (2.3 MiB: numpy first, then a mapping from 4 MiB
    on), or with room for all from the start: either way one mapping of its own holds the
    whole matrix, advised for huge pages, and the answers are the same."""
    vectors = _vectors(20_000)
    grown = _fill(InMemoryVectorStore(capacity=16), vectors, 1_500)
    whole = _fill(InMemoryVectorStore(capacity=20_000), vectors, 1_500)
    assert grown.capacity != whole.capacity  # it did grow (by a quarter at a time)
    for store in (grown, whole):
        matrix, memory = store._matrix, store._memory
        assert memory is not None and len(memory) % HUGE_PAGE == 0
        assert len(memory) >= matrix.nbytes >= MAPPED_BYTES
        start, end, flags = _mapping_of(matrix.ctypes.data)
        assert start <= matrix.ctypes.data and matrix.ctypes.data + matrix.nbytes <= end
        if THP:
            assert "hg" in flags  # MADV_HUGEPAGE: the kernel may back it with huge pages
    _same_answers(grown, whole)


def test_the_plain_numpy_matrix_gives_the_same_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where mappings are not available (not Linux) the matrix is a numpy array, grown in place
    as before: the same rows, the same hits."""
    vectors = _vectors(12_000)
    monkeypatch.setattr(vectorstores, "MAPPED", False)
    plain = _fill(InMemoryVectorStore(capacity=16), vectors, 1_000)
    assert plain._memory is None and plain._matrix.flags.owndata
    monkeypatch.undo()
    mapped = _fill(InMemoryVectorStore(capacity=16), vectors, 1_000)
    assert (mapped._memory is not None) is MAPPED
    assert plain.capacity == mapped.capacity  # the same growth steps: capacity means the same
    _same_answers(plain, mapped)


@linux
def test_growing_moves_the_mapping_instead_of_copying_it() -> None:
    vectors = _vectors(30_000)
    store = InMemoryVectorStore(capacity=16)
    docs = _docs(30_000)
    store.add(docs[:5_000], vectors[:5_000])  # 5 MiB: a mapping from the start
    memory = store._memory
    assert memory is not None
    capacities = {store.capacity}
    for at in range(5_000, 30_000, 2_500):
        store.add(docs[at : at + 2_500], vectors[at : at + 2_500])
        capacities.add(store.capacity)
        assert store._memory is memory  # the same mapping, resized (mremap), never a new one
    assert len(capacities) > 4 and len(memory) >= store.capacity * DIM * 4
    np.testing.assert_array_equal(store.vectors(), normalize_rows(vectors.copy()))


PEAK = """
import json, sys
import numpy as np
from agcore_lab.rag import Document, InMemoryVectorStore

def hwm():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM"))

rows, dim, step = 65_536, 256, 4_096
vectors = np.random.default_rng(1).standard_normal((rows, dim), dtype=np.float32)
docs = [Document.trusted(f"d{i}", "", {}, "text/plain") for i in range(rows)]
before = hwm()
store = InMemoryVectorStore(capacity=16)
for at in range(0, rows, step):
    store.add(docs[at : at + step], vectors[at : at + step])
print(json.dumps({"peak": (hwm() - before) / vectors.nbytes, "mapped": store._memory is not None}))
"""


@linux
def test_a_matrix_grown_in_16_adds_peaks_at_its_own_size(tmp_path: Path) -> None:
    """64 MiB added 4 MiB at a time, in a fresh process: the peak resident memory grows by
    about the matrix (a copy at any step would have added the stored rows again)."""
    root = Path(vectorstores.__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PEAK)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    ).stdout
    result = json.loads(out)
    assert result["mapped"] and result["peak"] < 1.15, result


@linux
def test_a_view_still_held_stays_valid_and_the_rows_are_copied_instead() -> None:
    """A mapping cannot move while a view of it exists: the store then copies its rows into a
    new mapping, and the old view keeps reading the rows it had."""
    vectors = _vectors(20_000)
    store = InMemoryVectorStore(capacity=16)
    docs = _docs(20_000)
    store.add(docs[:6_000], vectors[:6_000])
    first = store._memory
    held = store._matrix[:10]  # as a subclass might keep one
    seen = held.copy()
    for at in range(6_000, 20_000, 2_000):
        store.add(docs[at : at + 2_000], vectors[at : at + 2_000])
    np.testing.assert_array_equal(held, seen)
    assert store._memory is not None and store._memory is not first
    _same_answers(store, _fill(InMemoryVectorStore(), vectors, 20_000))


def test_a_mapping_the_kernel_refuses_falls_back_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: MappedMatrix, rows: int, dim: int) -> None:
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(MappedMatrix, "__init__", refuse)
    vectors = _vectors(9_000)
    store = _fill(InMemoryVectorStore(capacity=16), vectors, 3_000)
    assert store._memory is None and len(store) == 9_000
    monkeypatch.undo()
    _same_answers(store, _fill(InMemoryVectorStore(), vectors, 9_000))


@linux
def test_a_failed_move_leaves_the_store_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    vectors = _vectors(12_000)
    store = _fill(InMemoryVectorStore(capacity=16), vectors[:6_000], 6_000)
    before = store.vectors()

    def fail(self: MappedMatrix, rows: int, dim: int) -> bool:
        raise MemoryError("no room")

    monkeypatch.setattr(MappedMatrix, "grow", fail)
    more = _docs(12_000, start=6_000)
    with pytest.raises(MemoryError):
        store.add(more, vectors[6_000:])
    assert len(store) == 6_000 and store.capacity == 6_000
    np.testing.assert_array_equal(store.vectors(), before)
    assert store.search(before[3], 1)[0].document.id == "d3"
    monkeypatch.undo()
    store.add(more, vectors[6_000:])
    _same_answers(store, _fill(InMemoryVectorStore(), vectors, 12_000))


def test_a_loaded_big_matrix_moves_into_a_mapping_once_when_it_grows(tmp_path: Path) -> None:
    vectors = _vectors(10_000)
    docs = _docs(10_000)
    db = SqliteStore(tmp_path / "v.db")
    SqliteVectorStore(db, "n").add(docs[:6_000], vectors[:6_000])
    reopened = SqliteVectorStore(db, "n", capacity=2)
    assert reopened._memory is None and reopened.capacity == 6_002  # the loader's matrix
    for at in range(6_000, 10_000, 1_000):
        reopened.add(docs[at : at + 1_000], vectors[at : at + 1_000])
    assert (reopened._memory is not None) is MAPPED
    reference = _fill(InMemoryVectorStore(), vectors, 10_000)
    _same_answers(reopened, reference)
    _same_answers(SqliteVectorStore(SqliteStore(tmp_path / "v.db"), "n"), reference)

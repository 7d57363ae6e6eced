"""SqliteVectorStore(path): a file made for vectors, with 64 KiB pages, on real files and with
real processes sharing them."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agcore_lab.errors import ConflictError, InvalidInputError, StorageError
from agcore_lab.rag import Document, InMemoryVectorStore, SqliteVectorStore
from agcore_lab.store.base import SessionRecord
from agcore_lab.store.sqlite import SqliteStore

pytestmark = pytest.mark.timeout(120)

# Another process: opens the file both ways, searches, then tries to add an id stored already.
READER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from agcore_lab.errors import ConflictError
    from agcore_lab.rag import Document, SqliteVectorStore
    from agcore_lab.store.sqlite import SqliteStore

    path, query = sys.argv[1], np.array(json.loads(sys.argv[2]), dtype=np.float32)
    own = SqliteVectorStore(path, "docs")
    shared = SqliteVectorStore(SqliteStore(path), "docs")
    try:
        own.add([Document(id="d5", content="again")], query[None, :])
        duplicate = "added"
    except ConflictError:
        duplicate = "conflict"
    print(json.dumps({
        "page_size": own.store.connection.execute("PRAGMA page_size").fetchone()[0],
        "len": [len(own), len(shared)],
        "equal": bool(np.array_equal(own.vectors(), shared.vectors())),
        "hits": [[h.document.id, h.score] for h in own.search(query, k=5)],
        "duplicate": duplicate,
    }))
    """
)


def _docs(count: int, prefix: str = "d") -> list[Document]:
    return [
        Document(id=f"{prefix}{i}", content=f"text {i}", metadata={"source_id": f"s{i // 10}"})
        for i in range(count)
    ]


def _page_size(store: SqliteVectorStore) -> int:
    return int(store.store.connection.execute("PRAGMA page_size").fetchone()[0])


def test_a_vector_file_has_big_pages_and_other_processes_share_it(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    vectors = np.random.default_rng(1).standard_normal((3000, 384), dtype=np.float32)
    store = SqliteVectorStore(path, "docs")
    store.add(_docs(3000), vectors)  # 4.6 MB: a bulk add
    assert _page_size(store) == 65536
    wal = Path(f"{path}-wal")
    assert not wal.exists() or wal.stat().st_size < 1_000_000  # folded in and truncated
    assert path.stat().st_size <= 1.12 * vectors.nbytes + 3_000_000  # + 64 KiB per table
    reference = InMemoryVectorStore()
    reference.add(_docs(3000), vectors)
    query = vectors[7] + 0.5 * vectors[8]
    # Another process, while this store is open, sees every vector and gets the same hits;
    # its add of an id stored already is a conflict that leaves the file as it was.
    out = subprocess.run(
        [sys.executable, "-c", READER, str(path), json.dumps(query.tolist())],
        capture_output=True,
        text=True,
        check=True,
        timeout=100,
    ).stdout
    seen = json.loads(out)
    assert seen["page_size"] == 65536 and seen["len"] == [3000, 3000] and seen["equal"]
    expected = [(h.document.id, h.score) for h in reference.search(query, k=5)]
    assert [tuple(hit) for hit in seen["hits"]] == [(i, pytest.approx(s)) for i, s in expected]
    assert seen["duplicate"] == "conflict"
    assert store.file_rows() == 3000
    store.close()


@pytest.mark.parametrize("page_size", [None, 16384, 4096])
def test_the_same_vectors_and_results_whatever_the_page_size(
    tmp_path: Path, page_size: int | None
) -> None:
    rng = np.random.default_rng(2)
    vectors = rng.standard_normal((500, 96), dtype=np.float32)
    queries = rng.standard_normal((5, 96), dtype=np.float32)
    old = SqliteVectorStore(SqliteStore(tmp_path / "sessions.db"), "v")  # SQLite's 4 KiB
    new = SqliteVectorStore(tmp_path / "vectors.db", "v", page_size=page_size)
    assert _page_size(new) == (page_size or 65536)
    for store in (old, new):
        store.add(_docs(500), vectors)
        store.remove(["d3", "d250"])  # single vectors out of the middle of a block
        store.add(_docs(1, "new"), vectors[:1], replace=["d9"])
    reopened = SqliteVectorStore(tmp_path / "vectors.db", "v")
    for store in (new, reopened):
        assert store.ids() == old.ids() and len(store) == 498
        assert np.array_equal(store.vectors(), old.vectors())
        for query in queries:
            got = [(h.document.id, h.score) for h in store.search(query, k=10)]
            assert got == [(h.document.id, h.score) for h in old.search(query, k=10)]
        assert store.get(["d17"])[0].metadata == {"source_id": "s1"}


def test_an_existing_file_keeps_its_page_size_and_its_sessions(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    sessions = SqliteStore(path)
    sessions.create_session(SessionRecord(session_id="ses_lab", agent_name="a"))
    vectors = np.random.default_rng(3).standard_normal((20, 16), dtype=np.float32)
    opened = SqliteVectorStore(path, "docs", page_size=65536)  # the file exists: kept as it is
    assert _page_size(opened) == 4096
    opened.add(_docs(20), vectors)
    opened.close()
    with pytest.raises(sqlite3.ProgrammingError):  # closed: it had opened the file itself
        opened.store.connection.execute("select 1")
    again = SqliteVectorStore(sessions, "docs")
    assert len(again) == 20 and sessions.get_session("ses_lab") is not None
    again.close()  # a store passed in is its owner's to close
    assert [s.session_id for s in sessions.list_sessions()] == ["ses_lab"]


@pytest.mark.parametrize("page_size", [1000, 256, 131072, 0, True, "65536", 65536.0])
def test_a_bad_page_size_is_refused_and_makes_no_file(tmp_path: Path, page_size: object) -> None:
    path = tmp_path / "deep" / "vectors.db"
    with pytest.raises(InvalidInputError, match="page_size must be a power of two"):
        SqliteVectorStore(path, "v", page_size=page_size)  # type: ignore[arg-type]
    assert not path.parent.exists()


def test_page_size_with_an_open_store_or_a_store_of_no_kind_is_refused(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "lab.db")
    with pytest.raises(InvalidInputError, match="open already"):
        SqliteVectorStore(store, "v", page_size=65536)
    with pytest.raises(InvalidInputError, match="SqliteStore or a file path, not int"):
        SqliteVectorStore(42, "v")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="NUL"):
        SqliteVectorStore("bad\x00name.db", "v")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab.db", "lab.db-shm", "lab.db-wal"]


def test_small_adds_keep_the_log_of_a_vector_file_small(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    store = SqliteVectorStore(path, "v")
    rng = np.random.default_rng(4)
    for add in range(80):  # 150 KB each, 12 MB in all: none of them a bulk add
        store.add(_docs(100, f"a{add}-"), rng.standard_normal((100, 384), dtype=np.float32))
    # Folded into the file every 4 MB, as a 4 KiB-page file is by SQLite's default (1,000
    # pages of 64 KiB would let it grow to 64 MB).
    assert Path(f"{path}-wal").stat().st_size < 6_000_000
    assert len(SqliteVectorStore(path, "v")) == 8000


def test_a_failed_add_to_a_vector_file_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    store = SqliteVectorStore(path, "v")
    rng = np.random.default_rng(5)
    store.add(_docs(10), rng.standard_normal((10, 384), dtype=np.float32))
    other = SqliteVectorStore(path, "v")
    other.add(_docs(1, "late"), rng.standard_normal((1, 384), dtype=np.float32))
    before = store.store.read_dataframe("select * from vectors order by seq")
    big = _docs(4000, "b") + _docs(1, "late")  # the last id is taken, in the file only
    with pytest.raises(ConflictError, match="late0"):
        store.add(big, rng.standard_normal((4001, 384), dtype=np.float32))
    after = store.store.read_dataframe("select * from vectors order by seq")
    assert after.equals(before) and len(store) == 10
    assert len(SqliteVectorStore(path, "v")) == 11


def test_a_vector_file_that_cannot_be_made_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(StorageError, match="cannot create the vector file"):
        SqliteVectorStore(blocker / "vectors.db", "v")
    assert blocker.read_text() == "not a directory"


@pytest.fixture
def vector_workers(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    import _vector_workers

    return _vector_workers


def test_two_writer_processes_share_a_vector_file(tmp_path: Path, vector_workers: Any) -> None:
    path = tmp_path / "shared.db"
    SqliteVectorStore(path, "shared").close()  # made with 64 KiB pages before they start
    results = vector_workers.two_writers(path, 30, own_file=True, dim=48)
    assert sorted(r["duplicate"] for r in results) == ["added", "conflict"]
    store = SqliteVectorStore(path, "shared")
    assert _page_size(store) == 65536 and len(store) == store.file_rows() == 61
    assert len(store.ids(filter={"by": "left"})) == len(store.ids(filter={"by": "right"})) == 30


# A process that adds 40,000 vectors (61 MB) in one add; the test kills it part of the way in.
BULK = textwrap.dedent(
    """
    import sys
    import numpy as np
    from agcore_lab.rag import Document, SqliteVectorStore

    store = SqliteVectorStore(sys.argv[1], "bulk")
    vectors = np.random.default_rng(0).standard_normal((40_000, 384), dtype=np.float32)
    print("ready", flush=True)
    store.add([Document.trusted(f"b{i}", "", {}, "text/plain") for i in range(40_000)], vectors)
    print("done", flush=True)
    """
)


def test_an_add_killed_part_of_the_way_leaves_the_vector_file_as_it_was(tmp_path: Path) -> None:
    import signal
    import time

    path = tmp_path / "vectors.db"
    first = SqliteVectorStore(path, "bulk")
    kept = np.random.default_rng(1).standard_normal((50, 384), dtype=np.float32)
    first.add(_docs(50), kept)
    first.close()
    writer = subprocess.Popen(
        [sys.executable, "-c", BULK, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    wal = Path(f"{path}-wal")
    deadline = time.monotonic() + 60
    while not (wal.exists() and wal.stat().st_size > 8_000_000):  # mid-way through the add
        assert writer.poll() is None and time.monotonic() < deadline
        time.sleep(0.002)
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    reopened = SqliteVectorStore(path, "bulk")
    assert reopened.ids() == [f"d{i}" for i in range(50)] and reopened.file_rows() == 50
    unit = kept / np.linalg.norm(kept, axis=1, keepdims=True)
    assert np.allclose(reopened.vectors(), unit, atol=1e-6)
    assert reopened.store.connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


COUNT = (
    "import sys; from agcore_lab.rag import SqliteVectorStore; "
    "print(len(SqliteVectorStore(sys.argv[1], 'v')))"
)


def _count_elsewhere(path: Path) -> int:
    """How many vectors of namespace ``v`` another real process reads in ``path``."""
    out = subprocess.run(
        [sys.executable, "-c", COUNT, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return int(out)


def _wal_bytes(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_bulk_truncates_the_log_once_when_the_block_ends(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    store = SqliteVectorStore(path, "v")
    rng = np.random.default_rng(6)
    batch = 3000  # 4.6 MB a batch: each alone would truncate the log after it
    seen, logs = [], []
    with store.bulk() as same:
        assert same is store
        for k in range(4):
            store.add(_docs(batch, f"b{k}-"), rng.standard_normal((batch, 384), dtype=np.float32))
            logs.append(_wal_bytes(path))
            if k == 1:  # another process sees every committed batch while the block is open
                seen.append(_count_elsewhere(path))
        with pytest.raises(ConflictError):  # a failed add in the block writes nothing
            store.add(_docs(1, "b0-"), rng.standard_normal((1, 384), dtype=np.float32))
    assert seen == [2 * batch]
    # Not truncated inside the block, but written over from its start after each checkpoint:
    # it does not grow with the batches.
    assert all(4_000_000 < size <= logs[0] < 2 * batch * 384 * 4 for size in logs), logs
    assert _wal_bytes(path) < 1_000_000  # truncated when the block ended
    assert store.file_rows() == 4 * batch == len(SqliteVectorStore(path, "v"))


def test_bulk_blocks_nest_and_truncate_even_when_they_raise(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    store = SqliteVectorStore(path, "v")
    rng = np.random.default_rng(7)
    with pytest.raises(RuntimeError, match="stop"):
        with store.bulk():
            with store.bulk():
                store.add(_docs(3000), rng.standard_normal((3000, 384), dtype=np.float32))
            assert _wal_bytes(path) > 4_000_000  # the inner block's end is not the end
            raise RuntimeError("stop")
    assert _wal_bytes(path) < 1_000_000
    assert len(SqliteVectorStore(path, "v")) == 3000  # the add had committed
    store.add(_docs(3000, "after"), rng.standard_normal((3000, 384), dtype=np.float32))
    assert _wal_bytes(path) < 1_000_000  # outside a block, each bulk write truncates again


def test_bulk_in_a_session_stores_file_truncates_once_and_keeps_its_sessions(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lab.db"
    sessions = SqliteStore(path)
    store = SqliteVectorStore(sessions, "v")  # the session store's own 4 KiB pages
    assert _page_size(store) == 4096
    rng = np.random.default_rng(8)
    batch = 3000  # 4.6 MB a batch: each alone would truncate the log after it
    seen, logs = [], []
    with store.bulk():
        for k in range(3):
            store.add(_docs(batch, f"b{k}-"), rng.standard_normal((batch, 384), dtype=np.float32))
            logs.append(_wal_bytes(path))
            if k == 1:  # the session store still writes in the block, seen by others
                sessions.create_session(SessionRecord(session_id="ses_bulk", agent_name="a"))
                seen.append(_count_elsewhere(path))
    assert seen == [2 * batch]
    assert all(size > 4_000_000 for size in logs), logs  # not truncated inside the block
    assert _wal_bytes(path) < 1_000_000  # truncated when the block ended
    assert store.file_rows() == 3 * batch == len(SqliteVectorStore(sessions, "v"))
    assert [s.session_id for s in SqliteStore(path).list_sessions()] == ["ses_bulk"]
    assert sessions.connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

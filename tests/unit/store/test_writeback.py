"""Early writeback: during the block the file's dirty pages start for the disk with no sync,
and afterwards nothing of it is left running or open."""

from __future__ import annotations

import ctypes
import fcntl
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from agcore_lab.rag import Document, SqliteVectorStore, sqlite_vectors
from agcore_lab.store import _writeback
from agcore_lab.store._writeback import early_writeback

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range")


class _CacheStat(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint64)
        for name in ("cache", "dirty", "writeback", "evicted", "recently_evicted")
    ]


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


def _dirty_pages(fd: int) -> int | None:
    """The file's dirty pages in the page cache (``cachestat``, Linux 6.5+: the same number on
    every architecture), or ``None``."""
    libc = ctypes.CDLL(None, use_errno=True)
    stat = _CacheStat()
    if libc.syscall(451, fd, ctypes.byref(_Range(0, 0)), ctypes.byref(stat), 0) != 0:
        return None  # an older kernel, or another architecture's number
    return int(stat.dirty)


def _writeback_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "agcore-writeback"]


@linux
def test_dirty_pages_start_for_the_disk_inside_the_block_without_a_sync(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, os.urandom(4 << 20))  # no sync: Linux would leave it dirty for 30 s
        dirty = _dirty_pages(fd)
        if dirty is None or dirty < 512:
            pytest.skip("no cachestat, or a file system without dirty pages (tmpfs)")
        with early_writeback(str(path)):
            deadline = time.monotonic() + 10
            while (left := _dirty_pages(fd)) and time.monotonic() < deadline:
                time.sleep(0.005)
        assert left == 0
    finally:
        os.close(fd)


# Another process: can it lock the file? (Not while this one holds a POSIX lock on it.)
LOCKS = (
    "import fcntl, sys; f = open(sys.argv[1], 'r+b')\n"
    "try:\n    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')\n"
    "except OSError:\n    print('held')"
)


@linux
def test_the_thread_stops_and_leaves_the_process_locks_and_files_alone(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    path.write_bytes(b"x" * 8192)
    Path(f"{path}-wal").write_bytes(b"y" * 8192)
    with open(path, "r+b") as held, open(f"{path}-wal", "rb"):  # as SQLite holds them
        fcntl.lockf(held, fcntl.LOCK_SH)
        before = sorted(os.listdir("/proc/self/fd"))
        with pytest.raises(RuntimeError, match="stop"):
            with early_writeback(str(path), period=0.001):
                time.sleep(0.05)  # the thread has found both files and flushed them by now
                assert len(_writeback_threads()) == 1
                raise RuntimeError("stop")
        assert _writeback_threads() == []
        assert sorted(os.listdir("/proc/self/fd")) == before
        # A descriptor of its own, closed, would have dropped this process's lock on the file.
        other = [sys.executable, "-c", LOCKS, str(path)]
        assert subprocess.run(other, capture_output=True, text=True).stdout.strip() == "held"


def test_without_sync_file_range_the_block_just_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_writeback, "_resolved", None)  # as on a platform without it
    ran = []
    with early_writeback(str(tmp_path / "data.db")):
        ran.append(_writeback_threads())
    assert ran == [[]]


@linux
def test_a_big_vector_write_has_early_writeback_and_a_small_one_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    real = sqlite_vectors.early_writeback

    def spying(path: str) -> object:
        seen.append(len(_writeback_threads()))
        return real(path)

    monkeypatch.setattr(sqlite_vectors, "early_writeback", spying)
    store = SqliteVectorStore(tmp_path / "v.db", "v")
    rng = np.random.default_rng(3)
    small = [Document(id=f"s{i}", content="s") for i in range(10)]
    store.add(small, rng.standard_normal((10, 384), dtype=np.float32))
    assert seen == []
    count = sqlite_vectors.WRITEBACK_BYTES // (4 * 384) + 1
    big = [Document(id=f"b{i}", content="b") for i in range(count)]
    store.add(big, rng.standard_normal((count, 384), dtype=np.float32))
    assert seen == [0] and _writeback_threads() == []
    assert store.remove([d.id for d in big]) == count  # a big removal too
    assert seen == [0, 0] and len(store) == 10
    store.close()

"""Early writeback: the pages of a big write start for the disk while SQLite still works.

In WAL mode (``synchronous = NORMAL``) a commit writes its pages into the write-ahead log
without syncing; the checkpoint that follows a big commit syncs the log, copies its pages into
the database file and syncs the file. Each of those two syncs waits until every page written
since the last one is on the disk (15 MB each for 10,000 vectors of dimension 384: 10-17 ms on
the lab's machine), as Linux itself starts writing dirty pages out only after 30 s or past a
tenth of memory. That waiting was a third of a big add into a session store's file.

While a big write runs, :func:`early_writeback` keeps a thread that every :data:`PERIOD`
seconds (5 ms) asks the kernel to start writing out the dirty pages of the file and of its log
(``sync_file_range(SYNC_FILE_RANGE_WRITE)``): it only queues them for the disk, waits for
nothing and flushes no device cache. SQLite's own syncs then find most pages written, and
wait for the rest and the device's flush. Nothing about durability changes: SQLite syncs where
and when it did, and an early write of a page is never wrong (the page is written again if it
changes after). The thread holds no lock of the store and spends its time in the kernel, so
it costs the writer little CPU even when no core is free.

The thread uses the descriptors SQLite has open on the two files (found in ``/proc/self/fd``)
and opens none of its own: closing one would drop the process's POSIX locks on the file,
SQLite's included. Linux only: elsewhere, or where the C library lacks ``sync_file_range``,
the block runs as it is. Best effort: a file not open (yet), or a call that fails, is skipped.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["PERIOD", "early_writeback"]

PERIOD = 0.005
"""Seconds between two requests to start the writeback. A 10,000-vector add dirties about
0.5 MB of pages per ms. Every 2 ms measured no faster, and in adds outside ``bulk()`` (whose
log grows anew after each truncation) cost about 2 ms more CPU per 1,000 vectors in one run
of two; 5 ms is also Python's switch interval, so the thread seldom takes the interpreter
lock from a writer that holds it."""

_WRITE = 2  # SYNC_FILE_RANGE_WRITE: start writing out dirty pages not yet being written
_UNRESOLVED: object = object()
_resolved: object = _UNRESOLVED


def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """The C library's ``sync_file_range``, or ``None`` (not Linux, or not in the library);
    looked up once, on first use (``ctypes`` is not imported with the package)."""
    global _resolved
    if _resolved is _UNRESOLVED:
        found = None
        if sys.platform.startswith("linux"):
            import ctypes

            try:
                function = ctypes.CDLL(None, use_errno=True).sync_file_range
            except (AttributeError, OSError):
                pass
            else:
                function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
                function.restype = ctypes.c_int
                found = function
        _resolved = found
    return _resolved  # type: ignore[return-value]


@contextmanager
def early_writeback(path: str, *, period: float = PERIOD) -> Iterator[None]:
    """While the block runs, start the writeback of ``path``'s and its ``-wal`` file's dirty
    pages every ``period`` seconds, through the descriptors this process has open on them
    (see the module docstring). The thread has stopped when the block ends, however it ends.
    ``":memory:"`` or no ``sync_file_range``: nothing."""
    flush = _sync_file_range()
    if flush is None or path == ":memory:":
        yield
        return
    stop = threading.Event()
    thread = threading.Thread(
        target=_start_writeback,
        args=(flush, (path, f"{path}-wal"), stop, period),
        name="agcore-writeback",
        daemon=True,
    )
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _start_writeback(
    flush: Callable[[int, int, int, int], int],
    paths: tuple[str, ...],
    stop: threading.Event,
    period: float,
) -> None:
    descriptors: list[int] = []
    polls = 0
    while not stop.wait(period):
        # A file not open yet (a log SQLite has not made) is looked for again, now and then.
        if len(descriptors) < len(paths) and polls % 8 == 0:
            descriptors = _open_descriptors(paths)
        polls += 1
        for fd in descriptors:
            flush(fd, 0, 0, _WRITE)


def _open_descriptors(paths: tuple[str, ...]) -> list[int]:
    """Descriptors this process has open on ``paths`` already (SQLite's own), one a file.

    They are used, never opened nor closed here: closing any descriptor of a file drops every
    POSIX lock the process holds on it, so a descriptor of our own on the database file would
    take SQLite's locks with it when closed. Should SQLite close one meanwhile and the number
    go to another file, that file's writeback is started early: no harm done.
    """
    wanted = set()
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            continue
        wanted.add((info.st_dev, info.st_ino))
    found: dict[tuple[int, int], int] = {}
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return []
    for name in names:
        try:
            info = os.fstat(int(name))
        except (OSError, ValueError):
            continue
        found.setdefault((info.st_dev, info.st_ino), int(name))
    return [found[key] for key in wanted if key in found]

"""Seeing changes made elsewhere: a thread that polls the store's change counter.

SQLite bumps ``PRAGMA data_version`` whenever *another* connection commits, and reading it
touches no page of the file, so polling it a few times a second costs next to nothing. Only
when it moved does the watcher read the store's change feed after the last position it saw,
and hand each change written by another store object (another process, kernel or thread with
its own store) to the manager. A backend with native notifications (PostgreSQL's
``LISTEN/NOTIFY``) implements the same two methods, ``watch_token`` and ``changes_since``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from agcore_lab.store.base import ChangeRecord, Store

__all__ = ["ChangeWatcher"]

logger = logging.getLogger("agcore_lab")


class ChangeWatcher:
    """Calls ``on_change(change)`` for every change another store object made.

    Args:
        store: The store to watch.
        on_change: Called on the watcher's thread, in feed order.
        interval: Seconds between two looks at the change counter.
        on_gap: Called first when the store's feed (which keeps only its newest entries) no
            longer holds some changes this watcher had not seen yet.
    """

    def __init__(
        self,
        store: Store,
        on_change: Callable[[ChangeRecord], None],
        *,
        interval: float = 0.25,
        on_gap: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self._on_change = on_change
        self._on_gap = on_gap
        self.interval = interval
        self._token = store.watch_token()
        self._seq = store.latest_change()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """Whether the watcher thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the daemon thread (a no-op if it runs)."""
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="agcore-lab-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (it finishes its current look first)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def poll(self) -> int:
        """Look once; hand on the new changes of others; return how many were handed on."""
        token = self._store.watch_token()
        if token == self._token:
            return 0
        self._token = token
        handed = 0
        while True:
            changes = self._store.changes_since(self._seq)
            if changes and changes[0].seq > self._seq + 1 and self._on_gap is not None:
                self._on_gap()  # the feed dropped changes this watcher never saw
            for change in changes:
                self._seq = change.seq
                if change.origin != self._store.origin:
                    handed += 1
                    self._on_change(change)
            if len(changes) < 1000:
                return handed

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except Exception:  # a closed or failing store: keep trying, never crash the kernel
                logger.debug("change watcher: a look at the store failed", exc_info=True)

"""The manager's events: listeners, the one place events are sent, and the change watcher.

A :class:`~agcore_lab.engine.manager.SessionManager` tells its listeners about every change
(``ManagerEvent``) — its own, and, through a :class:`~agcore_lab.engine.watch.ChangeWatcher`
that runs while anyone listens, those other processes make on the same store. Get it as
``manager.events``; the manager's ``add_listener``, ``watch`` and ``emit`` call it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, get_args

from agcore_lab.engine.oplog import log_event, logs_event
from agcore_lab.engine.records import EventKind, ManagerEvent
from agcore_lab.engine.watch import ChangeWatcher
from agcore_lab.store.base import ChangeRecord, Store

__all__ = ["EventHub"]

logger = logging.getLogger("agcore_lab")

_KINDS = frozenset(get_args(EventKind))


class EventHub:
    """Listeners of one manager, and the watcher that brings other processes' changes.

    Args:
        store: The store to watch.
        on_change: Called on the watcher's thread with each change another store object made.
        on_gap: Called when the store's feed dropped changes the watcher had not seen.
        interval: Seconds between two looks at the store; ``None`` turns watching off.
    """

    def __init__(
        self,
        store: Store,
        *,
        on_change: Callable[[ChangeRecord], None],
        on_gap: Callable[[], None],
        interval: float | None,
    ) -> None:
        self._store = store
        self._on_change, self._on_gap = on_change, on_gap
        self._interval = interval
        self._listeners: list[Callable[[ManagerEvent], None]] = []
        self._watcher: ChangeWatcher | None = None

    def add_listener(self, callback: Callable[[ManagerEvent], None]) -> Callable[[], None]:
        """Call ``callback(event)`` on every change (starting the watcher); returns a
        function that unsubscribes (the last one to go stops the watcher)."""
        self._listeners.append(callback)
        self.watch()
        return lambda: self._unsubscribe(callback)

    def _unsubscribe(self, callback: Callable[[ManagerEvent], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)
        if not self._listeners and self._watcher is not None:
            self._watcher.stop()

    def watch(self, interval: float | None = None) -> ChangeWatcher | None:
        """Start the watcher (a no-op when watching is off or already on); return it."""
        interval = interval if interval is not None else self._interval
        if interval is None:
            return None
        if self._watcher is None:
            self._watcher = ChangeWatcher(
                self._store, self._on_change, interval=interval, on_gap=self._on_gap
            )
        self._watcher.interval = interval
        self._watcher.start()
        return self._watcher

    def emit(self, kind: EventKind, session_id: str, **fields: Any) -> None:
        """Tell the listeners (a listener that raises is logged and skipped)."""
        if not self._listeners and kind in _KINDS and not logs_event(kind):
            return  # nobody listens and nothing is logged: no event object (one per write)
        event = ManagerEvent(kind=kind, session_id=session_id, **fields)
        log_event(event)  # structured logging of the key operations (engine/oplog.py)
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                logger.exception("manager listener %r failed on %s", listener, kind)

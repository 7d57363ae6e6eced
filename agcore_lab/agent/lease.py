"""Leases that stop a second writer before it acts, and keep themselves alive while work runs.

A turn takes the session's *turn lease* in the store before it calls the model (one short
write: holder, deadline). While the turn runs, a small task on the turn's own event loop renews
it every third of its lifetime; a holder that crashes stops renewing, and its lease runs out by
itself. The process that runs an approved tool holds an *executor lease* on the call the same
way, so a call whose executor died is recognisably *in doubt*.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator

from agcore_lab.errors import SessionBusyError
from agcore_lab.store.aio import AsyncStore

__all__ = ["TurnLease", "keep_alive", "new_holder", "turn_lease"]

logger = logging.getLogger("agcore_lab")


_HOST = socket.gethostname()
_TOKENS = itertools.count(int.from_bytes(os.urandom(4), "big"))


def new_holder() -> str:
    """A lease holder's name: ``host:pid:token`` (unique per lease)."""
    # The host is read once; the token counts on from a random start (no system call per
    # turn): unique within the process, and the pid tells processes apart.
    return f"{_HOST}:{os.getpid()}:{next(_TOKENS) & 0xFFFFFFFF:08x}"


class _Keeper:
    """One daemon thread that renews every lease of this process when it falls due.

    A thread rather than a task on the turn's loop: a synchronous tool (or model client) that
    blocks the loop for minutes must not let its own lease run out.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[int, tuple[float, float, Callable[[], bool], str]] = {}
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None
        self._wakes_at = 0.0  # when the thread wakes next by itself (monotonic clock)

    def add(self, renew: Callable[[], bool], ttl: float, what: str) -> int:
        with self._cond:
            token = next(self._tokens)
            due = time.monotonic() + ttl / 3
            self._due[token] = (due, ttl, renew, what)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="agcore-lab-leases", daemon=True
                )
                self._thread.start()
            elif due < self._wakes_at:
                # Wake the thread only when it would sleep past this lease's renewal: a
                # wake-up per turn costs the turn a thread switch.
                self._cond.notify()
            return token

    def remove(self, token: int) -> None:
        with self._cond:
            self._due.pop(token, None)

    def _run(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                due = [(t, e) for t, e in self._due.items() if e[0] <= now]
                if not due:
                    soonest = min((e[0] for e in self._due.values()), default=now + 1.0)
                    self._wakes_at = max(now + 0.001, soonest)
                    self._cond.wait(timeout=self._wakes_at - now)
                    continue
                for token, (_, ttl, renew, what) in due:
                    self._due[token] = (now + ttl / 3, ttl, renew, what)
            for token, (_, _, renew, what) in due:
                try:
                    if not renew():
                        logger.warning("lost the %s lease while still working", what)
                        self.remove(token)
                except Exception:  # retried at the next third; the deadline is the guard
                    logger.warning("could not renew the %s lease", what, exc_info=True)


_keeper = _Keeper()


@contextlib.contextmanager
def keep_alive(renew: Callable[[], bool], ttl: float, what: str) -> Iterator[None]:
    """Call ``renew()`` every ``ttl / 3`` seconds, from a background thread, while the block
    runs (off the critical path: the block never waits for a renewal)."""
    token = _keeper.add(renew, ttl, what)
    try:
        yield
    finally:
        _keeper.remove(token)


class TurnLease:
    """The turn lease held by :func:`turn_lease`; unpacks as ``(holder, stored_version)``.

    Set :attr:`released` once a write gave the lease up in its own transaction
    (``Store.commit(..., release_lease=True)``): the block then ends without another write.
    """

    __slots__ = ("holder", "released", "version")

    def __init__(self, holder: str, version: int) -> None:
        self.holder, self.version, self.released = holder, version, False

    def __iter__(self) -> Iterator[str | int]:
        return iter((self.holder, self.version))


def turn_lease(
    store: AsyncStore,
    session_id: str,
    *,
    ttl: float,
    wait: float = 0.0,
    held: tuple[str, int, float] | None = None,
) -> _TurnLeaseScope:
    """Hold the session's turn lease for an ``async with`` block; it gives a :class:`TurnLease`.

    Args:
        store: The store (its async seam; the renewal thread uses its ``sync_store``).
        session_id: The session.
        ttl: Lease lifetime in seconds (renewed while the block runs).
        wait: Seconds to keep trying while another holder has it (0: fail at once).
        held: A lease this process took already, in the write that created the session:
            ``(holder, the session's version then, its deadline on the monotonic clock)``.
            Used as it is (no write) while at least half its lifetime is left, since no
            other writer can have changed the session meanwhile; taken again otherwise.

    Raises:
        SessionBusyError: Another holder kept the lease for longer than ``wait``.

    Example:
        >>> async def turn(store, session_id):  # doctest: +SKIP
        ...     async with turn_lease(store, session_id, ttl=30.0) as lease:
        ...         return lease.version
    """
    return _TurnLeaseScope(store, session_id, ttl, wait, held)


class _TurnLeaseScope:
    # A plain async context manager (not a generator one): a turn's lease is entered and
    # left once per turn, and a generator's frames and ``asend``/``athrow`` cost every turn.
    __slots__ = ("_held", "_lease", "_session_id", "_store", "_token", "_ttl", "_wait")

    def __init__(
        self,
        store: AsyncStore,
        session_id: str,
        ttl: float,
        wait: float,
        held: tuple[str, int, float] | None,
    ) -> None:
        self._store, self._session_id, self._ttl, self._wait = store, session_id, ttl, wait
        self._held = held
        self._lease: TurnLease | None = None
        self._token: int | None = None

    async def __aenter__(self) -> TurnLease:
        held, ttl, session_id = self._held, self._ttl, self._session_id
        if held is not None and held[2] - time.monotonic() >= ttl / 2:
            lease = TurnLease(held[0], held[1])
        else:
            holder = held[0] if held is not None else new_holder()
            lease = await _acquire(self._store, session_id, holder, ttl, self._wait)
        self._lease = lease
        # Once a write released the lease there is nothing left to renew.
        # Renewed from a thread of its own (a turn may block the loop): the sync store.
        sync, holder = self._store.sync_store, lease.holder
        renew = lambda: lease.released or sync.renew_lease(session_id, holder, ttl=ttl)  # noqa: E731
        try:
            self._token = _keeper.add(renew, ttl, "turn")
        except BaseException:
            await self._store.arelease_lease(session_id, lease.holder)
            raise
        return lease

    async def __aexit__(self, *exc_info: object) -> None:
        lease, token = self._lease, self._token
        assert lease is not None and token is not None
        _keeper.remove(token)
        if not lease.released:
            try:
                await self._store.arelease_lease(self._session_id, lease.holder)
            except Exception:  # the lease then simply runs out
                logger.warning(
                    "could not release the turn lease of %s", self._session_id, exc_info=True
                )


async def _acquire(
    store: AsyncStore, session_id: str, holder: str, ttl: float, wait: float
) -> TurnLease:
    # Take the lease, retrying with backoff for up to ``wait`` seconds while another holds it.
    deadline = time.monotonic() + max(0.0, wait)
    delay = 0.01
    while True:
        try:
            return TurnLease(holder, await store.aacquire_lease(session_id, holder, ttl=ttl))
        except SessionBusyError:
            if time.monotonic() + delay > deadline:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)

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
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable

from agcore_lab.errors import SessionBusyError
from agcore_lab.store.base import Store

__all__ = ["keep_alive", "new_holder", "turn_lease"]

logger = logging.getLogger("agcore_lab")


def new_holder() -> str:
    """A lease holder's name: ``host:pid:token`` (unique per lease)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@contextlib.asynccontextmanager
async def keep_alive(renew: Callable[[], bool], ttl: float, what: str) -> AsyncIterator[None]:
    """Call ``renew()`` every ``ttl / 3`` seconds while the block runs (off the critical path:
    the block never waits for a renewal)."""

    async def renewing() -> None:
        while True:
            await asyncio.sleep(ttl / 3)
            try:
                if not renew():
                    logger.warning("lost the %s lease while still working", what)
                    return
            except Exception:  # a failed renewal is retried; the deadline is the guard
                logger.warning("could not renew the %s lease", what, exc_info=True)

    task = asyncio.ensure_future(renewing())
    try:
        yield
    finally:
        task.cancel()  # not awaited: leaving the block must not yield to the loop


@contextlib.asynccontextmanager
async def turn_lease(
    store: Store, session_id: str, *, ttl: float, wait: float = 0.0
) -> AsyncIterator[tuple[str, int]]:
    """Hold the session's turn lease for the block; yields ``(holder, stored_version)``.

    Args:
        store: The store.
        session_id: The session.
        ttl: Lease lifetime in seconds (renewed while the block runs).
        wait: Seconds to keep trying while another holder has it (0: fail at once).

    Raises:
        SessionBusyError: Another holder kept the lease for longer than ``wait``.
    """
    holder = new_holder()
    deadline = time.monotonic() + max(0.0, wait)
    delay = 0.01
    while True:
        try:
            version = store.acquire_lease(session_id, holder, ttl=ttl)
            break
        except SessionBusyError:
            if time.monotonic() + delay > deadline:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)
    try:
        async with keep_alive(lambda: store.renew_lease(session_id, holder, ttl=ttl), ttl, "turn"):
            yield holder, version
    finally:
        try:
            store.release_lease(session_id, holder)
        except Exception:  # the lease then simply runs out
            logger.warning("could not release the turn lease of %s", session_id, exc_info=True)

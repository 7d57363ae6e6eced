"""The cyclic garbage collector paused while a read builds many records that cannot be garbage.

A listing of 10,000 checkpoints makes ~120,000 small container objects (records, their
dicts and fields sets, slot and spend records), none of them part of a cycle and all of them
alive when the read returns. Left on, the collector rescans them over and over while they are
made; merely paused, it scans them all once the moment it is on again (the first collection
of the youngest generation after the read: ~40 ms at 10,000 checkpoints), then again in the
middle generation, and counts them towards an early full collection — work that can find
nothing, since the records hold no cycles.

So :func:`paused_collector` first collects the young generations (what they hold is small
by design: a few thousand objects at most, under a millisecond), keeps the collector off while
the records are made and, when it switches it back on, moves every object the collector
tracks into the oldest generation (``gc.freeze()`` then ``gc.unfreeze()``: two list splices,
whatever the number of objects), where the records are scanned with the long-lived objects at
the next full collection, as they would be once promoted. Because the young generations were
collected first, what is promoted with the records is only what was made during the read (by
it, or by another thread meanwhile): a garbage cycle made before a listing is not kept alive
by it. Nothing is collected or promoted when the collector was off already, or when the
program froze objects itself (``gc.freeze``): their freeze is left as it is.

Nested and concurrent reads are safe: only the outermost one switches the collector back on.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_collector"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused_collector() -> Iterator[None]:
    """Keep the cyclic collector off inside the block; then promote what it made and switch
    the collector back on, if it was on when the outermost block began."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            if _was_enabled and gc.get_freeze_count() == 0:
                gc.collect(1)  # the young garbage, before what follows is promoted
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                if gc.get_freeze_count() == 0:
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()

"""Benchmark: the cost of a ``*_sync`` twin over its coroutine (``aio.run_sync``).

A trivial coroutine is run N times through :func:`agcore_lab.aio.run_sync` (from a plain
script, where no event loop is running in the calling thread) and N times directly (stepped to
completion in the calling thread, the floor), alternating in rounds so machine load hits both
alike; the medians of the rounds are compared. Target: run_sync adds at most 0.05 ms per call
(issue 16). The figure is two thread wake-ups: on a loaded machine (load above the core count)
the scheduler's latency dominates it.

Run: python bench/sync.py [--calls 2000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable

from agcore_lab.aio import bridge_loop, run_sync


async def trivial(value: int) -> int:
    return value


def _direct(value: int) -> int:
    coro = trivial(value)
    try:
        coro.send(None)
    except StopIteration as done:
        return int(done.value)
    raise AssertionError("the trivial coroutine suspended")


def _per_call(run: Callable[[int], object], calls: int) -> float:
    started = time.perf_counter()
    for i in range(calls):
        run(i)
    return (time.perf_counter() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    run_sync(trivial(0))  # start the bridge thread outside the measurement
    bridged, direct, futures = [], [], []
    loop = bridge_loop()
    for _ in range(args.rounds):
        bridged.append(_per_call(lambda i: run_sync(trivial(i)), args.calls))
        direct.append(_per_call(_direct, args.calls))
        futures.append(
            _per_call(
                lambda i: asyncio.run_coroutine_threadsafe(trivial(i), loop).result(), args.calls
            )
        )
    over = statistics.median(bridged) - statistics.median(direct)
    print(
        f"trivial coroutine: run_sync {statistics.median(bridged) * 1e3:.4f} ms, direct "
        f"{statistics.median(direct) * 1e3:.4f} ms: overhead {over * 1e3:.4f} ms per call "
        f"(target <= 0.05 ms) {'PASS' if over <= 0.05e-3 else 'MISS'}"
    )
    print(
        f"the same hop through run_coroutine_threadsafe(...).result() (run_sync before this "
        f"change): {statistics.median(futures) * 1e3:.4f} ms per call"
    )


if __name__ == "__main__":
    main()

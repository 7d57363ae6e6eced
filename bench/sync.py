"""Benchmark: the cost of a ``*_sync`` twin over its coroutine (``aio.run_sync``).

A trivial coroutine is run many times through :func:`agcore_lab.aio.run_sync` (from a plain
script, where no event loop is running in the calling thread), directly (stepped to completion
in the calling thread: the floor), through the handoff run_sync used before (a
``call_soon_threadsafe`` of a task whose done callback releases a plain lock) and through
``run_coroutine_threadsafe(...).result()``, alternating in short rounds so machine load hits
all of them alike. Target: run_sync adds at most 0.05 ms per call (issue 16) on an idle
machine.

The figure is mostly thread wake-ups, and they cost very differently on an idle and a busy
virtual machine (waking an idle CPU means a trip through the hypervisor), so each round also
records how much CPU other processes used meanwhile (``/proc/stat`` less this process's own
time, Linux only) and the medians are printed for quiet rounds (others below 10% of one CPU),
busy rounds and all rounds. PASS/MISS is judged on the quiet rounds when there are at least
five of them, else on all rounds (said so).

Two costs of the waiting are printed as well: the CPU this process uses while the bridge is
idle (must be ~0: nothing polls between calls), and the extra CPU a call that takes 1 ms
costs (the caller polls for ``SPIN_SECONDS`` before it blocks).

Run: python bench/sync.py [--calls 1000] [--rounds 100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from agcore_lab import aio
from agcore_lab.aio import bridge_loop, run_sync

QUIET = 0.10  # other processes' CPU, in CPUs, below which a round counts as quiet


async def trivial(value: int) -> int:
    return value


def _direct(value: int) -> int:
    coro = trivial(value)
    try:
        coro.send(None)
    except StopIteration as done:
        return int(done.value)
    raise AssertionError("the trivial coroutine suspended")


def _previous_handoff(
    loop: asyncio.AbstractEventLoop, make: Callable[[int], Any] = trivial
) -> Callable[[int], Any]:
    """run_sync as it was before this change (commit 6297593): call_soon_threadsafe of a
    starter, a task whose done callback releases a plain lock, the result read off the task."""

    def run(value: int) -> Any:
        done = threading.Lock()
        done.acquire()
        box: list[asyncio.Task[Any]] = []

        def start() -> None:
            task = loop.create_task(make(value))
            task.add_done_callback(lambda _: done.release())
            box.append(task)

        loop.call_soon_threadsafe(start)
        done.acquire()
        return box[0].result()

    return run


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _machine_busy() -> float | None:
    """CPU seconds that processes on the machine have run so far: user, nice and system
    time (interrupt time is left out: the wake-ups measured here make some themselves);
    None off Linux."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:4]]
    except OSError:
        return None
    return sum(fields) / os.sysconf("SC_CLK_TCK")


def _round(run: Callable[[int], object], calls: int) -> tuple[float, float | None]:
    """(seconds per call, other processes' CPU use in CPUs meanwhile, if known)."""
    busy, own = _machine_busy(), _own_cpu()
    started = time.perf_counter()
    for i in range(calls):
        run(i)
    wall = time.perf_counter() - started
    after = _machine_busy()
    others = None
    if busy is not None and after is not None:
        others = max(0.0, (after - busy) - (_own_cpu() - own)) / wall
    return wall / calls, others


def _medians(rows: list[tuple[float, float | None]]) -> dict[str, tuple[int, float]]:
    groups: dict[str, list[float]] = {"quiet": [], "busy": [], "all": []}
    for seconds, others in rows:
        groups["all"].append(seconds)
        if others is not None:
            groups["quiet" if others < QUIET else "busy"].append(seconds)
    return {k: (len(v), statistics.median(v)) for k, v in groups.items() if v}


def _cpu_while(seconds: float) -> float:
    own = _own_cpu()
    time.sleep(seconds)
    return _own_cpu() - own


async def sleepy(_: int) -> None:
    await asyncio.sleep(0.001)


def _slow_call_cpu(run: Callable[[Callable[[int], Any], int], object], calls: int = 300) -> float:
    """CPU seconds per call of a coroutine that sleeps 1 ms."""
    own = _own_cpu()
    for i in range(calls):
        run(sleepy, i)
    return (_own_cpu() - own) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    run_sync(trivial(0))  # start the bridge thread outside the measurement
    loop = bridge_loop()
    ways: dict[str, Callable[[int], Any]] = {
        "run_sync": lambda i: run_sync(trivial(i)),
        "direct": _direct,
        "previous": _previous_handoff(loop),
        "threadsafe": lambda i: asyncio.run_coroutine_threadsafe(trivial(i), loop).result(),
    }
    rows: dict[str, list[tuple[float, float | None]]] = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, run in ways.items():
            rows[name].append(_round(run, args.calls))
    medians = {name: _medians(r) for name, r in rows.items()}
    print(f"ms per call, median of rounds of {args.calls} calls (rounds in brackets)")
    print(
        f"   {'machine':<8}{'run_sync':>16}{'direct':>12}{'overhead':>11}{'previous':>16}"
        f"{'threadsafe':>18}"
    )
    for group in ("quiet", "busy", "all"):
        if group not in medians["run_sync"] or group not in medians["direct"]:
            print(f"   {group:<8}no rounds")
            continue
        n, ours = medians["run_sync"][group]
        over = ours - medians["direct"][group][1]
        cells = [
            f"{ours * 1e3:>9.4f} ({n:>3})",
            f"{medians['direct'][group][1] * 1e3:>12.4f}",
            f"{over * 1e3:>11.4f}",
        ]
        for name in ("previous", "threadsafe"):
            if group in medians[name]:
                count, value = medians[name][group]
                cells.append(f"{value * 1e3:>11.4f} ({count:>3})")
            else:
                cells.append(f"{'-':>17}")
        print(f"   {group:<8}" + "".join(cells))
    quiet = medians["run_sync"].get("quiet")
    judged = "quiet" if quiet is not None and quiet[0] >= 5 else "all"
    over = medians["run_sync"][judged][1] - medians["direct"][judged][1]
    note = "" if judged == "quiet" else " (too few quiet rounds: judged on all rounds)"
    print(
        f"run_sync overhead on {judged} rounds: {over * 1e3:.4f} ms per call "
        f"(target <= 0.05 ms) {'PASS' if over <= 0.05e-3 else 'MISS'}{note}"
    )
    idle = _cpu_while(1.0)
    print(
        f"CPU used by this process in 1 s with the bridge idle: {idle * 1e3:.2f} ms (~0 expected)"
    )
    ours = _slow_call_cpu(lambda make, i: run_sync(make(i)))
    before = _slow_call_cpu(lambda make, i: _previous_handoff(loop, make)(i))
    print(
        f"CPU per call of a coroutine sleeping 1 ms: run_sync {ours * 1e6:.0f} us (polls up to "
        f"{aio.SPIN_SECONDS * 1e6:.0f} us, then blocks), previous handoff {before * 1e6:.0f} us"
    )


if __name__ == "__main__":
    main()

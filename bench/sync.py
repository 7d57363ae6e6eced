"""Benchmark: the cost of a ``*_sync`` twin over its coroutine (``aio.run_sync``).

A trivial coroutine is run many times through :func:`agcore_lab.aio.run_sync` (from a plain
script, where no event loop is running in the calling thread), directly (stepped to completion
in the calling thread: the floor), through the bridge's posting path (every call hops to the
loop thread: run_sync as it was before it took first steps on the caller's thread), through
the handoff run_sync used before that (a ``call_soon_threadsafe`` of a task whose done callback
releases a plain lock) and through ``run_coroutine_threadsafe(...).result()``, alternating in
short rounds so machine load hits all of them alike. Target: run_sync adds at most 0.05 ms
per call (issue 16) on an idle machine.

The trivial coroutine never waits, so run_sync now runs it on the calling thread with no hop;
so do the engine's calls on SQLite (the store's methods are plain calls). Two more rows keep
the figure honest: a coroutine that waits once (``await asyncio.sleep(0)``: the hop is still
paid, run_sync beside the posting path), and a real store call through the async adapter
(``as_async(SqliteStore(":memory:")).asession_version``) beside the same coroutine stepped
directly.

A hop is mostly thread wake-ups, and they cost very differently on an idle and a busy virtual
machine (waking an idle CPU means a trip through the hypervisor), so each round also records
how much CPU other processes used meanwhile (``/proc/stat`` less this process's own time,
Linux only) and the medians are printed for quiet rounds (others below 10% of one CPU), busy
rounds and all rounds. PASS/MISS is judged on the quiet rounds when there are at least five of
them, else on all rounds (said so).

The costs of the waiting are printed as well: this process's CPU per call (a first step makes
a task that ends on the loop's next turn), the CPU this process uses while the bridge is idle
(must be ~0: nothing polls between calls), and the extra CPU a call that takes 1 ms costs (the
caller polls for ``SPIN_SECONDS`` before it blocks).

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

from agcore_lab import SqliteStore, aio
from agcore_lab._aio_bridge import Handoff, _Bridge
from agcore_lab.aio import bridge_loop, run_sync
from agcore_lab.store import as_async

QUIET = 0.10  # other processes' CPU, in CPUs, below which a round counts as quiet


async def trivial(value: int) -> int:
    return value


async def waits_once(value: int) -> int:
    await asyncio.sleep(0)
    return value


def _step(coro: Any) -> Any:
    """Run a coroutine that never waits to completion on this thread (the floor)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("the coroutine suspended")


def _direct(value: int) -> int:
    return int(_step(trivial(value)))


def _posted(bridge: _Bridge, make: Callable[[int], Any]) -> Callable[[int], Any]:
    """run_sync before this change: every call posted to the loop thread (eventfd, the task
    releases the caller's lock, the caller polls then blocks)."""

    def run(value: int) -> Any:
        call = Handoff(make(value))
        bridge.post(call)
        call.wait(None)
        return call.outcome()

    return run


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


Row = tuple[float, float | None, float]


def _round(run: Callable[[int], object], calls: int) -> Row:
    """(seconds per call, other processes' CPU use in CPUs meanwhile if known, this
    process's CPU seconds per call)."""
    busy, own = _machine_busy(), _own_cpu()
    started = time.perf_counter()
    for i in range(calls):
        run(i)
    wall = time.perf_counter() - started
    after, own_after = _machine_busy(), _own_cpu()
    others = None
    if busy is not None and after is not None:
        others = max(0.0, (after - busy) - (own_after - own)) / wall
    return wall / calls, others, (own_after - own) / calls


def _medians(rows: list[Row]) -> dict[str, tuple[int, float]]:
    groups: dict[str, list[float]] = {"quiet": [], "busy": [], "all": []}
    for seconds, others, _ in rows:
        groups["all"].append(seconds)
        if others is not None:
            groups["quiet" if others < QUIET else "busy"].append(seconds)
    return {k: (len(v), statistics.median(v)) for k, v in groups.items() if v}


def _cell(medians: dict[str, tuple[int, float]], group: str, width: int = 11) -> str:
    if group not in medians:
        return f"{'-':>{width + 6}}"
    count, value = medians[group]
    return f"{value * 1e3:>{width}.4f} ({count:>3})"


def _floor(medians: dict[str, tuple[int, float]], group: str) -> float:
    # The direct call does no hop: its cost hardly depends on the machine, and its short
    # rounds may all fall in one group.
    return medians.get(group, medians["all"])[1]


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
    posting = _Bridge(first_step=False)  # the same bridge, every call posted
    store = SqliteStore(":memory:")
    astore = as_async(store)
    ways: dict[str, Callable[[int], Any]] = {
        "run_sync": lambda i: run_sync(trivial(i)),
        "direct": _direct,
        "posted": _posted(posting, trivial),
        "previous": _previous_handoff(loop),
        "threadsafe": lambda i: asyncio.run_coroutine_threadsafe(trivial(i), loop).result(),
        "run_sync, waits once": lambda i: run_sync(waits_once(i)),
        "posted, waits once": _posted(posting, waits_once),
        "run_sync, store call": lambda i: run_sync(astore.asession_version("s")),
        "direct, store call": lambda i: _step(astore.asession_version("s")),
    }
    rows: dict[str, list[Row]] = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, run in ways.items():
            rows[name].append(_round(run, args.calls))
    medians = {name: _medians(r) for name, r in rows.items()}
    print(f"ms per call, median of rounds of {args.calls} calls (rounds in brackets)")
    print(
        f"   {'machine':<8}{'run_sync':>17}{'direct':>10}{'overhead':>10}{'posted':>17}"
        f"{'previous':>17}{'threadsafe':>17}"
    )
    for group in ("quiet", "busy", "all"):
        if group not in medians["run_sync"]:
            print(f"   {group:<8}no rounds")
            continue
        floor = _floor(medians["direct"], group)
        over = medians["run_sync"][group][1] - floor
        cells = [
            _cell(medians["run_sync"], group),
            f"{floor * 1e3:>10.4f}",
            f"{over * 1e3:>10.4f}",
        ]
        cells += [_cell(medians[name], group) for name in ("posted", "previous", "threadsafe")]
        print(f"   {group:<8}" + "".join(cells))
    print("a coroutine that waits once (await asyncio.sleep(0)): the hop is still paid")
    for group in ("quiet", "busy", "all"):
        print(
            f"   {group:<8}run_sync{_cell(medians['run_sync, waits once'], group)}"
            f"   posted{_cell(medians['posted, waits once'], group)}"
        )
    store_over = medians["run_sync, store call"]["all"][1] - medians["direct, store call"]["all"][1]
    print(
        "a store call, as_async(SqliteStore(':memory:')).asession_version, all rounds: "
        f"run_sync {medians['run_sync, store call']['all'][1] * 1e3:.4f} ms, "
        f"stepped directly {medians['direct, store call']['all'][1] * 1e3:.4f} ms, "
        f"overhead {store_over * 1e3:.4f} ms"
    )
    cpu = {name: statistics.median(row[2] for row in r) for name, r in rows.items()}
    print(
        "this process's CPU per call (median of rounds): "
        + ", ".join(
            f"{name} {cpu[name] * 1e3:.4f} ms"
            for name in ("run_sync", "direct", "posted", "run_sync, waits once")
        )
    )
    quiet = medians["run_sync"].get("quiet")
    judged = "quiet" if quiet is not None and quiet[0] >= 5 else "all"
    over = medians["run_sync"][judged][1] - _floor(medians["direct"], judged)
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
    store.close()


if __name__ == "__main__":
    main()

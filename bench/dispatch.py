"""Benchmark: sub-agent dispatch overhead.

200 tasks, ``max_concurrency=10``, a model that waits 50 ms per call, on a file-backed SQLite
store with automatic checkpoints (what a user gets by default). Prints the wall time divided by
the ideal (200 / 10 x 50 ms = 1 s; target < 1.15) and the peak number of concurrently running
children (must equal the limit).

Run: python bench/dispatch.py [--tasks 200] [--limit 10] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from agcore_lab import Agent, DispatchConfig, ScriptedModel, SessionManager, SqliteStore


async def run(tasks: int, limit: int, latency: float, db: Path) -> tuple[float, int, int]:
    manager = SessionManager(SqliteStore(db))
    lead = await manager.create(Agent(name="lead", model=ScriptedModel()))
    worker = Agent(name="worker", model=ScriptedModel(lambda messages: "ok", latency=latency))
    started = time.perf_counter()
    results = await manager.dispatch_all(
        lead, [(worker, f"task {i}") for i in range(tasks)], DispatchConfig(max_concurrency=limit)
    )
    wall = time.perf_counter() - started
    assert manager.last_dispatch is not None
    ok = sum(1 for r in results if not isinstance(r, Exception))
    return wall, manager.last_dispatch.peak_running, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    ideal = args.tasks / args.limit * args.latency
    with tempfile.TemporaryDirectory() as tmp:
        wall, peak, ok = asyncio.run(run(args.tasks, args.limit, args.latency, Path(tmp) / "d.db"))
    ratio = wall / ideal
    print(f"tasks: {args.tasks}  completed: {ok}  limit: {args.limit}  latency: {args.latency}s")
    print(f"wall: {wall:.3f} s  ideal: {ideal:.3f} s  overhead ratio: {ratio:.3f} (target < 1.15)")
    print(f"peak concurrently running children: {peak} (must equal {args.limit})")
    verdicts = ("PASS" if ratio < 1.15 else "MISS", "PASS" if peak == args.limit else "MISS")
    print(f"{verdicts[0]} overhead, {verdicts[1]} peak")


if __name__ == "__main__":
    main()

"""Benchmark: a 1,000-turn session on ScriptedModel with a file-backed SQLite store.

Prints turns per second and the ratio of the median turn time of turns 950-1000 to that of
turns 10-60. The ratio must stay below 1.5: a turn must not get slower as history grows
(messages are stored once and a turn writes only what it added).

The whole session is run ``--repeats`` times (3 by default), each on a fresh file; for each
turn number the fastest of the repeats is kept before taking medians, which filters out noise
from other processes on a small machine. Single-run figures are printed too.

Run: python bench/turns.py [--turns 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from agcore_lab import Agent, AgentSession, ScriptedModel, SqliteStore, ToolCall


def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return f"value of {key}"


def _script(messages: object) -> str | ToolCall:
    # Every fifth turn makes a tool call, so the tool loop is part of the measurement.
    count = len(messages)  # type: ignore[arg-type]
    if count % 10 == 2:
        return ToolCall(name="lookup", arguments={"key": f"k{count}"})
    return f"answer {count}"


async def run(turns: int, db: Path) -> list[float]:
    agent = Agent(name="bench", model=ScriptedModel(_script), tools=[lookup])
    session = AgentSession(agent, store=SqliteStore(db))
    durations = []
    for i in range(turns):
        start = time.perf_counter()
        await session.submit_turn(f"turn {i}: tell me something about item {i}")
        durations.append(time.perf_counter() - start)
    return durations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.turns < 100:
        parser.error("--turns must be at least 100 (the windows are turns 10-60 and the last 50)")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            started = time.perf_counter()
            durations = asyncio.run(run(args.turns, Path(tmp) / f"bench-{repeat}.db"))
            total = time.perf_counter() - started
            early, late = _windows(durations)
            print(
                f"run {repeat + 1}: {args.turns} turns in {total:.2f} s = "
                f"{args.turns / total:.1f} turns/s; ratio {late / early:.3f}"
            )
            runs.append(durations)
    best = [min(column) for column in zip(*runs, strict=True)]
    early, late = _windows(best)
    print(f"median turn 10-60: {early * 1000:.3f} ms  median last 50 turns: {late * 1000:.3f} ms")
    print(f"ratio late/early: {late / early:.3f} (target < 1.5)")


def _windows(durations: list[float]) -> tuple[float, float]:
    return statistics.median(durations[10:60]), statistics.median(durations[-50:])


if __name__ == "__main__":
    main()

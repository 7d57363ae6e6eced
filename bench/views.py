"""Benchmark: what open views cost the engine per turn.

One SessionManager on a file-backed SQLite store holds one session with ``--history``
checkpoints (1,000 by default). Then, in the same process and on the same session, three phases
of ``--turns`` turns each are timed, alternating so drift on a busy machine hits both sides:

- **none**: no view open;
- **open**: a ``SessionTreeBrowser`` and a ``CheckpointTimeline`` of that session are open and
  follow the manager's events (each turn emits ``turn`` and ``checkpoint``).

Turns run the way they do in Jupyter: on agcore_lab's background loop (``aio.submit``), the same
loop the views load on. The figure is the median per-turn time with the views open minus the
median without (the overhead, ms per turn), and the ratio of the two. PASS when the overhead is
under 2 ms per turn. The views' own catch-up after the last turn (one coalesced reload) is
printed too; it is off the turn's path.

Run: python bench/views.py [--history 1000] [--turns 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.aio import submit

GOAL_MS = 2.0


def _turns(manager: SessionManager, sid: str, count: int, tag: str) -> list[float]:
    durations = []
    for i in range(count):
        start = time.perf_counter()
        submit(manager.submit_turn(sid, f"{tag} {i}")).result(60)
        durations.append(time.perf_counter() - start)
    return durations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=1000, help="checkpoints before timing")
    parser.add_argument("--turns", type=int, default=200, help="turns per phase and round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from agcore_lab.jupyter import CheckpointTimeline, SessionTreeBrowser

    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent(name="bench", model=ScriptedModel(lambda messages: "ok"))
        manager = SessionManager(SqliteStore(Path(tmp) / "views.db"), agents=[agent])
        sid = manager.create_sync(agent)
        start = time.perf_counter()
        while len(manager.checkpointer.list_checkpoints_sync(sid)) < args.history:
            _turns(manager, sid, 100, "history")
        built = time.perf_counter() - start
        count = len(manager.checkpointer.list_checkpoints_sync(sid))
        print(f"history: {count} checkpoints in {built:.1f} s")

        closed: list[float] = []
        opened: list[float] = []
        catch_up: list[float] = []
        for round_ in range(args.rounds):
            closed += _turns(manager, sid, args.turns, f"closed {round_}")
            tree = SessionTreeBrowser(manager)
            timeline = CheckpointTimeline(manager, sid)
            opened += _turns(manager, sid, args.turns, f"open {round_}")
            t0 = time.perf_counter()
            assert tree.wait(60) and timeline.wait(60), "the views did not catch up"
            catch_up.append(time.perf_counter() - t0)
            assert timeline.turn_index == manager.get_sync(sid).turn_index, "stale timeline"
            tree.close()
            timeline.close()

        none_ms = statistics.median(closed) * 1000
        open_ms = statistics.median(opened) * 1000
        mean_gap = (statistics.fmean(opened) - statistics.fmean(closed)) * 1000
        overhead = open_ms - none_ms
        print(f"turns per phase: {args.turns} x {args.rounds} rounds")
        print(f"no view open:        median {none_ms:.3f} ms/turn")
        print(f"tree + timeline:     median {open_ms:.3f} ms/turn")
        print(f"overhead:            {overhead:+.3f} ms/turn (median), {mean_gap:+.3f} (mean)")
        print(f"ratio open / none:   {open_ms / none_ms:.2f}")
        for name, values in (("no view", closed), ("views open", opened)):
            ranked = sorted(values)
            p99 = ranked[int(len(ranked) * 0.99)] * 1000
            print(f"{name:<12} p99 {p99:.2f} ms, max {ranked[-1] * 1000:.1f} ms")
        print(f"views' catch-up after the last turn: {max(catch_up) * 1000:.0f} ms (worst)")
        start = time.perf_counter()
        timeline = CheckpointTimeline(manager, sid)  # waits for its first load
        opened = time.perf_counter() - start
        print(
            f"timeline open on {len(timeline.checkpoints)} checkpoints: {opened * 1000:.0f} ms "
            "(read + graph payload; the browser's first paint is measured by "
            "tests/browser/test_timeline_browser.py)"
        )
        timeline.close()
        worst = max(overhead, mean_gap)
        verdict = "PASS" if worst < GOAL_MS else "MISS"
        print(f"{verdict}: overhead {worst:.3f} ms/turn (goal < {GOAL_MS} ms)")


if __name__ == "__main__":
    main()

"""Benchmark: lookups of a checkpoint by id stay flat as the file grows (hardening, defect 10).

The ``checkpoints`` primary key is ``(session_id, ckpt_id)``, so a lookup by id alone —
``get_checkpoint``, ``preview``, ``rollback``, ``fork``, ``export_snapshot`` — scanned the whole
table until migration m007 added an index on ``ckpt_id``. This bench builds two SQLite files
with a real session (a few turns, one checkpoint each) plus ``--small`` and ``--large``
filler checkpoints of other sessions (default 200 and 20,000), and times each operation on
the real session's checkpoint by id (best of ``--repeats``).

For each operation it prints the time in the small file and in the large file, and the ratio
large/small. Target: large/small < 1.5 for every operation (flat). Since schema 11 a
checkpoint's id *is* its row's key (``checkpoint_rows.ckpt``, decoded from the id), so there is
no index to drop any more; for scale, the bench prints what a lookup that scans every
checkpoint costs in the large file (``SELECT * FROM checkpoints WHERE ckpt_id = ?``: the view
computes the id, so nothing indexes it), which is what every lookup paid before m007.

Run: python bench/checkpoint_lookup.py [--small 200] [--large 20000] [--repeats 15]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.ids import new_id
from agcore_lab.store._checkpoints import insert_checkpoint

TARGET_RATIO = 1.5


def _build(path: Path, filler: int) -> tuple[SessionManager, str, str]:
    manager = SessionManager(SqliteStore(path))
    sid = manager.create_sync(
        Agent(name="writer", model=ScriptedModel([f"draft {i}" for i in range(8)]))
    )
    for i in range(4):
        manager.submit_turn_sync(sid, f"turn {i}")
    target = manager.checkpointer.list_checkpoints_sync(sid)[1]
    template = target.model_copy()
    store = manager.store
    assert isinstance(store, SqliteStore)
    with store.transaction() as conn:
        for n in range(filler):
            other = f"ses_filler{n // 100:05d}"
            insert_checkpoint(
                conn, template.model_copy(update={"session_id": other, "ckpt_id": new_id("ckpt")})
            )
    return manager, sid, target.ckpt_id


def _best(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def _measure(manager: SessionManager, sid: str, ckpt_id: str, repeats: int) -> dict[str, float]:
    ckpt = manager.checkpointer
    return {
        "get_checkpoint": _best(lambda: ckpt.get_checkpoint_sync(ckpt_id), repeats),
        "preview": _best(lambda: ckpt.preview_sync(ckpt_id), repeats),
        "export_snapshot": _best(lambda: ckpt.export_snapshot_sync(ckpt_id), repeats),
        "fork": _best(lambda: ckpt.fork_sync(sid, ckpt_id), repeats),
        "rollback": _best(lambda: ckpt.rollback_sync(sid, ckpt_id), repeats),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--large", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small = _measure(*_build(Path(tmp) / "small.db", args.small), args.repeats)
        manager, sid, ckpt_id = _build(Path(tmp) / "large.db", args.large)
        large = _measure(manager, sid, ckpt_id, args.repeats)
        store = manager.store
        assert isinstance(store, SqliteStore)
        conn = store.connection
        scan = _best(
            lambda: conn.execute(
                "SELECT * FROM checkpoints WHERE ckpt_id = ?", (ckpt_id,)
            ).fetchall(),
            args.repeats,
        )
        store.close()
    print(
        f"checkpoint lookups by id: {args.small:,} vs {args.large:,} other checkpoints "
        f"(best of {args.repeats})"
    )
    print(f"{'operation':<16} {'small':>9} {'large':>9} {'ratio':>6}")
    passed = True
    for name in small:
        ratio = large[name] / small[name]
        ok = ratio < TARGET_RATIO
        passed &= ok
        print(
            f"{name:<16} {small[name] * 1000:7.2f}ms {large[name] * 1000:7.2f}ms "
            f"{ratio:6.2f} {'PASS' if ok else 'MISS'}"
        )
    print(
        f"(for scale: one lookup scanning every checkpoint of the large file {scan * 1000:.2f} ms)"
    )
    verdict = "PASS" if passed else "MISS"
    print(f"target: large/small < {TARGET_RATIO}; all targets {verdict}")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())

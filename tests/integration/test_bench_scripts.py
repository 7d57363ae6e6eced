"""The benchmark scripts under ``bench/`` still run against the current schema.

Their figures are not checked here (timings belong to the benchmarks, not to tests); what is
checked is that a script runs to its verdict line on small sizes, so a change of schema or API
cannot leave a benchmark broken unnoticed (``checkpoint_lookup.py`` once dropped an index that
schema 11 no longer has, and ``checkpoints.py`` timed a checkpoint write that now rides in the
turn's commit and patched a function that had moved: both stopped with a traceback).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("script", "args", "verdict"),
    [
        ("checkpoint_lookup.py", ["--small", "5", "--large", "50", "--repeats", "1"], "target:"),
        ("timetravel.py", ["--turns", "100", "--fork-turns", "50", "--repeats", "1"], "PASS"),
        (
            "checkpoints.py",
            ["--sizes", "100", "--repeats", "1", "--backend", "sqlite"],
            "version check:",
        ),
        (
            "turns.py",
            ["--only", "recording", "--turns", "100", "--repeats", "1", "--processes", "2"],
            "fresh processes",
        ),
        ("sync.py", ["--calls", "50", "--rounds", "2"], "run_sync overhead"),
        (
            "dispatch.py",
            ["--tasks", "20", "--limit", "5", "--latency", "0.01", "--warm", "1", "--timeline"],
            "SQL alone",
        ),
        (
            "storage.py",
            ["--checkpoints", "100", "--sessions", "100", "--turns", "10", "--repeats", "1"],
            "targets PASS",
        ),
    ],
)
def test_a_benchmark_runs_to_its_verdict(script: str, args: list[str], verdict: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert verdict in done.stdout, done.stdout + done.stderr

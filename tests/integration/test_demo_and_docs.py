"""The README's promises: the demo command, the tour, and the console entry points."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agcore_lab.demo import run_demo

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_offline_and_twice(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    lines: list[str] = []
    first = run_demo(db, out=lines.append)
    assert first.tool_calls == ["add({'a': 1200, 'b': 345})", "multiply({'a': 1545, 'b': 2})"]
    assert first.slots == {"main": 12, "what-if": 8}
    assert first.summary is not None and "1545" in first.summary
    assert first.main_mode == "focused"
    assert first.memory_keys == ["conversation_summary", "currency"]
    assert first.cost > 0 and first.tokens > 0
    assert first.tree_sizes == [2, 1] and first.checkpoints == 5
    assert first.fork_reply == "A better draft two."
    assert first.approval_reply == "Done." and first.dispatched == 5
    assert first.rag_chunks > 0
    assert first.graph_related == 3 and first.graph_strategy == "hybrid"
    assert first.rag_answers["how do I undo a turn?"][0] == "notes/time-travel.md"
    # the calculator, the writer and its fork, the bank, the lead and its five workers
    assert first.sessions_in_store == 10
    report = "\n".join(lines)
    assert "Merge the what-if slot back" in report and "automatic summary:" in report

    second = run_demo(db, out=lambda _line: None)
    assert second.sessions_in_store == 20
    assert second.rag_chunks == first.rag_chunks  # re-ingesting the same notes changes nothing
    # Deterministic: the same story gives the same replies and figures.
    assert second.replies == first.replies and second.tokens == first.tokens


def test_demo_command_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agcore_lab", "demo", "--db", str(tmp_path / "cli.db")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "10. Report" in done.stdout and "sessions in" in done.stdout


def test_command_line_without_command_shows_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agcore_lab"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "demo" in done.stderr


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


def test_readme_tour_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks((ROOT / "README.md").read_text())
    assert blocks, "the README has a Python tour"
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    again = namespace["again"]
    session = namespace["session"]
    assert again.turn_index == session.turn_index == 2  # type: ignore[attr-defined]
    assert set(again.slots) == {"main", "what-if"}  # type: ignore[attr-defined]
    assert len(again.slots["main"].messages) == 6  # type: ignore[attr-defined]


def test_readme_has_exactly_the_two_commands_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", readme, flags=re.S)
    assert commands[:2] == [
        "python -m pip install . && python -m agcore_lab demo",
        'python -m pip install -e ".[dev]" && bash scripts/check.sh',
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "<!-- test command -->" in ci


def test_readme_time_travel_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks((ROOT / "README.md").read_text())
    snippet = next(b for b in blocks if "SessionManager" in b)
    namespace: dict[str, Any] = {}
    exec(compile(snippet, "README.md", "exec"), namespace)
    manager, sid, df = namespace["manager"], namespace["sid"], namespace["df"]
    assert manager.get_sync(sid).turn_index == 0  # back to the first checkpoint
    assert list(df["source"])[:1] == ["rollback"] and len(df) == 5

"""The Python examples in docs/knowledge-graph.md run (offline, in a scratch directory)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "knowledge-graph.md"


def test_knowledge_graph_doc_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 4
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})
    printed = capsys.readouterr().out
    assert "engine 0.9 ['ada', 'engine']" in printed
    assert "turing 0.45 ['ada', 'engine', 'turing']" in printed
    assert "entity ada 0.5\nentity engine 0.45\nknowledge notes" in printed
    assert (tmp_path / "graph-example.db").exists()

"""The Python examples in docs/rag.md run (offline, in a scratch directory)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "rag.md"


def test_rag_doc_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    runnable = [b for b in blocks if "display(" not in b]  # the notebook-only example
    assert len(runnable) >= 3
    namespace: dict[str, object] = {}
    for block in runnable:
        exec(compile(block, str(DOC), "exec"), namespace)
    assert (tmp_path / "rag-example.db").exists()
    assert namespace["pipeline"].store.ids()  # type: ignore[attr-defined]

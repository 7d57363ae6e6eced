"""The examples of docs/sharing.md run as written (in one namespace, in a scratch directory)
and print what the page says they print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "sharing.md"


def test_sharing_doc_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 5
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    promised = [
        line.split("# ", 1)[1].strip()
        for block in blocks
        for line in block.splitlines()
        if line.strip().startswith("print(") and "# " in line
    ]
    assert printed == promised

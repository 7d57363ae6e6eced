"""docs/observability.md: its Python examples run as written (offline), in order."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "observability.md"


def test_the_observability_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 6
    namespace: dict[str, object] = {}
    ran = 0
    for block in blocks:
        if "OTLPSpanExporter" in block:
            continue  # needs a collector on 127.0.0.1:4318 (tests/unit/otel runs one)
        exec(compile(block, str(DOC), "exec"), namespace)
        ran += 1
    assert ran == len(blocks) - 1
    # The first example is the acceptance snippet; the replay example re-ran it offline.
    assert (tmp_path / "lab.db").exists() and (tmp_path / "calls.jsonl").exists()
    replay = namespace["replay"]
    assert replay.replayed == 2 and replay.live_calls == 0  # type: ignore[attr-defined]
    inspector = namespace["inspector"]
    assert len(inspector.calls) == 2  # type: ignore[attr-defined]
    inspector.close()  # type: ignore[attr-defined]
    ops = logging.getLogger("agcore_lab.ops")
    for handler in list(ops.handlers):
        ops.removeHandler(handler)
    ops.setLevel(logging.NOTSET)

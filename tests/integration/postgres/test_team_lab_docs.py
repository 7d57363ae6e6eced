"""docs/team-lab.md: its retrieval example runs on a real server as written, and what it says
about the command line is what the command line does."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from agcore_lab.cli import main

DOC = (Path(__file__).resolve().parents[3] / "docs" / "team-lab.md").read_text(encoding="utf-8")


def test_the_retrieval_example_runs_on_postgres(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (block,) = [
        b for b in re.findall(r"```python\n(.*?)```", DOC, re.S) if "open_vector_store" in b
    ]
    schema = "doc_" + uuid.uuid4().hex[:10]
    monkeypatch.setenv(
        "AGCORE_STORE_URL", f"{postgres_url}{'&' if '?' in postgres_url else '?'}schema={schema}"
    )
    namespace: dict[str, Any] = {}
    exec(compile(block, "team-lab.md", "exec"), namespace)
    assert type(namespace["store"]).__name__ == "PostgresStore"
    assert namespace["store"].schema == schema
    assert type(namespace["notes"]).__name__ == "PostgresVectorStore"
    assert type(namespace["graph"]).__name__ == "PostgresGraph"
    namespace["store"].close()


def test_the_commands_the_doc_names_exist(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("migrate", "info", "demo", "serve"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        assert "--store" in text or command == "migrate", command
    assert "docker run" in DOC and "apt-get install" in DOC and "pg_dump" in DOC
    assert "verified: every count matches in the destination" in DOC
    assert "agcore-lab migrate sqlite:///lab.db postgresql://" in DOC

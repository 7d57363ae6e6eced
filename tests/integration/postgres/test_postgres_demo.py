"""``agcore-lab demo --store postgresql://...``: the whole demo story on a server, vectors
and graph included; ``--fresh`` only deletes a ``--db`` file."""

from __future__ import annotations

import uuid

import pytest

from agcore_lab.cli import main

pytestmark = pytest.mark.timeout(300)


def test_the_demo_runs_on_postgres(postgres_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}schema=d_{uuid.uuid4().hex[:10]}"
    assert main(["demo", "--store", url]) == 0
    out = capsys.readouterr().out
    assert "store in PostgreSQL" in out and "sessions in postgresql://" in out
    assert main(["info", "--store", url]) == 0
    info = capsys.readouterr().out
    assert "vectors: 9 (demo-notes: 9)" in info
    assert "graphs: 1 (demo: 4 entities, 3 relations)" in info
    assert "pending tool calls: 1 (1 EXECUTED)" in info
    assert main(["demo", "--store", url, "--fresh"]) == 1
    assert "--fresh deletes the --db file" in capsys.readouterr().err

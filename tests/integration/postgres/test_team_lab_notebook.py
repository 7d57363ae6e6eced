"""notebooks/08-team-lab.ipynb on a PostgreSQL server: with ``AGCORE_STORE_URL`` set, the same
cells (under nbval, comparing outputs) run the workers and the live tree on the server."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from agcore_lab.store.postgres import PostgresStore

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.timeout(300)


def test_the_team_lab_notebook_runs_on_postgres(postgres_url: str) -> None:
    schema = "nb_" + uuid.uuid4().hex[:10]
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}schema={schema}"
    env = dict(os.environ, AGCORE_STORE_URL=url)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--nbval",
            "--nbval-current-env",
            "--nbval-sanitize-with",
            "notebooks/nbval_sanitize.cfg",
            "notebooks/08-team-lab.ipynb",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    store = PostgresStore(postgres_url, schema=schema)  # the tree is on the server
    sessions = store.list_sessions()
    assert sorted(s.agent_name for s in sessions) == ["lead"] + ["researcher"] * 6
    store.close()

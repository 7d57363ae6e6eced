"""A real ``agcore-lab serve`` process on 127.0.0.1, with its own agents module and a free port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.integration.serve.agents_source import SOURCE

TOKEN = "s3cret"
ROOT = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    """A running server: where it listens, its files, its output."""

    port: int
    workdir: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    output: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db(self) -> Path:
        return self.workdir / "lab.db"

    def tool_runs(self) -> list[str]:
        return self.log_path.read_text().splitlines()

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        )


def _command() -> list[str]:
    script = shutil.which("agcore-lab")
    return [script] if script else [sys.executable, "-m", "agcore_lab"]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    (tmp_path / "mylab").mkdir()
    (tmp_path / "mylab" / "__init__.py").write_text("")
    (tmp_path / "mylab" / "agents.py").write_text(SOURCE)
    log_path = tmp_path / "tool-runs.log"
    log_path.touch()
    port = free_port()
    env = dict(os.environ, AGCORE_TEST_TOOL_LOG=str(log_path))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("AGCORE_TOKEN", None)
    env.pop("AGCORE_STORE_URL", None)
    output = tmp_path / "server.log"
    argv = [
        *_command(),
        "serve",
        "--store",
        "sqlite:///lab.db",
        "--agents",
        "mylab.agents:AGENTS",
        "--port",
        str(port),
        "--token",
        TOKEN,
    ]
    with output.open("wb") as sink:
        process = subprocess.Popen(
            argv, cwd=tmp_path, env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    server = Served(port, tmp_path, process, log_path, output)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise AssertionError("the server exited:\n" + output.read_text())
            try:
                if httpx.get(server.base_url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("the server did not start:\n" + output.read_text())
            time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    assert TOKEN not in output.read_text(), "the token appeared in the server's output"

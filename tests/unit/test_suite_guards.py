"""The suite's own guards: no real model call escapes, and child processes' temporary files
go to a per-run directory that is removed at the end."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from agcore_lab.llm.messages import UserMessage
from agcore_lab.llm.openai import OpenAIChatModel
from agcore_lab.rag import OpenAIEmbedding


def test_a_real_chat_call_is_blocked() -> None:
    model = OpenAIChatModel("gpt-4o-mini", api_key="sk-x", max_retries=0)
    with pytest.raises(RuntimeError, match="real model HTTP call to 'api.openai.com'"):
        asyncio.run(model.complete([UserMessage(content="hi")]))


def test_a_real_embedding_call_is_blocked() -> None:
    embedding = OpenAIEmbedding("text-embedding-3-small", api_key="sk-x", max_retries=0)
    with pytest.raises(RuntimeError, match="real model HTTP call"):
        embedding.embed(["hi"])


def test_child_processes_get_the_per_run_tmpdir(run_tmpdir: str) -> None:
    assert Path(run_tmpdir).is_dir() and Path(run_tmpdir).name.startswith("agcore-tests-")
    assert not tempfile.gettempdir().startswith(run_tmpdir)  # this process keeps its own
    made = subprocess.run(
        [sys.executable, "-c", "import tempfile; print(tempfile.mkdtemp())"],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ.copy(),
    ).stdout.strip()
    assert Path(made).parent == Path(run_tmpdir)  # what a notebook's mkdtemp() makes

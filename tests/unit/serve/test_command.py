"""``agcore-lab serve`` argument handling: agents, auth rules, clear errors (no server runs
here; tests/integration/serve starts a real one)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agcore_lab.cli import main
from agcore_lab.errors import ConfigurationError
from agcore_lab.serve.command import load_agents

AGENTS = """
from agcore_lab import Agent, ScriptedModel
AGENTS = {"a": Agent(name="a", model=ScriptedModel()), "b": Agent(name="b", model=ScriptedModel())}
ONE = Agent(name="one", model=ScriptedModel())
WRONG = [1, 2]
"""


@pytest.fixture
def agents_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "servelab_agents.py").write_text(AGENTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "servelab_agents"
    sys.modules.pop("servelab_agents", None)


def test_load_agents_takes_a_dict_a_list_or_one_agent(agents_module: str) -> None:
    assert [a.name for a in load_agents(f"{agents_module}:AGENTS")] == ["a", "b"]
    assert [a.name for a in load_agents(f"{agents_module}:ONE")] == ["one"]


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("no_colon", "MODULE:ATTR"),
        ("servelab_missing_module:X", "cannot import"),
        ("{m}:MISSING", "no attribute"),
        ("{m}:WRONG", "list or dict of Agent"),
    ],
)
def test_load_agents_errors_say_what_is_wrong(agents_module: str, spec: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        load_agents(spec.format(m=agents_module))


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--no-auth", "--host", "0.0.0.0"], "only allowed on a loopback host"),
        (["--no-auth", "--token", "abcd"], "not both"),
        ([], "a token is required"),
        (["--token", "abcd", "--store", "mysql://db/x"], "no store backend"),
        (["--token", "abcd", "--agents", "nope"], "MODULE:ATTR"),
    ],
)
def test_refusals_are_one_line_and_exit_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGCORE_TOKEN", raising=False)
    assert main(["serve", "--store", ":memory:", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agcore-lab serve: ") and says in err
    assert "abcd" not in err

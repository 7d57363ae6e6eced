"""``--store URL`` and ``AGCORE_STORE_URL`` in the ``%agcore`` commands that need a manager."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython.testing import globalipapp
from IPython.utils.capture import capture_output

from agcore_lab import Agent, ScriptedModel, SessionManager, SqliteStore
from agcore_lab.jupyter.magics import AgcoreMagics


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = globalipapp.get_ipython()  # starts the test shell, or gives the running one
    shell.run_line_magic("load_ext", "agcore_lab")
    return shell


@pytest.fixture
def magics(ip: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[AgcoreMagics]:
    instance = ip.magics_manager.registry["AgcoreMagics"]
    instance.last_manager_session = None
    monkeypatch.delenv("AGCORE_STORE_URL", raising=False)
    names = set(ip.user_ns)
    yield instance
    for name in set(ip.user_ns) - names:
        del ip.user_ns[name]
    for manager in instance.__dict__.pop("_store_managers", {}).values():
        manager.store.close()


def _lab(path: Path, *names: str) -> list[str]:
    store = SqliteStore(path)
    manager = SessionManager(store, watch_interval=None)
    sids = [manager.create_sync(Agent(name=name, model=ScriptedModel())) for name in names]
    store.close()
    return sids


def _run(ip: Any, text: str) -> tuple[Any, str]:
    with capture_output() as captured:
        result = ip.run_line_magic("agcore", text)
    return result, captured.stdout + captured.stderr


def test_store_opens_a_manager_on_that_url(ip: Any, magics: AgcoreMagics, tmp_path: Path) -> None:
    sids = _lab(tmp_path / "lab.db", "a", "b")
    url = f"sqlite:///{tmp_path / 'lab.db'}"
    frame, _ = _run(ip, f"sessions --store {url}")
    assert isinstance(frame, pd.DataFrame) and sorted(frame["session_id"]) == sorted(sids)
    ckpt = SqliteStore(tmp_path / "lab.db").list_checkpoints(sids[0])[0].ckpt_id
    magics.store_manager(url).register_agent(Agent(name="a", model=ScriptedModel()))
    _, out = _run(ip, f"fork {ckpt} --store {url}")
    assert f"forked {sids[0]}" in out
    again, _ = _run(ip, f"sessions --store {url}")  # the same manager, kept for the URL
    assert len(again) == 3
    assert len(magics.__dict__["_store_managers"]) == 1
    calls, _ = _run(ip, f"approvals --store {url}")
    assert isinstance(calls, pd.DataFrame) and calls.empty


def test_without_a_manager_the_environment_variable_names_the_store(
    ip: Any, magics: AgcoreMagics, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sids = _lab(tmp_path / "env.db", "a")
    _, out = _run(ip, "sessions")
    assert "no SessionManager in the notebook" in out and "AGCORE_STORE_URL" in out
    monkeypatch.setenv("AGCORE_STORE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    frame, _ = _run(ip, "sessions")
    assert list(frame["session_id"]) == sids
    # A manager in the notebook still wins over the variable.
    ip.user_ns["mine"] = SessionManager(SqliteStore(":memory:"), watch_interval=None)
    frame, _ = _run(ip, "sessions")
    assert frame.empty


def test_store_and_manager_together_and_a_bad_url_are_one_line(
    ip: Any, magics: AgcoreMagics, tmp_path: Path
) -> None:
    ip.user_ns["mine"] = SessionManager(SqliteStore(":memory:"), watch_interval=None)
    _, out = _run(ip, f"sessions --manager mine --store sqlite:///{tmp_path / 'x.db'}")
    assert "give --manager VAR or --store URL, not both" in out
    _, out = _run(ip, "tree --store mysql://db/lab")
    assert "cannot open the store 'mysql://db/lab'" in out and "Traceback" not in out
    assert not (tmp_path / "x.db").exists()

"""``open_store(url)``: sqlite URLs, plain paths, :memory:, AGCORE_STORE_URL, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from agcore_lab import SqliteStore, open_store
from agcore_lab.errors import ConfigurationError
from agcore_lab.store.base import SessionRecord


def _roundtrip(store: object) -> None:
    assert isinstance(store, SqliteStore)
    store.create_session(SessionRecord(session_id="ses_1", agent_name="a"))
    assert store.get_session("ses_1") is not None
    store.close()


def test_sqlite_urls_and_paths_open_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _roundtrip(open_store("sqlite:///rel.db"))
    assert (tmp_path / "rel.db").exists()
    absolute = tmp_path / "sub" / "abs.db"
    _roundtrip(open_store(f"sqlite:///{absolute}"))  # sqlite:////tmp/... : an absolute path
    assert absolute.exists()
    again = open_store(absolute)  # a Path
    assert isinstance(again, SqliteStore) and again.get_session("ses_1") is not None
    again.close()
    plain = open_store(str(tmp_path / "plain.db"))
    assert isinstance(plain, SqliteStore) and plain.path == str(tmp_path / "plain.db")
    plain.close()


def test_memory_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for url in (":memory:", "sqlite://", "sqlite:///:memory:"):
        store = open_store(url)
        assert isinstance(store, SqliteStore) and store.path == ":memory:"
        _roundtrip(store)
    assert list(tmp_path.iterdir()) == []


def test_the_environment_variable_and_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGCORE_STORE_URL", "sqlite:///from-env.db")
    _roundtrip(open_store())
    assert (tmp_path / "from-env.db").exists()
    monkeypatch.delenv("AGCORE_STORE_URL")
    _roundtrip(open_store())
    assert (tmp_path / "agcore.db").exists()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://db/lab", "mysql://"),
        ("sqlite://relative.db", "three slashes"),
        ("sqlite:///", "names no file"),
        ("  ", "empty"),
    ],
)
def test_other_urls_are_a_clear_error(
    url: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match=says):
        open_store(url)
    assert list(tmp_path.iterdir()) == []

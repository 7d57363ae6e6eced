"""The command line: --version, demo --help, info DB, and one clear line for any error."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agcore_lab import SqliteStore, __version__
from agcore_lab.cli import main
from agcore_lab.demo import run_demo


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agcore_lab", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"agcore-lab {__version__}"


def test_demo_help_says_what_the_demo_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    text = capsys.readouterr().out
    for words in ("tool calls", "fork", "rollback", "approved", "sub-agents", "retrieval"):
        assert words in text
    assert "ScriptedModel" in text and "--fresh" in text and "appends" in text


def test_a_file_that_is_not_a_database_is_one_line_and_no_traceback(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n" * 50)
    for args in (("info", str(notes)), ("demo", "--db", str(notes))):
        done = _cli(*args, cwd=tmp_path)
        assert done.returncode == 1
        assert "Traceback" not in done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("agcore-lab: error:")
        assert "not an agcore_lab (SQLite) database" in lines[0]
    assert notes.read_text().startswith("not a database")
    assert main(["demo", "--db", str(notes), "--fresh"]) == 1  # --fresh never deletes it
    assert notes.exists()


def test_db_in_a_missing_directory_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    done = _cli("demo", "--db", str(tmp_path / "missing" / "demo.db"), cwd=tmp_path)
    assert done.returncode == 2 and "does not exist" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "missing").exists()


def test_info_shows_what_the_file_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "demo.db"
    run_demo(db, out=lambda _line: None)
    before = db.read_bytes()
    assert main(["info", str(db)]) == 0
    text = capsys.readouterr().out
    raw = sqlite3.connect(db)
    sessions = raw.execute("select count(*) from sessions").fetchone()[0]
    checkpoints = raw.execute("select count(*) from checkpoints").fetchone()[0]
    raw.close()
    assert f"sessions: {sessions}\n" in text and f"checkpoints: {checkpoints}\n" in text
    assert "schema version: " in text and "bytes)" in text
    assert "pending tool calls: 1 (1 EXECUTED)" in text
    assert "vectors: 9 (demo-notes: 9)" in text
    assert "graphs: 1 (demo: 4 entities, 3 relations)" in text
    assert db.read_bytes() == before  # read without writing


def test_info_on_a_missing_file_is_one_line(tmp_path: Path) -> None:
    done = _cli("info", str(tmp_path / "nope.db"), cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.startswith("agcore-lab: error: no database")
    assert not (tmp_path / "nope.db").exists()


def test_demo_output_explains_itself_and_a_rerun_says_it_appends(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    first: list[str] = []
    run_demo(db, out=first.append)
    text = "\n".join(first)
    assert "session tree: 2 sessions (the writer and 1 fork)" in text
    assert "checkpoints of the writer: 5 (4 automatic + 1 rollback marker)" in text
    assert "4 checkpoints, newest first" in text and "it now has 5 checkpoints" in text
    assert "(writer, 1 turn)" in text and "1 turns" not in text
    assert "calculator: 4 turns, 2 tool calls" in text
    assert "appending" not in text
    # The RAG section keeps the numbered layout: no blank line and header of its own.
    step = text[text.index("8. Retrieval") : text.index("9. A knowledge graph")]
    assert "\n\n" not in step.strip()
    assert all(line.startswith("  ") for line in step.strip().splitlines()[1:])
    second: list[str] = []
    run_demo(db, out=second.append)
    assert any("appending" in line and "10 sessions" in line for line in second)
    fresh = run_demo(db, out=lambda _line: None, fresh=True)
    assert fresh.sessions_in_store == 10


def test_info_takes_a_store_url_and_the_environment_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "lab.db"
    SqliteStore(db).close()
    assert main(["info", "--store", f"sqlite:///{db}"]) == 0
    by_url = capsys.readouterr().out
    assert f"file: {db} (" in by_url and "sessions: 0\n" in by_url
    monkeypatch.setenv("AGCORE_STORE_URL", f"sqlite:///{db}")
    assert main(["info"]) == 0
    assert capsys.readouterr().out == by_url
    monkeypatch.delenv("AGCORE_STORE_URL")
    assert main(["info"]) == 1
    assert "give DB or --store URL (or set AGCORE_STORE_URL)" in capsys.readouterr().err
    assert main(["info", str(db), "--store", str(db)]) == 1
    assert "give the store once" in capsys.readouterr().err
    assert main(["info", "--store", "mysql://x/y"]) == 1
    assert "mysql://" in capsys.readouterr().err


def test_migrate_copies_a_sqlite_lab_to_another_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "demo.db"
    run_demo(db, out=lambda _line: None)
    assert main(["info", str(db)]) == 0
    held = capsys.readouterr().out.splitlines()[2:]  # sessions, checkpoints, ..., graphs
    assert main(["migrate", str(db), f"sqlite:///{tmp_path / 'copy.db'}"]) == 0
    out = capsys.readouterr().out
    assert "verified: every count matches in the destination" in out
    assert "vectors 'demo-notes': 9 documents" in out
    assert main(["info", str(tmp_path / "copy.db")]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == held


def test_migrate_names_what_is_wrong_with_a_source_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for source, says in (
        ("mysql://db/lab", "no store backend for 'mysql://'"),
        ("sqlite://lab.db", "three slashes"),
        (f"sqlite:///{tmp_path / 'none.db'}", "no source database"),
        (":memory:", "nothing to copy"),
    ):
        assert main(["migrate", source, str(tmp_path / "out.db")]) == 1
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1, (source, err)
    assert not (tmp_path / "out.db").exists()

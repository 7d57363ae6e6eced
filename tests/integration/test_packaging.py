"""The wheel a user installs: it ships the Apache-2.0 LICENSE the metadata names and every
view's front-end file."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``pip wheel`` builds from this checkout (built once for the module)."""
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("agcore_lab-*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_ships_the_license(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        licenses = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert licenses, names
        text = archive.read(licenses[0]).decode()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert text == (ROOT / "LICENSE").read_text()
    assert b"License-Expression: Apache-2.0" in metadata
    assert b"License-File: LICENSE" in metadata


@pytest.mark.slow
def test_the_wheel_ships_every_views_front_end_file(wheel: Path) -> None:
    # Each view family keeps its ESM/CSS beside it (jupyter/<family>/...): all must ship, or
    # the views render nothing when installed from the wheel (no CDN, no build step).
    package = ROOT / "agcore_lab"
    front_end = sorted(
        p.relative_to(ROOT).as_posix()
        for p in package.rglob("*")
        if p.suffix in (".js", ".css") and "__pycache__" not in p.parts
    )
    assert any(name.startswith("agcore_lab/jupyter/tree/") for name in front_end), front_end
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        missing = [name for name in front_end if name not in names]
        assert not missing, missing
        for name in front_end:
            assert archive.read(name) == (ROOT / name).read_bytes(), name

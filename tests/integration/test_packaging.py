"""The wheel a user installs: it ships the Apache-2.0 LICENSE the metadata names."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_wheel_ships_the_license(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("agcore_lab-*.whl")
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

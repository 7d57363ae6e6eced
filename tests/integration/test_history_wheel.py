"""The wheel ships the checkpoint history's front-end (no CDN, no build step at install)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("format.js", "canvas.js", "table.js", "history.js", "history.css")


@pytest.mark.slow
def test_the_wheel_ships_the_history_front_end(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("agcore_lab-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {
            name: archive.read(name).decode()
            for name in archive.namelist()
            if name.startswith("agcore_lab/jupyter/history/")
        }
    for part in PARTS:
        source = (ROOT / "agcore_lab" / "jupyter" / "history" / part).read_text()
        assert shipped[f"agcore_lab/jupyter/history/{part}"] == source
    front_end = "".join(v for k, v in shipped.items() if k.endswith((".js", ".css")))
    assert "http://" not in front_end and "https://" not in front_end  # nothing fetched

"""``.ci/run`` removes its virtualenv however it ends (here: the first pip install fails)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON3 = """#!/bin/sh
# "python3 -m venv DIR": a venv whose python fails at once (no network, no real install).
mkdir -p "$3/bin"
printf 'PATH="%s/bin:$PATH"; export PATH\\ndeactivate() { :; }\\n' "$3" > "$3/bin/activate"
printf '#!/bin/sh\\nexit 3\\n' > "$3/bin/python"
chmod +x "$3/bin/python"
"""


def test_ci_run_removes_its_virtualenv_when_it_fails(tmp_path: Path) -> None:
    bin_dir, tmp = tmp_path / "bin", tmp_path / "tmp"
    bin_dir.mkdir()
    tmp.mkdir()
    fake = bin_dir / "python3"
    fake.write_text(FAKE_PYTHON3)
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TMPDIR": str(tmp)}
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stderr
    assert list(tmp.iterdir()) == []  # the virtualenv's directory is gone

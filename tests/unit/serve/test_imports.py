"""The serve extra stays out of ``import agcore_lab`` and of the command line's start-up."""

from __future__ import annotations

import subprocess
import sys


def _loaded(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def test_neither_the_package_nor_the_cli_imports_fastapi_or_uvicorn() -> None:
    loaded = _loaded(
        "import sys, agcore_lab, agcore_lab.cli, agcore_lab.serve, agcore_lab.serve.command\n"
        "print(','.join(m for m in ('fastapi', 'starlette', 'uvicorn') if m in sys.modules))"
    )
    assert loaded == ""


def test_the_serve_package_never_imports_jupyter_libraries() -> None:
    loaded = _loaded(
        "import sys\n"
        "from agcore_lab.serve import create_app, BackgroundServer\n"
        "import agcore_lab.serve.routes_page\n"
        "print(','.join(m for m in ('IPython', 'ipywidgets', 'traitlets') if m in sys.modules))"
    )
    assert loaded == ""

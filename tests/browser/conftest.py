"""Fixtures for browser tests: a real JupyterLab server and headless Chromium (see docs/jupyter.md).

- ``jupyter_lab``: one JupyterLab per test session, on loopback, on a free port, with its config,
  settings, workspaces, runtime and IPython dirs under a temporary directory; token and password
  off (loopback only); ``expose_app_in_browser`` so tests can reach ``window.jupyterapp``. Ready
  when ``/api/status`` answers; stopped by its pid at the end.
- ``browser_context``: Chromium through Playwright's sync API, with a fresh profile directory.
  ``/usr/bin/chromium`` (Debian) first, else Playwright's own browser
  (``python -m playwright install chromium`` on a laptop).
- ``page``: a new tab per test; JavaScript dialogs (``alert``) are recorded and dismissed.

Without playwright or a browser the tests are skipped — unless ``AGCORE_REQUIRE_BROWSER=1``
(set in CI), which turns the skip into a failure.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

DEBIAN_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 2200}  # tall: full_page misses JupyterLab's inner scroll
SERVER_START_TIMEOUT = 60.0


def _unavailable(reason: str) -> None:
    if os.environ.get("AGCORE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (AGCORE_REQUIRE_BROWSER=1: browser tests must run)", pytrace=False)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class JupyterLab:
    """A running JupyterLab server and helpers to drive it from a Playwright page."""

    url: str
    root_dir: Path
    tmp_dir: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    dialogs: list[str] = field(default_factory=list)

    def write_notebook(self, name: str, cells: list[str]) -> str:
        """Write a notebook of code ``cells`` (kernel ``python3``) into the root dir."""
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nb.cells = [nbformat.v4.new_code_cell(cell) for cell in cells]
        nbformat.write(nb, str(self.root_dir / name))
        return name

    def run_cell(self, page: Any, index: int) -> None:
        """Run one cell of the open notebook (by position)."""
        page.evaluate(
            """(index) => {
              const panel = window.jupyterapp.shell.currentWidget;
              panel.content.activeCellIndex = index;
              return window.jupyterapp.commands.execute('notebook:run-cell');
            }""",
            index,
        )

    def screenshot(self, page: Any, name: str) -> Path:
        """A screenshot into the server's temp dir (and into ``$AGCORE_SCREENSHOTS`` if set,
        for people to look at)."""
        path = self.tmp_dir / f"{name}.png"
        page.screenshot(path=str(path))
        keep = os.environ.get("AGCORE_SCREENSHOTS")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            (Path(keep) / path.name).write_bytes(path.read_bytes())
        return path

    def set_theme(self, page: Any, theme: str) -> None:
        """Switch JupyterLab's theme (``"JupyterLab Light"`` / ``"JupyterLab Dark"``) and wait
        until the page uses it."""
        page.evaluate(
            "(theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})",
            theme,
        )
        light = "true" if "Light" in theme else "false"
        page.wait_for_function(f"document.body.dataset.jpThemeLight === '{light}'", timeout=30_000)
        page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=30_000)
        page.wait_for_timeout(300)  # the theme's CSS settles

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the server's log, for failure messages."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def open_notebook(self, page: Any, name: str, timeout: float = 60_000) -> None:
        """Open ``name`` (relative to the root dir) and wait until its kernel is idle."""
        # ?reset: start from an empty workspace, so an earlier test's notebook is not restored
        # beside this one (and made current while this test runs).
        page.goto(f"{self.url}/lab/tree/{name}?reset")
        page.wait_for_selector(".jp-Notebook", timeout=timeout)
        self.wait_for_idle(page, timeout)

    def wait_for_idle(self, page: Any, timeout: float = 60_000) -> None:
        """Wait until the current notebook's kernel reports ``idle``."""
        page.wait_for_function(
            "window.jupyterapp?.shell?.currentWidget?.sessionContext?.session?.kernel?.status"
            " === 'idle'",
            timeout=timeout,
        )

    def run_all_cells(self, page: Any) -> None:
        """Run every cell of the current notebook (returns at once; wait on the outputs)."""
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")


def _wait_until_ready(lab: JupyterLab) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if lab.process.poll() is not None:
            pytest.fail(f"jupyter lab exited with {lab.process.returncode}:\n{lab.log_tail()}")
        try:
            with urllib.request.urlopen(f"{lab.url}/api/status", timeout=2) as response:
                if response.status == 200:
                    json.load(response)
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            pass
        time.sleep(0.2)
    pytest.fail(f"jupyter lab did not answer /api/status in time:\n{lab.log_tail()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    # SIGTERM lets the server shut its kernels down; SIGKILL (same pid) if it hangs.
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


# Module scope, not session: Playwright's sync API keeps an asyncio loop running on the main
# thread while it is started, which would break asyncio.run() in every later test.
@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Chromium browser context with a fresh profile (Playwright sync API)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install playwright)")
    playwright = sync_playwright().start()
    try:
        executable = DEBIAN_CHROMIUM if Path(DEBIAN_CHROMIUM).exists() else None
        if executable is None:
            own = playwright.chromium.executable_path
            if not own or not Path(own).exists():
                _unavailable(
                    "no browser: install Debian's chromium (/usr/bin/chromium) or run "
                    "'python -m playwright install chromium'"
                )
        profile = tmp_path_factory.mktemp("chromium-profile")
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=executable,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport=VIEWPORT,
        )
    except BaseException:
        playwright.stop()
        raise
    try:
        yield context
    finally:
        context.close()
        playwright.stop()


@pytest.fixture(scope="module")
def jupyter_lab(
    browser_context: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JupyterLab]:
    """A real JupyterLab on loopback with isolated state; root dir is ``lab.root_dir``."""
    if not _has_module("jupyterlab"):
        _unavailable("jupyterlab is not installed (pip install jupyterlab)")
    tmp = tmp_path_factory.mktemp("jupyterlab")
    root = tmp / "root"
    root.mkdir()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp / "cfg"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "ws"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "run"),
        "IPYTHONDIR": str(tmp / "ipython"),
        "PYTHONUNBUFFERED": "1",
    }
    # Save widget state with the notebook (Settings → Jupyter Widgets → Save widget state):
    # a saved notebook then shows each view's last state with no kernel (see docs/jupyter.md).
    widgets_settings = tmp / "settings" / "@jupyter-widgets" / "jupyterlab-manager"
    widgets_settings.mkdir(parents=True)
    (widgets_settings / "plugin.jupyterlab-settings").write_text('{"saveState": true}')
    jupyter = [sys.executable, "-m", "jupyter"]
    subprocess.run(
        [*jupyter, "labextension", "disable", "@jupyterlab/apputils-extension:announcements"],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    port = _free_port()
    log_path = tmp / "jupyterlab.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                *jupyter,
                "lab",
                "--no-browser",
                "--allow-root",
                "--ServerApp.token=",
                "--IdentityProvider.token=",
                "--ServerApp.password=",
                "--ip=127.0.0.1",
                f"--port={port}",
                "--ServerApp.port_retries=0",
                f"--ServerApp.root_dir={root}",
                "--LabApp.expose_app_in_browser=True",
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    lab = JupyterLab(
        url=f"http://127.0.0.1:{port}",
        root_dir=root,
        tmp_dir=tmp,
        process=process,
        log_path=log_path,
    )
    try:
        _wait_until_ready(lab)
        yield lab
    finally:
        _stop(process)


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


@pytest.fixture
def page(browser_context: Any, jupyter_lab: JupyterLab) -> Iterator[Any]:
    """A new tab; ``alert``/``confirm`` dialogs are recorded in ``jupyter_lab.dialogs``."""
    tab = browser_context.new_page()
    jupyter_lab.dialogs.clear()

    def _dialog(dialog: Any) -> None:
        jupyter_lab.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    tab.on("dialog", _dialog)
    try:
        yield tab
    finally:
        tab.close()

"""notebooks/08-team-lab.ipynb in a real JupyterLab: the tree browser follows the two worker
processes by itself (their change events), until it shows the lead and its six children."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "08-team-lab.ipynb"
# The code cells up to the workers' (by position, markdown included); the later cells read
# the tree back and close the browser.
SETUP, WORKER, BROWSER, WORKERS = 1, 3, 5, 6

pytestmark = pytest.mark.browser


def test_the_tree_browser_follows_the_workers(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    shutil.copy(NOTEBOOK, jupyter_lab.root_dir / "08-team-lab.ipynb")
    jupyter_lab.open_notebook(page, "08-team-lab.ipynb")
    for index in (SETUP, WORKER, BROWSER):
        jupyter_lab.run_cell(page, index)
    rows = page.locator(".agc-tree-browser tr.agc-tt-row")
    expect(rows).to_have_count(1, timeout=60_000)  # the lead alone, before the workers
    expect(rows.first.locator("td[data-key=agent]")).to_have_text("lead")
    jupyter_lab.wait_for_idle(page)
    jupyter_lab.run_cell(page, WORKERS)
    expect(rows).to_have_count(7, timeout=60_000)
    expect(rows.locator("td[data-key=agent]", has_text="researcher")).to_have_count(6)
    page.wait_for_timeout(200)  # the cell is still running: the kernel is busy
    jupyter_lab.wait_for_idle(page, timeout=180_000)  # both workers finished, the cell ended
    shown = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
    assert "children in the browser: 6" in shown, shown  # what the cell printed (or raised)
    jupyter_lab.screenshot(page, "team_lab")
    assert jupyter_lab.dialogs == []

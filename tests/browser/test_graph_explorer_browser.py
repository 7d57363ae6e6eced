"""GraphExplorer in real JupyterLab: N nodes drawn in the sandboxed frame, injection inert."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

XSS = "<img src=x onerror=alert(1)> href"
N = 7  # six plain entities and the injection one

SETUP = f"""\
from agcore_lab.jupyter import GraphExplorer
from agcore_lab.kg import GraphEntity, GraphRelation, InMemoryGraph

g = InMemoryGraph()
for i in range(6):
    g.add_entity_sync(GraphEntity(id=f"e{{i}}", entity_type="even" if i % 2 else "odd"))
    if i:
        g.add_relation_sync(GraphRelation(source=f"e{{i - 1}}", target=f"e{{i}}"))
g.add_entity_sync(GraphEntity(id="evil", name={XSS!r}, description={XSS!r}))
g.add_relation_sync(GraphRelation(source="e0", target="evil", relation_type="knows"))
explorer = GraphExplorer(g)
explorer"""

# Runs in every frame (the srcdoc one too) before its own scripts: records alert() calls, which
# the sandbox (no allow-modals) would otherwise swallow without a dialog.
ALERT_TRAP = "window.__agcAlerts = []; window.alert = (m) => window.__agcAlerts.push(String(m));"

pytestmark = pytest.mark.browser


def _graph_frame(iframe: Any, nodes: int, timeout: float = 60.0) -> Any:
    """The iframe's document once its network shows ``nodes`` nodes (the frame is new on
    every redraw: the widget's HTML is replaced)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = iframe.element_handle().content_frame()
        try:
            if frame is not None and frame.evaluate(
                f"!!window.network && window.network.body.nodeIndices.length === {nodes}"
            ):
                assert frame.url == "about:srcdoc"
                return frame
        except Exception as exc:  # the frame was replaced while we asked
            if "Execution context was destroyed" not in str(exc) and "detached" not in str(exc):
                raise
        time.sleep(0.2)
    raise AssertionError(f"the graph frame did not show {nodes} nodes in {timeout} s")


def test_graph_explorer_in_jupyterlab(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    page.add_init_script(ALERT_TRAP)
    jupyter_lab.write_notebook("graph_explorer.ipynb", [SETUP])
    jupyter_lab.open_notebook(page, "graph_explorer.ipynb")
    jupyter_lab.run_all_cells(page)

    explorer = page.locator(".jp-OutputArea-output .agc-graph-explorer")
    expect(explorer).to_be_visible(timeout=60_000)
    iframe = explorer.locator("iframe.agc-graph-frame")
    expect(iframe).to_have_attribute("sandbox", "allow-scripts")
    frame = _graph_frame(iframe, N)
    assert frame.evaluate("window.network.body.nodeIndices.length") == N
    assert frame.evaluate("window.network.body.edgeIndices.length") == 6
    # The injection entity: its label is the literal text, and no element was made of it.
    label = frame.evaluate("window.network.body.data.nodes.get('evil').label")
    assert label == XSS
    assert frame.evaluate("document.querySelectorAll('img').length") == 0
    assert frame.evaluate("document.getElementById('agc-data').textContent").count("<") == 0

    # Hover the node: the tooltip shows the name and description as text.
    frame.evaluate("window.network.stopSimulation()")
    spot = json.loads(
        frame.evaluate(
            "JSON.stringify(window.network.canvasToDOM(window.network.getPosition('evil')))"
        )
    )
    box = iframe.bounding_box()
    page.mouse.move(box["x"] + spot["x"], box["y"] + spot["y"])
    frame.wait_for_function(
        "[...document.querySelectorAll('.vis-tooltip')].some("
        "t => t.style.visibility !== 'hidden' && t.textContent.includes('onerror'))",
        timeout=15_000,
    )
    tooltip = frame.evaluate(
        "[...document.querySelectorAll('.vis-tooltip')].map(t => t.textContent).join('|')"
    )
    assert XSS in tooltip
    assert frame.evaluate("document.querySelectorAll('img').length") == 0

    # Search, then walk both ways: the table lists the neighbours; names stay text.
    explorer.locator("input[type=text]").fill("onerror")
    explorer.locator("button.jupyter-button", has_text="Search").click()
    status = explorer.locator(".agc-status").last
    expect(status).to_contain_text(XSS + " (evil): 0 related", timeout=30_000)
    explorer.locator("button", has_text="both").click()
    expect(status).to_contain_text(XSS + " (evil): 1 related", timeout=30_000)
    expect(explorer.locator("table.agc-related td").first).to_have_text("e0")
    expect(explorer.locator("select option").first).to_contain_text(XSS)
    assert explorer.locator("img").count() == 0
    frame = _graph_frame(iframe, 2)

    time.sleep(0.5)
    trapped = [f.evaluate("window.__agcAlerts ?? null") for f in page.frames]
    assert trapped[0] == [], trapped  # the trap is installed in JupyterLab's page ...
    assert all(t in ([], None) for t in trapped), trapped  # ... and nothing fired anywhere
    assert frame.evaluate("window.__agcAlerts") == []
    assert jupyter_lab.dialogs == []
    shot = jupyter_lab.tmp_dir / "graph_explorer.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000

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
    _hover_node(page, iframe, frame, "evil", "onerror")
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


READ_CENTRE = 'print("centre:", explorer.center, "clicked:", clicked)'

CLICKS = """\
clicked = []
explorer.on_node_click(clicked.append)"""


# Records, inside the frame, the nodes of every click vis-network saw (the page's own handler
# posts the same click to the notebook).
_SEEN_CLICKS = """() => {
  if (!window.__agcSeen) {
    window.__agcSeen = [];
    window.network.on("click", (p) => window.__agcSeen.push(p.nodes.map(String)));
  }
}"""


def _node_spot(frame: Any, node_id: str) -> tuple[float, float]:
    spot = json.loads(
        frame.evaluate(
            f"JSON.stringify(window.network.canvasToDOM(window.network.getPosition({node_id!r})))"
        )
    )
    return round(spot["x"], 1), round(spot["y"], 1)


def _still_spot(iframe: Any, frame: Any, node_id: str) -> tuple[float, float]:
    """Where node ``node_id`` is on the page once the layout is still: the same place (and the
    frame's box the same) twice, 0.2 s apart, the physics stopped each time."""
    frame.evaluate("window.network.stopSimulation()")
    iframe.scroll_into_view_if_needed()
    spot, box = _node_spot(frame, node_id), iframe.bounding_box()
    for _ in range(50):
        time.sleep(0.2)
        frame.evaluate("window.network.stopSimulation()")
        now, box_now = _node_spot(frame, node_id), iframe.bounding_box()
        if (now, box_now) == (spot, box):
            break
        spot, box = now, box_now
    return box["x"] + spot[0], box["y"] + spot[1]


def _hover_node(
    page: Any, iframe: Any, frame: Any, node_id: str, text: str, tries: int = 5
) -> None:
    """Rest the pointer on node ``node_id`` until its tooltip shows ``text`` (a hover has no
    effect but the tooltip, so one that missed the node is simply tried again)."""
    shown = (
        "[...document.querySelectorAll('.vis-tooltip')].some("
        f"t => t.style.visibility !== 'hidden' && t.textContent.includes({text!r}))"
    )
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(tries):
        page.mouse.move(0, 0)
        page.mouse.move(*_still_spot(iframe, frame, node_id))
        try:
            frame.wait_for_function(shown, timeout=5_000)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"no tooltip with {text!r} over node {node_id} in {tries} tries")


def _click_node(page: Any, iframe: Any, frame: Any, node_id: str, tries: int = 5) -> None:
    """Click the drawn node ``node_id`` once, as a user would: on a still layout, at the node's
    place on the screen. A click the network did not see on that node (the layout moved under
    the pointer: a theme repaint restarts the physics) is tried again; it posted nothing."""
    frame.evaluate(_SEEN_CLICKS)
    for _ in range(tries):
        x, y = _still_spot(iframe, frame, node_id)
        before = frame.evaluate("window.__agcSeen.length")
        page.mouse.click(x, y)
        deadline = time.monotonic() + 5
        while frame.evaluate("window.__agcSeen.length") == before and time.monotonic() < deadline:
            time.sleep(0.1)
        seen = frame.evaluate("window.__agcSeen")[before:]
        if [node_id] in seen:
            return
        assert all(nodes == [] for nodes in seen), seen  # never a click on another node
    raise AssertionError(f"node {node_id} was not clicked in {tries} tries")


def _hex_to_rgb(value: str) -> str:
    digits = value.strip().lstrip("#")
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    r, g, b = (int(digits[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgb({r}, {g}, {b})"


def _rgb(frame: Any, expression: str) -> str:
    return str(frame.evaluate(f"getComputedStyle({expression}).backgroundColor"))


def test_graph_explorer_click_theme_and_legend(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    jupyter_lab.write_notebook("graph_click.ipynb", [SETUP, CLICKS, READ_CENTRE])
    jupyter_lab.open_notebook(page, "graph_click.ipynb")
    jupyter_lab.run_all_cells(page)
    shown = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    explorer = shown.locator(".jp-OutputArea-output .agc-graph-explorer")
    expect(explorer).to_be_visible(timeout=60_000)
    iframe = explorer.locator("iframe.agc-graph-frame")
    frame = _graph_frame(iframe, N)

    # The legend lists the entity types, as text, with their colours.
    legend = frame.evaluate(
        "[...document.querySelectorAll('.agc-legend-row')].map(r => r.textContent)"
    )
    assert legend == ["entity", "even", "odd"], legend
    # Light theme: the frame's background is JupyterLab's layout colour.
    lab_light = page.evaluate(
        "getComputedStyle(document.body).getPropertyValue('--jp-layout-color1').trim()"
    )
    assert lab_light.lower() in ("white", "#fff", "#ffffff"), lab_light
    assert _rgb(frame, "document.body") == "rgb(255, 255, 255)"
    jupyter_lab.screenshot(page, "graph_light")

    # Click node e3: the kernel re-centres on it and the callback saw it.
    _click_node(page, iframe, frame, "e3")
    status = explorer.locator(".agc-status").last
    expect(status).to_contain_text("e3 (e3): 1 related", timeout=30_000)
    frame = _graph_frame(iframe, 2)
    jupyter_lab.run_cell(page, 2)
    read_back = shown.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea-output")
    expect(read_back).to_have_text("centre: e3 clicked: ['e3']", timeout=30_000)

    # JupyterLab Dark: the frame follows by itself (no theme= argument), live.
    jupyter_lab.set_theme(page, "JupyterLab Dark")
    lab_dark = page.evaluate(
        "getComputedStyle(document.body).getPropertyValue('--jp-layout-color1').trim()"
    )
    frame.wait_for_function("window.agcTheme() === 'dark'", timeout=15_000)
    dark_bg = _rgb(frame, "document.body")
    jupyter_lab.screenshot(page, "graph_dark")
    jupyter_lab.set_theme(page, "JupyterLab Light")
    assert dark_bg == _hex_to_rgb(lab_dark), (dark_bg, lab_dark)  # exactly JupyterLab's
    assert dark_bg != "rgb(255, 255, 255)"
    frame.wait_for_function("window.agcTheme() === 'light'", timeout=15_000)
    assert _rgb(frame, "document.body") == "rgb(255, 255, 255)"  # back with the notebook
    assert jupyter_lab.dialogs == []

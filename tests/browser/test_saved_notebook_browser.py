"""A saved, executed notebook reopened after its kernel stopped shows every view.

The notebook shows a timeline (rolled back by a click), a session tree, a diff viewer, an
approval panel (approved by a click), a chunk inspector and a graph explorer. It is saved and
its kernel shut down. Opened again, each view renders from the saved widget state — the
rolled-back turn, the approved call — instead of "Error displaying widget: model not found".
A copy without widget state and not trusted here (as from GitHub) shows the static HTML
snapshot each view carries beside the widget (``text/html``); nbconvert's HTML export too.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

VIEWS = """\
from agcore_lab import Agent, ScriptedModel, SessionManager, Tool, ToolCall
from agcore_lab.jupyter import (ApprovalPanel, CheckpointTimeline, ChunkInspector, GraphExplorer,
                                SessionTreeBrowser, SlotDiffViewer)
from agcore_lab.kg import GraphEntity, GraphRelation, InMemoryGraph

def transfer(to: str, amount: int) -> str:
    \"\"\"Move money.\"\"\"
    return f"sent {amount} to {to}"

writer = Agent(name="writer", model=ScriptedModel())
bank = Agent(name="bank", model=ScriptedModel(
    [ToolCall(name="transfer", arguments={"to": "u2", "amount": 5}), "done"]),
    tools=[Tool.from_function(transfer, requires_approval=True, approval_timeout=600)])
manager = SessionManager(agents=[writer, bank])
sid = manager.create_sync(writer)
for i in range(3):
    manager.submit_turn_sync(sid, f"turn {i}")
session = manager.get_sync(sid)
session.fork_slot_sync("alt", switch=True)
session.submit_turn_sync("what if")
bank_sid = manager.create_sync(bank)
manager.submit_turn_sync(bank_sid, "pay u2")
graph = InMemoryGraph()
for name in ("ada", "engine"):
    graph.add_entity_sync(GraphEntity(id=name, entity_type="thing"))
graph.add_relation_sync(GraphRelation(source="ada", target="engine", relation_type="built"))
timeline = CheckpointTimeline(manager, sid)
display(timeline, SessionTreeBrowser(manager), SlotDiffViewer(session, "main", "alt"),
        ApprovalPanel(manager, tick=None), ChunkInspector("One. Two. Three. " * 20, chunk_size=40,
        chunk_overlap=0), GraphExplorer(graph))"""

pytestmark = pytest.mark.browser


def test_saved_notebook_shows_the_last_state_without_a_kernel(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    name = jupyter_lab.write_notebook("saved.ipynb", [VIEWS])
    jupyter_lab.open_notebook(page, name)
    jupyter_lab.run_all_cells(page)
    timeline = page.locator(".jp-OutputArea-output .agc-timeline")
    expect(timeline.locator(".agc-turn")).to_have_text("turn 4", timeout=60_000)
    # Change state by clicks: roll back to turn 1, approve the waiting call.
    timeline.locator("tr.agc-ht-row").nth(3).click()
    timeline.locator("button.jupyter-button", has_text="Rollback").click()
    timeline.locator("button.jupyter-button", has_text="Confirm rollback").click()
    expect(timeline.locator(".agc-turn")).to_have_text("turn 1", timeout=30_000)
    panel = page.locator(".jp-OutputArea-output .agc-approval-panel")
    # The card's own Approve (not "Approve selected (n)" of the selection bar).
    approve = re.compile(r"^\s*Approve\s*$")
    panel.locator("button.jupyter-button", has_text=approve).first.click()
    expect(panel.locator(".agc-head")).to_contain_text("0 waiting · 1 decided", timeout=30_000)
    jupyter_lab.wait_for_idle(page)

    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function(
        "!window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000
    )
    page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    page.wait_for_function(
        "!window.jupyterapp.shell.currentWidget.sessionContext.session", timeout=30_000
    )
    page.evaluate("window.jupyterapp.commands.execute('application:close-all')")

    # The file: widget state saved, and a static snapshot beside each widget.
    path = jupyter_lab.root_dir / name
    saved = json.loads(path.read_text())
    state = saved["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert len(state) > 20
    outputs = saved["cells"][0]["outputs"]
    assert len(outputs) == 6
    for output in outputs:
        data = output["data"]
        assert "application/vnd.jupyter.widget-view+json" in data
        assert 'class="agc-view' in "".join(data["text/html"])
    # 1. Reopened as saved (trusted), its kernel gone: the views render from the saved widget
    #    state, as they were last seen — rolled back, approved.
    page.goto(f"{jupyter_lab.url}/lab/tree/{name}")
    page.wait_for_selector(".jp-Notebook", timeout=60_000)
    timeline = page.locator(".jp-OutputArea-output .agc-timeline")
    expect(timeline.locator(".agc-turn")).to_have_text("turn 1", timeout=60_000)
    expect(timeline.locator("tr.agc-ht-row")).to_have_count(6)
    expect(page.locator(".agc-tree-browser tr.agc-tt-row")).to_have_count(2)
    expect(page.locator(".agc-diff-viewer .agc-head").first).to_contain_text("alt")
    expect(page.locator(".agc-approval-panel .agc-head")).to_contain_text("1 decided")
    expect(page.locator(".agc-chunk-inspector svg.agc-hist")).to_have_count(1)
    expect(page.locator(".agc-graph-explorer .agc-head")).to_contain_text("2 entities")
    expect(page.get_by_text("model not found")).to_have_count(0)
    jupyter_lab.screenshot(page, "saved_reopened_trusted")
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.sessionContext.shutdown(); }")

    # 2. The same file from elsewhere (GitHub, a colleague: not trusted here): JupyterLab shows
    #    the static snapshots — sanitized HTML, still readable.
    copy = "copied.ipynb"
    saved["metadata"].pop("widgets")
    (jupyter_lab.root_dir / copy).write_text(json.dumps(saved))
    page.evaluate(
        "(path) => { window.jupyterapp.commands.execute('docmanager:open', {path}); }", copy
    )
    shown = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    expect(shown.locator(".jp-Notebook")).to_have_count(1, timeout=60_000)
    expect(page.locator(".jp-NotebookPanel")).to_have_count(2)
    area = shown.locator(".jp-OutputArea-output")
    expect(area).to_have_count(6, timeout=60_000)
    expect(area.nth(0)).to_contain_text("Checkpoints of")
    expect(area.nth(0)).to_contain_text("turn 4")  # the snapshot taken when the cell ran
    expect(area.nth(1)).to_contain_text("2 sessions")
    expect(area.nth(2)).to_contain_text("6 shared · 2 only in alt")  # the summary line
    expect(area.nth(3)).to_contain_text("Tool calls waiting for approval")
    expect(area.nth(4)).to_contain_text("10 chunks")
    expect(area.nth(5)).to_contain_text("2 entities")
    expect(page.get_by_text("model not found")).to_have_count(0)
    expect(page.get_by_text("Error displaying widget")).to_have_count(0)
    jupyter_lab.screenshot(page, "saved_reopened_untrusted")

    # nbconvert's HTML export carries the static snapshots.
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_filename(str(jupyter_lab.root_dir / copy))
    assert body.count('class="agc-view') >= 6
    assert "Checkpoints</b> of" in body

"""SessionTreeBrowser in real JupyterLab: the anywidget tree table — search, collapse, sort,
select, then New child — each checked in the kernel; 2,000 sessions answer within a second;
light and dark screenshots."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

SETUP = """\
from agcore_lab import Agent, ScriptedModel, SessionManager
from agcore_lab.jupyter import SessionTreeBrowser

writer = Agent(name="writer", model=ScriptedModel())
critic = Agent(name="critic", model=ScriptedModel())
manager = SessionManager(agents=[writer, critic])
root = manager.create_sync(writer)
manager.submit_turn_sync(root, "hello")
a = manager.create_child_sync(root, critic)
a1 = manager.create_child_sync(a, writer)
b = manager.create_child_sync(root, writer)
browser = SessionTreeBrowser(manager)
browser"""

READ_BACK = """\
print("selected:", browser.selected == a1, "children of a1:", len(manager.children_sync(a1)))"""

MANY = """\
big = SessionManager(agents=[writer])
top = big.create_sync(writer)
for i in range(1999):
    big.create_child_sync(top, writer)
wide = SessionTreeBrowser(big)
wide"""

pytestmark = pytest.mark.browser


def test_tree_browser_in_jupyterlab(page: Any, jupyter_lab: Any) -> None:
    from playwright.sync_api import expect

    jupyter_lab.write_notebook("tree.ipynb", [SETUP, READ_BACK, MANY])
    jupyter_lab.open_notebook(page, "tree.ipynb")
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-cell')")

    view = page.locator(".jp-OutputArea-output .agc-tree-browser").first
    expect(view).to_be_visible(timeout=60_000)
    rows = view.locator("tr.agc-tt-row")
    expect(rows).to_have_count(4)
    expect(rows.first.locator("td[data-key=agent] .agc-tt-name")).to_have_text("writer")
    expect(rows.first.locator("td[data-key=turns]")).to_have_text("1")
    expect(rows.first.locator(".agc-tt-status")).to_have_text("live")
    colour = rows.first.locator(".agc-tt-status").evaluate("e => getComputedStyle(e).color")
    assert colour not in ("rgb(0, 0, 0)", ""), colour  # the status has a colour, not just text
    jupyter_lab.screenshot(page, "tree_light")

    # "updated": the session's last write, in words, the exact time on hover; sortable.
    updated = rows.first.locator("td[data-key=updated]")
    expect(updated).to_have_text(re.compile(r"^(just now|\d+ s ago|\d+ min ago)$"))
    exact = updated.get_attribute("title") or ""
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", exact), exact
    ids = [rows.nth(i).get_attribute("data-id") for i in range(4)]  # root, a, a1, b
    head = view.locator("th[data-key=updated]")
    head.click()
    head.click()  # descending: the most recently written sibling (b) first
    expect(head).to_contain_text("▼")
    expect(rows.nth(1)).to_have_attribute("data-id", ids[3] or "")
    assert [rows.nth(i).get_attribute("data-id") for i in range(4)] == [ids[0], ids[3], *ids[1:3]]
    head.click()  # a third click: tree order again
    expect(rows.nth(1)).to_have_attribute("data-id", ids[1] or "")

    # Search by agent: the match and its ancestor stay.
    view.locator("input.agc-tt-search").fill("critic")
    expect(rows).to_have_count(2)
    expect(rows.nth(1).locator("td[data-key=agent]")).to_contain_text("critic")
    view.locator("input.agc-tt-search").fill("")
    expect(rows).to_have_count(4)

    # Collapse the root: only it stays; expand it again.
    rows.first.locator("button.agc-tt-toggle").click()
    expect(rows).to_have_count(1)
    expect(rows.first.locator("button.agc-tt-toggle")).to_have_text("▸")
    rows.first.locator("button.agc-tt-toggle").click()
    expect(rows).to_have_count(4)

    # Sort by turns, descending (two clicks on the head): the root's children keep their place
    # under it; the root (1 turn) stays first.
    view.locator("th[data-key=turns]").click()
    expect(view.locator("th[data-key=turns]")).to_contain_text("▲")

    # Select a1 by a click, then New child with the dropdown's agent.
    rows.nth(2).click()
    expect(rows.nth(2)).to_have_class("agc-tt-row agc-tt-selected")
    expect(view.locator(".agc-details")).to_contain_text("writer")
    view.locator("button.jupyter-button", has_text="New child").click()
    expect(view.locator(".agc-status-line")).to_contain_text("Created", timeout=30_000)
    expect(rows).to_have_count(5)
    jupyter_lab.run_cell(page, 1)
    read_back = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output")
    expect(read_back).to_have_text("selected: False children of a1: 1", timeout=30_000)

    jupyter_lab.set_theme(page, "JupyterLab Dark")
    jupyter_lab.screenshot(page, "tree_dark")
    background = view.locator(".agc-tt th").first.evaluate(
        "e => getComputedStyle(e).backgroundColor"
    )
    jupyter_lab.set_theme(page, "JupyterLab Light")
    assert background not in ("rgb(238, 238, 238)", "rgba(0, 0, 0, 0)"), background

    # 2,000 sessions: the first page shows, and a sort answers in under a second.
    jupyter_lab.run_cell(page, 2)
    wide = page.locator(".jp-OutputArea-output .agc-tree-browser").nth(1)
    wide_rows = wide.locator("tr.agc-tt-row")
    expect(wide_rows).to_have_count(50, timeout=60_000)
    expect(wide.locator(".agc-head")).to_contain_text("2,000 sessions")
    first = wide_rows.nth(1).locator("td[data-key=id]").inner_text()
    start = time.monotonic()
    wide.locator("th[data-key=id]").click()
    wide.locator("th[data-key=id]").click()  # descending
    expect(wide.locator("th[data-key=id]")).to_contain_text("▼")
    expect(wide_rows.nth(1).locator("td[data-key=id]")).not_to_have_text(first, timeout=10_000)
    elapsed = time.monotonic() - start
    print(f"tree of 2,000 sessions: sort round trip {elapsed * 1000:.0f} ms")
    assert elapsed < 1.0, elapsed
    height = wide.evaluate("e => e.getBoundingClientRect().height")
    assert height <= 602, height  # the view's height is capped
    assert jupyter_lab.dialogs == []

"""SessionTreeBrowser built in plain Python: rows, paging, details, memory, actions, events."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agcore_lab import (
    Agent,
    InvalidInputError,
    RuntimeBundle,
    ScriptedModel,
    SessionManager,
    SqliteStore,
)
from agcore_lab.jupyter import SessionTreeBrowser
from agcore_lab.jupyter.tree._html import flatten, row_text
from agcore_lab.llm.usage import ModelPrice, PriceTable

XSS = "<img src=x onerror=alert(1)>"


def _agents() -> list[Agent]:
    return [
        Agent(name="writer", model=ScriptedModel()),
        Agent(name="critic", model=ScriptedModel()),
    ]


def _manager(store: SqliteStore | None = None) -> SessionManager:
    prices = PriceTable({"scripted": ModelPrice(prompt=1.0, completion=2.0)})
    bundle = RuntimeBundle(store=store or SqliteStore(":memory:"), prices=prices)
    return SessionManager(bundle=bundle, agents=_agents())


@pytest.fixture
def manager() -> SessionManager:
    return _manager()


@pytest.fixture
def tree(manager: SessionManager) -> dict[str, str]:
    """root (writer, 2 turns) → a (critic) → a1 (writer); root → b (writer)."""
    writer, critic = manager.agents["writer"], manager.agents["critic"]
    root = manager.create_sync(writer)
    manager.submit_turn_sync(root, "hello")
    manager.submit_turn_sync(root, "again")
    a = manager.create_child_sync(root, critic)
    a1 = manager.create_child_sync(a, writer)
    b = manager.create_child_sync(root, writer)
    return {"root": root, "a": a, "a1": a1, "b": b}


@pytest.fixture
def browser(manager: SessionManager, tree: dict[str, str]) -> Iterator[SessionTreeBrowser]:
    view = SessionTreeBrowser(manager)
    yield view
    view.close()


def _labels(view: SessionTreeBrowser) -> list[str]:
    return [row_text(row, view.status(row.node)) for row in view.page_rows()]


def _text(html_value: str) -> str:
    return re.sub(r"<[^>]+>", "", html_value)


def test_rows_show_the_tree_with_agent_turns_cost_and_status(
    browser: SessionTreeBrowser, tree: dict[str, str]
) -> None:
    assert [r.node.session_id for r in browser.rows] == [
        tree["root"],
        tree["a"],
        tree["a1"],
        tree["b"],
    ]
    labels = [label.replace("\u00a0", " ") for label in _labels(browser)]
    assert labels[0].startswith("writer · 2 turns · <$0.0001 · ")  # no long floats
    assert labels[0].endswith(f"· live · {tree['root']}")
    assert labels[1].startswith("├─ critic · 0 turns · — · live")  # no cost: "—", no $0.000000
    assert labels[2].startswith("│  └─ writer · 0 turns")
    assert labels[3].startswith("└─ writer · 0 turns")
    assert "—" not in labels[0]  # the priced model made the root cost something
    header = _text(browser.header_html.value)
    assert "4 sessions · 4 live · 0 stored · 0 orphan" in header
    assert browser.selected is None and browser.details_html.value == ""
    assert browser.destroy_button.disabled and browser.child_button.disabled
    assert list(browser.agent_dropdown.options) == ["critic", "writer"]


def test_selecting_shows_details_and_live_memory_escaped(
    manager: SessionManager, browser: SessionTreeBrowser, tree: dict[str, str]
) -> None:
    session = manager.get_sync(tree["a"])
    session.session_memory.set("note", XSS, {"source": "test"})
    session.session_memory.set("facts", {"capital": "Paris"})
    browser.tree_table.selected = tree["a"]  # what a click on a row does
    assert browser.wait(10)
    assert browser.selected == tree["a"]
    details = _text(browser.details_html.value)
    assert "critic" in details and f"parent{tree['root']}" in details and "children1" in details
    assert browser.memory == {"note": XSS, "facts": {"capital": "Paris"}}
    assert "&lt;img src=x onerror=alert(1)&gt;" in browser.memory_html.value
    assert "<img" not in browser.memory_html.value
    assert "<img" not in browser._repr_html_()
    assert '{"capital": "Paris"}' in _text(browser.memory_html.value).replace("&quot;", '"')
    assert not browser.destroy_button.disabled
    assert browser.recover_button.disabled  # live already


def test_stored_sessions_after_a_restart_and_recover(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    first = _manager(SqliteStore(db))
    sid = first.create_sync(first.agents["writer"])
    first.submit_turn_sync(sid, "remember this")
    first.get_sync(sid).session_memory.set("topic", "time travel")

    second = _manager(SqliteStore(db))  # a new kernel: nothing is live
    view = SessionTreeBrowser(second)
    try:
        assert _labels(view)[0].endswith(f"· stored · {sid}")
        view.select(sid)
        assert view.wait(10)
        assert view.memory == {"topic": "time travel"}  # read from the store, not recovered
        assert second.live_ids() == []
        assert not view.recover_button.disabled
        view.recover_button.click()
        assert view.wait(10)
        assert second.live_ids() == [sid]
        assert _labels(view)[0].endswith(f"· live · {sid}")
        assert "Recovered" in view.status_html.value
    finally:
        view.close()


def test_destroy_asks_first_cancel_changes_nothing(
    manager: SessionManager, browser: SessionTreeBrowser, tree: dict[str, str]
) -> None:
    browser.select(tree["a"])
    browser.destroy_button.click()
    assert browser.confirm_bar.visible
    question = _text(browser.confirm_bar.question_html.value)
    assert f"Destroy session {tree['a']} (critic, 0 turns)?" in question
    assert "Its 1 child session stays, as an orphan." in question
    browser.confirm_bar.cancel_button.click()
    assert not browser.confirm_bar.visible
    assert "nothing changed" in browser.status_html.value
    assert len(manager.tree_sync()) == 4

    browser.ask_destroy()
    browser.confirm_bar.confirm_button.click()
    assert browser.wait(10)
    ids = [r.node.session_id for r in browser.rows]
    assert tree["a"] not in ids and len(ids) == 3
    orphan = next(r for r in browser.rows if r.node.session_id == tree["a1"])
    assert orphan.node.orphan and orphan.depth == 0
    assert "· live · orphan ·" in row_text(orphan)
    assert "1 orphan" in browser.header_html.value
    assert browser.selected is None
    assert f"Destroyed {tree['a']}." in browser.status_html.value


def test_new_child_with_the_picked_agent_selects_it(
    manager: SessionManager, browser: SessionTreeBrowser, tree: dict[str, str]
) -> None:
    browser.select(tree["b"])
    browser.agent_dropdown.value = "critic"
    browser.child_button.click()
    assert browser.wait(10)
    kids = manager.children_sync(tree["b"])
    assert len(kids) == 1
    assert browser.selected == kids[0]
    assert browser.selected_node.agent_name == "critic"
    assert browser.tree_table.selected == kids[0]
    assert f"Created {kids[0]} (critic) under {tree['b']}." in browser.status_html.value


def test_switch_agent_keeps_history(
    manager: SessionManager, browser: SessionTreeBrowser, tree: dict[str, str]
) -> None:
    browser.select(tree["root"])
    browser.switch_agent("critic").wait(10)  # type: ignore[union-attr]
    assert browser.wait(10)
    session = manager.get_sync(tree["root"])
    assert session.agent.name == "critic" and session.turn_index == 2
    assert _labels(browser)[0].startswith("critic · 2 turns")


def test_actions_without_a_selection_or_agent_show_errors(manager: SessionManager) -> None:
    view = SessionTreeBrowser(manager)
    try:
        assert _labels(view) == [] and "no sessions" in view._repr_html_()
        assert view.new_child() is None
        assert "agcore: select a session first" in view.error_html.value
        sid = manager.create_sync(manager.agents["writer"])
        assert view.wait(10)
        view.select(sid)
        assert view.new_child("nobody") is None
        assert "no registered agent &#x27;nobody&#x27;" in view.error_html.value
        view.select("ses_unknown")
        assert "no session &#x27;ses_unknown&#x27; in the tree" in view.error_html.value
    finally:
        view.close()


def test_engine_errors_show_inline(
    manager: SessionManager, browser: SessionTreeBrowser, tree: dict[str, str]
) -> None:
    browser.select(tree["b"])
    manager.destroy_sync(tree["b"])  # gone behind the view's back, before it reloads
    browser.selected = tree["b"]
    browser.ask_destroy()
    task = browser.confirm_destroy()
    assert task is not None and task.wait(10) and browser.wait(10)
    assert browser.last_error is not None
    assert "agcore: no such session in the store" in browser.error_html.value
    assert "failed; nothing changed" in browser.status_html.value


def test_follows_manager_events_and_close_unsubscribes(
    manager: SessionManager, browser: SessionTreeBrowser, tree: dict[str, str]
) -> None:
    manager.submit_turn_sync(tree["b"], "news")
    assert browser.wait(10)
    assert _labels(browser)[3].replace("\u00a0", " ").startswith("└─ writer · 1 turn ·")
    browser.close()
    manager.submit_turn_sync(tree["b"], "more news")
    assert browser.wait(10)
    assert _labels(browser)[3].replace("\u00a0", " ").startswith("└─ writer · 1 turn ·")


def test_large_trees_are_paged(manager: SessionManager) -> None:
    writer = manager.agents["writer"]
    root = manager.create_sync(writer)
    ids = [root] + [manager.create_child_sync(root, writer) for _ in range(119)]
    view = SessionTreeBrowser(manager, page_size=50)
    try:
        assert view.pages == 3 and len(view.tree_table.rows) == 50
        assert "page 1 of 3" in view.page_html.value and view.prev_button.disabled
        view.next_button.click()
        view.next_button.click()
        assert len(view.tree_table.rows) == 20 and view.next_button.disabled
        view.show_page(0)
        view.select(ids[-1])  # jumps to its page
        assert view.page == 2 and view.tree_table.selected == ids[-1]
        assert "120 sessions" in view.header_html.value
    finally:
        view.close()


def test_flatten_handles_deep_trees(manager: SessionManager) -> None:
    writer = manager.agents["writer"]
    sid = manager.create_sync(writer)
    for _ in range(30):
        sid = manager.create_child_sync(sid, writer)
    rows = flatten(manager.tree_sync().roots)
    assert [r.depth for r in rows] == list(range(31))
    assert rows[-1].prefix.endswith("└─\u00a0")


def test_repr_is_text(browser: SessionTreeBrowser, tree: dict[str, str]) -> None:
    assert repr(browser) == "SessionTreeBrowser(4 sessions, 4 live, selected=None)"
    browser.select(tree["root"])
    page = browser._repr_html_()
    assert 'class="agc-tree-row agc-selected"' in page and "agc-details" in page


def _ids(view: SessionTreeBrowser) -> list[str]:
    return [row["id"] for row in view.tree_table.rows]


def test_search_keeps_matches_with_their_ancestors(
    browser: SessionTreeBrowser, tree: dict[str, str]
) -> None:
    browser.search("critic")  # what typing in the search box does
    assert _ids(browser) == [tree["root"], tree["a"]]
    assert "2 matches" in _text(browser.header_html.value)
    browser.search(tree["a1"][-6:].upper())  # ids match in any case
    assert _ids(browser) == [tree["root"], tree["a"], tree["a1"]]
    browser.search("nobody")
    assert _ids(browser) == [] and browser.tree_table.empty == "No session matches 'nobody'."
    browser.search("")
    assert _ids(browser) == [tree["root"], tree["a"], tree["a1"], tree["b"]]


def test_collapse_hides_children_and_selecting_a_hidden_one_reveals_it(
    browser: SessionTreeBrowser, tree: dict[str, str]
) -> None:
    first = browser.tree_table.rows[0]
    assert first["kids"] == 2 and first["open"] and first["depth"] == 0
    browser.toggle(tree["a"])  # what a click on ▸/▾ does
    assert _ids(browser) == [tree["root"], tree["a"], tree["b"]]
    assert browser.tree_table.rows[1]["open"] is False
    browser.toggle(tree["root"])
    assert _ids(browser) == [tree["root"]]
    browser.select(tree["a1"])
    assert browser.selected == tree["a1"] and browser.tree_table.selected == tree["a1"]
    assert _ids(browser) == [tree["root"], tree["a"], tree["a1"], tree["b"]]


def test_sort_orders_siblings_by_a_column(
    manager: SessionManager, browser: SessionTreeBrowser, tree: dict[str, str]
) -> None:
    manager.submit_turn_sync(tree["b"], "one")
    manager.submit_turn_sync(tree["b"], "two")
    assert browser.wait(10)
    browser.sort("turns", descending=True)  # what clicks on the column head do
    assert _ids(browser) == [tree["root"], tree["b"], tree["a"], tree["a1"]]
    assert browser.tree_table.sort_key == "turns" and browser.tree_table.descending
    browser.sort("")
    assert _ids(browser) == [tree["root"], tree["a"], tree["a1"], tree["b"]]
    with pytest.raises(InvalidInputError, match="cannot sort by 'colour'"):
        browser.sort("colour")


def test_rows_carry_columns_and_status_as_colour_and_text(
    manager: SessionManager, browser: SessionTreeBrowser, tree: dict[str, str]
) -> None:
    root = browser.tree_table.rows[0]
    assert root["cells"]["agent"] == "writer" and root["cells"]["turns"] == "2"
    assert root["cells"]["status"] == "live" and root["tone"] == "ok"
    assert set(root["cells"]) == {c["key"] for c in browser.tree_table.columns}
    manager.destroy_sync(tree["a"])
    assert browser.wait(10)
    orphan = next(r for r in browser.tree_table.rows if r["id"] == tree["a1"])
    assert orphan["cells"]["status"] == "live · orphan" and orphan["tone"] == "warn"


def test_waiting_for_approval_is_a_status(manager: SessionManager) -> None:
    from agcore_lab import Tool, ToolCall

    def transfer(to: str) -> str:
        """Send.

        Args:
            to: Whom.
        """
        return f"sent to {to}"

    agent = Agent(
        name="bank",
        model=ScriptedModel([ToolCall(name="transfer", arguments={"to": "u1"}), "done"]),
        tools=[Tool.from_function(transfer, requires_approval=True)],
    )
    sid = manager.create_sync(agent)
    view = SessionTreeBrowser(manager)
    try:
        manager.submit_turn_sync(sid, "pay")
        assert view.wait(10)
        row = next(r for r in view.tree_table.rows if r["id"] == sid)
        assert row["cells"]["status"] == "waiting for approval · live" and row["tone"] == "wait"
        assert "1 waiting for approval" in _text(view.header_html.value)
    finally:
        view.close()


def test_scoped_to_a_root_and_says_when_it_is_gone(
    manager: SessionManager, tree: dict[str, str]
) -> None:
    view = SessionTreeBrowser(manager, root=tree["a"], status_of={tree["a1"]: "failed"}.get)
    try:
        assert _ids(view) == [tree["a"], tree["a1"]]
        assert view.tree_table.rows[0]["depth"] == 0
        failed = view.tree_table.rows[1]
        assert failed["cells"]["status"] == "failed · live" and failed["tone"] == "error"
        manager.destroy_sync(tree["a"])
        assert view.wait(10)
        assert view.gone and "Gone:" in view.header_html.value
        assert _ids(view) == [] and "was destroyed" in view.tree_table.empty
    finally:
        view.close()


def test_updated_is_the_sessions_last_write_relative_with_the_exact_time_on_hover(
    manager: SessionManager, browser: SessionTreeBrowser, tree: dict[str, str]
) -> None:
    # a was created before b; a turn in a makes it the most recently updated.
    before = manager.tree_sync().find(tree["a"])
    assert before is not None and before.updated_at >= before.created_at
    manager.submit_turn_sync(tree["a"], "news")
    assert browser.wait(10)
    node_a = manager.tree_sync().find(tree["a"])
    node_b = manager.tree_sync().find(tree["b"])
    assert node_a is not None and node_b is not None
    assert node_a.updated_at > before.updated_at and node_a.updated_at > node_b.updated_at
    assert node_a.updated_at == manager.store.get_session(tree["a"]).updated_at  # type: ignore[union-attr]
    assert "updated" in {c["key"] for c in browser.tree_table.columns}
    row = next(r for r in browser.tree_table.rows if r["id"] == tree["a"])
    assert row["cells"]["updated"] == "just now"
    assert row["titles"]["updated"] == node_a.updated_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert row["stamps"]["updated"] == node_a.updated_at.timestamp() * 1000
    # Sortable: the most recently written sibling first.
    browser.sort("updated", descending=True)
    assert _ids(browser) == [tree["root"], tree["a"], tree["a1"], tree["b"]]
    browser.sort("updated")
    assert _ids(browser) == [tree["root"], tree["b"], tree["a"], tree["a1"]]
    # Details and the static snapshot give the exact time (a saved page has no clock).
    browser.select(tree["a"])
    exact = node_a.updated_at.strftime("%Y-%m-%d %H:%M:%S")
    assert f"updated{exact} UTC (just now)" in _text(browser.details_html.value)
    snapshot = browser._repr_html_()
    assert f"updated {exact} UTC" in _text(snapshot)
    assert f'datetime="{node_a.updated_at.isoformat()}"' in snapshot
    frame = manager.tree_sync().to_dataframe().set_index("session_id")
    assert frame.loc[tree["a"], "updated_at"] == node_a.updated_at


def test_ago_words() -> None:
    from datetime import UTC, datetime, timedelta

    from agcore_lab.jupyter.common.text import ago

    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    words = [ago(now - timedelta(seconds=s), now) for s in (0, 9, 10, 59, 60, 3599, 3600)]
    assert words == ["just now", "just now", "10 s ago", "59 s ago", "1 min ago", "59 min ago"] + [
        "1 h ago"
    ]
    assert ago(now - timedelta(days=2), now) == "2 days ago"
    assert ago(now - timedelta(days=40), now) == "2026-10-22"

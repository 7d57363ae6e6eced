"""``SessionTreeBrowser``: a manager's session tree, paged, with details, memory and actions.

A thin view over :class:`~agcore_lab.SessionManager`: the tree is ``manager.tree()``, the
actions are ``manager.create_child``, ``manager.switch_agent``, ``manager.destroy`` and
``manager.recover``. Every button has a method a user can call in a cell
(:meth:`SessionTreeBrowser.new_child`, :meth:`~SessionTreeBrowser.switch_agent`,
:meth:`~SessionTreeBrowser.ask_destroy` then :meth:`~SessionTreeBrowser.confirm_destroy`, ...).
The view follows the manager's events and reloads itself; :meth:`~SessionTreeBrowser.close`
stops that.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter._manager import live_session, registered_agents, stored_memory
from agcore_lab.jupyter.common.history_parts import button, render_memory
from agcore_lab.jupyter.common.text import plural
from agcore_lab.jupyter.common.theme import style_tag
from agcore_lab.jupyter.common.view import ManagerView
from agcore_lab.jupyter.tree._html import TreeRow, find_node, render_details, render_tree
from agcore_lab.jupyter.tree.actions import TreeActions
from agcore_lab.jupyter.tree.rows import COLUMNS, status_text, table_row
from agcore_lab.jupyter.tree.shape import TreeShape
from agcore_lab.jupyter.tree.table import TreeTable

if TYPE_CHECKING:
    from agcore_lab.engine.manager import SessionManager

__all__ = ["SessionTreeBrowser"]

MAX_MARKS = 500  # sessions of a scoped tree whose stored dispatch status is read


class SessionTreeBrowser(TreeShape, TreeActions, ManagerView):
    """The sessions of a manager as a collapsible tree: select one to see its details and memory.

    The tree is a table (an anywidget front-end,
    :class:`~agcore_lab.jupyter.tree.table.TreeTable`) with columns agent, session, turns,
    tokens, cost, status, updated and created. *Updated* is when the session's stored row was
    last written, as a relative time (``3 min ago``, kept current in the browser) with the
    exact time on hover. Click a row to select it, ▸/▾ to collapse or expand its children
    (:meth:`toggle`), a column head to sort siblings by it (:meth:`sort`), and type in the
    search box to keep the sessions whose id or agent matches, with their ancestors
    (:meth:`search`). The status is text and colour: ``live`` (held by this manager),
    ``stored`` (only in the store: recover it to use it), ``orphan`` (its parent was
    destroyed), ``waiting for approval`` (a tool call of it waits), and — in a
    :class:`~agcore_lab.jupyter.DispatchMonitor` — the child's own ``running``, ``done``,
    ``failed``, ``timed out`` or ``cancelled``. Large trees are paged (``page_size`` rows a
    page), so thousands of sessions never reach the browser at once.

    Actions on the selected session, each on agcore_lab's background loop (buttons return at
    once; the view updates when the call ends; errors show inline):

    - **New child**: ``manager.create_child(selected, agent)`` with the agent picked in the
      dropdown (the manager's registered agents);
    - **Switch agent**: ``manager.switch_agent(selected, agent)``;
    - **Recover**: ``manager.recover(selected)`` — a stored session becomes live;
    - **Destroy**: asks first; **Confirm** runs ``manager.destroy(selected)`` (its children stay,
      as orphans), **Cancel** changes nothing.

    Args:
        manager: The session manager to show.
        page_size: Rows per page.
        root: Show only this session and its descendants (a destroyed root is said so).
        status_of: Extra status of a session by id (``None``: nothing to add), shown first.

    Example:
        >>> from agcore_lab import Agent, ScriptedModel, SessionManager
        >>> writer = Agent(name="writer", model=ScriptedModel())
        >>> manager = SessionManager(agents=[writer])
        >>> root = manager.create_sync(writer)
        >>> child = manager.create_child_sync(root, writer)
        >>> browser = SessionTreeBrowser(manager)
        >>> [row.node.session_id for row in browser.rows] == [root, child]
        True
        >>> browser.select(child)
        >>> browser.ask_destroy()
        >>> browser.confirm_destroy().wait(10), browser.wait(10)
        (True, True)
        >>> [row.node.session_id for row in browser.rows] == [root]
        True
        >>> browser.close()

    Notes:
        Manager events arrive on the thread that made the change (often agcore_lab's
        background loop); the view only schedules a reload from them. ``browser.wait()``
        blocks until pending reloads and actions are done.
    """

    def __init__(
        self,
        manager: SessionManager,
        *,
        page_size: int = 50,
        root: str | None = None,
        status_of: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__(manager, page_size=page_size, prev_label="◀ Prev", next_label="Next ▶")
        self.tree: Any = None
        self.root = root
        self.status_of = status_of
        self.gone = False  # the scoped root was destroyed
        self.rows: list[TreeRow] = []
        self.all_rows: list[TreeRow] = []
        self.waiting: set[str] = set()
        self.marks: dict[str, str] = {}  # a scoped tree: how each child's dispatch task ended
        self.selected: str | None = None
        self.memory: dict[str, Any] = {}

        self.tree_table = TreeTable(columns=COLUMNS, empty="no sessions yet")
        self.details_html = widgets.HTML()
        self.memory_html = widgets.HTML()
        self.agent_dropdown = widgets.Dropdown(
            options=[], description="Agent:", layout=widgets.Layout(width="240px")
        )
        self.child_button = button("New child", style="primary")
        self.switch_button = button("Switch agent")
        self.recover_button = button("Recover", tooltip="Load the stored session into memory")
        self.destroy_button = button("Destroy", style="danger")
        row = widgets.Layout(flex_flow="row wrap", align_items="center")
        self.children = [
            self.style_html,
            self.header_html,
            self.tree_table,
            widgets.HBox(
                [self.prev_button, self.page_html, self.next_button, self.refresh_button],
                layout=row,
            ),
            self.details_html,
            self.memory_html,
            widgets.HBox(
                [
                    self.agent_dropdown,
                    self.child_button,
                    self.switch_button,
                    self.recover_button,
                    self.destroy_button,
                ],
                layout=row,
            ),
            self.confirm_bar,
            self.status_html,
            self.error_html,
        ]
        self.add_class("agc-tree-browser")
        self.tree_table.observe(self._picked, names="selected")
        self.tree_table.observe(self._reshaped, names=["query", "sort_key", "descending"])
        self.tree_table.observe(self._collapsed, names="collapsed")
        self.child_button.on_click(lambda _: self.new_child())
        self.switch_button.on_click(lambda _: self.switch_agent())
        self.recover_button.on_click(lambda _: self.recover())
        self.destroy_button.on_click(lambda _: self.ask_destroy())
        self._loader(self._load_tree, self._tree_loaded)
        self._memory_loader = self._loader(self._load_memory, self._memory_loaded)
        self._start()

    # -- loading ------------------------------------------------------------------------------

    async def _load_tree(self) -> tuple[Any, set[str], dict[str, str]]:
        tree = await self.manager.tree()
        waiting = {c.session_id for c in self.manager.pending_calls()}
        marks: dict[str, str] = {}
        if self.root is not None:
            # A scoped tree (a dispatch's children) also shows how each child's task ended,
            # as the dispatch stored it in the child's metadata.
            node = find_node(tree.roots, self.root)
            for _, child in (node.walk() if node is not None else [])[1:MAX_MARKS]:
                record = self.manager.store.get_session(child.session_id)
                mark = record.metadata.get("dispatch") if record is not None else None
                if isinstance(mark, str):
                    marks[child.session_id] = mark
        return tree, waiting, marks

    def _tree_loaded(self, loaded: tuple[Any, set[str], dict[str, str]]) -> None:
        tree, waiting, marks = loaded
        with self._lock:
            self.tree, self.waiting, self.marks = tree, waiting, marks
            roots = list(tree.roots)
            if self.root is not None:
                node = find_node(roots, self.root)
                self.gone = node is None
                roots = [] if node is None else [node]
            self._all_roots = roots
            self._reshape()
            index = None if self.selected is None else self._index(self.selected)
            if index is None and (self.selected is None or self._find(self.selected) is None):
                self.selected, self.memory = None, {}
            elif index is not None:
                self.page = index // self.page_size
            self._render()
        self._memory_loader.request()

    def _find(self, session_id: str) -> Any:
        return find_node(getattr(self, "_all_roots", []), session_id)

    async def _load_memory(self) -> tuple[str | None, dict[str, Any]]:
        sid = self.selected
        if sid is None:
            return None, {}
        session = await live_session(self.manager, sid)
        if session is not None:
            return sid, {e.key: e.value for e in session.session_memory.list_entries()}
        return sid, stored_memory(self.manager, sid)

    def _memory_loaded(self, loaded: tuple[str | None, dict[str, Any]]) -> None:
        sid, memory = loaded
        with self._lock:
            if sid != self.selected:
                return
            self.memory = memory
            self.memory_html.value = (
                "" if sid is None else f"<div class='agc-meta'>memory</div>{render_memory(memory)}"
            )

    # -- what is shown ------------------------------------------------------------------------

    def _row_count(self) -> int:
        return len(self.rows)

    def _index(self, session_id: str) -> int | None:
        return next((i for i, r in enumerate(self.rows) if r.node.session_id == session_id), None)

    def page_rows(self) -> list[TreeRow]:
        """The rows on the current page."""
        start = self.page * self.page_size
        return self.rows[start : start + self.page_size]

    @property
    def selected_node(self) -> Any:
        """The selected session's node, or ``None``."""
        return None if self.selected is None else self._find(self.selected)

    def status(self, node: Any) -> str:
        """A session's status as shown: the dispatch's view of it (``failed``, ``running``,
        ...) or ``waiting for approval`` first, then ``live``/``stored``, then ``orphan``."""
        extra = self.status_of(node.session_id) if self.status_of is not None else None
        return status_text(node, extra or self.marks.get(node.session_id), self.waiting)

    def _table_row(self, row: TreeRow, collapsed: set[str], now: datetime) -> dict[str, Any]:
        return table_row(row, self.status(row.node), collapsed, now)

    def _render(self) -> None:
        with self._lock:
            self._render_paging()
            rows = self.page_rows()
            collapsed = set(self.tree_table.collapsed)
            now = datetime.now(UTC)
            table_rows = [self._table_row(r, collapsed, now) for r in rows]
            on_page = any(r.node.session_id == self.selected for r in rows)
            self._quiet = True
            try:
                with self.tree_table.hold_trait_notifications():
                    self.tree_table.rows = table_rows
                    self.tree_table.selected = self.selected if on_page else None
                    self.tree_table.empty = self._empty_text()
                    self.tree_table.tree_version += 1
            finally:
                self._quiet = False
            self.header_html.value = self._header()
            node = self.selected_node
            self.details_html.value = (
                "" if node is None else render_details(node, status=self.status(node))
            )
            if node is None:
                self.memory_html.value = ""
            for b in (self.child_button, self.switch_button, self.destroy_button):
                b.disabled = node is None or self._acting
            self.recover_button.disabled = node is None or self._acting or node.status == "live"
            names = sorted(registered_agents(self.manager))
            current = self.agent_dropdown.value
            if list(self.agent_dropdown.options) != names:
                self.agent_dropdown.options = names
            if names and self.agent_dropdown.value not in names:
                self.agent_dropdown.value = current if current in names else names[0]

    def redraw(self) -> None:
        """Draw again from what the view holds (no reading), e.g. when ``status_of`` changed."""
        with self._lock:
            self._render()

    def _empty_text(self) -> str:
        if self.gone:
            return f"Session {self.root} was destroyed: nothing to show."
        if self.tree_table.query.strip():
            return f"No session matches {self.tree_table.query.strip()!r}."
        return "no sessions yet"

    def _header(self) -> str:
        if self.gone:
            return (
                f'<div class="agc-head agc-gone"><b>Gone:</b> session <code>'
                f"{html.escape(str(self.root))}</code> was destroyed.</div>"
            )
        nodes = [r.node for r in self.all_rows]
        total = len(nodes)
        live = sum(1 for n in nodes if n.status == "live")
        orphans = sum(1 for n in nodes if n.orphan)
        waiting = sum(1 for n in nodes if n.session_id in self.waiting)
        shown = ""
        if self.tree_table.query.strip():
            shown = f" · {plural(len(self.rows), 'match', 'matches')}"
        scope = "" if self.root is None else f" under <code>{html.escape(self.root)}</code>"
        return (
            f'<div class="agc-head"><b>Sessions</b>{scope}<span class="agc-count">'
            f"{plural(total, 'session')} · {live:,} live · {total - live:,} stored · "
            f"{orphans:,} orphan · {waiting:,} waiting for approval{shown}</span></div>"
        )

    def _picked(self, change: Any) -> None:
        with self._lock:
            if self._quiet or change["new"] is None:
                return
        self.select(change["new"])

    def select(self, session_id: str | None) -> None:
        """Select a session (its page is shown), show its details and load its memory."""
        with self._lock:
            index = None if session_id is None else self._index(session_id)
            if session_id is not None and index is None:
                if self._find(session_id) is None:
                    self.show_error(InvalidInputError(f"no session {session_id!r} in the tree"))
                    return
                # Hidden by a collapsed ancestor or the search: show it.
                self._reveal(session_id)
                index = self._index(session_id)
            self.selected, self.memory = session_id, {}
            if index is not None:
                self.page = index // self.page_size
            self._render()
        self._memory_loader.request()

    # -- lifetime and reprs -------------------------------------------------------------------

    def __repr__(self) -> str:
        live = sum(1 for r in self.rows if r.node.status == "live")
        return (
            f"SessionTreeBrowser({len(self.rows)} sessions, {live} live, "
            f"selected={self.selected!r})"
        )

    def _repr_html_(self) -> str:
        # Static fallback for nbviewer / exported HTML: the current page and the details.
        return (
            f'{style_tag()}<div class="agc-view">{self.header_html.value}'
            f"{render_tree(self.page_rows(), selected=self.selected, status=self.status)}"
            f"{self.details_html.value}"
            f"{self.memory_html.value}</div>"
        )

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

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter._confirm import button
from agcore_lab.jupyter._manager import agent_named, live_session, registered_agents, stored_memory
from agcore_lab.jupyter._session_html import render_memory
from agcore_lab.jupyter._tasks import BackgroundTask
from agcore_lab.jupyter._theme import style_tag
from agcore_lab.jupyter._tree_html import TreeRow, flatten, render_details, render_tree, row_text
from agcore_lab.jupyter._view import ManagerView

if TYPE_CHECKING:
    from agcore_lab.engine.manager import SessionManager

__all__ = ["SessionTreeBrowser"]


class SessionTreeBrowser(ManagerView):
    """The sessions of a manager as a tree: select one to see its details and memory.

    Each row shows the agent, the turns, the cost and the status — ``live`` (held by this
    manager), ``stored`` (only in the store: recover it to use it) and ``orphan`` (its parent
    was destroyed). Large trees are paged (``page_size`` rows a page).

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

    def __init__(self, manager: SessionManager, *, page_size: int = 50) -> None:
        super().__init__(manager, page_size=page_size, prev_label="◀ Prev", next_label="Next ▶")
        self.tree: Any = None
        self.rows: list[TreeRow] = []
        self.selected: str | None = None
        self.memory: dict[str, Any] = {}

        self.tree_select = widgets.Select(options=[], rows=12, layout=widgets.Layout(width="100%"))
        self.tree_select.add_class("agc-tree-list")
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
            self.tree_select,
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
        self.tree_select.observe(self._picked, names="value")
        self.child_button.on_click(lambda _: self.new_child())
        self.switch_button.on_click(lambda _: self.switch_agent())
        self.recover_button.on_click(lambda _: self.recover())
        self.destroy_button.on_click(lambda _: self.ask_destroy())
        self._loader(manager.tree, self._tree_loaded)
        self._memory_loader = self._loader(self._load_memory, self._memory_loaded)
        self._start()

    # -- loading ------------------------------------------------------------------------------

    def _tree_loaded(self, tree: Any) -> None:
        with self._lock:
            self.tree = tree
            self.rows = flatten(tree.roots)
            index = None if self.selected is None else self._index(self.selected)
            if index is None:
                self.selected, self.memory = None, {}
            else:
                self.page = index // self.page_size
            self._render()
        self._memory_loader.request()

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
        index = None if self.selected is None else self._index(self.selected)
        return None if index is None else self.rows[index].node

    def _render(self) -> None:
        with self._lock:
            self._render_paging()
            rows = self.page_rows()
            self._quiet = True
            try:
                self.tree_select.options = [(row_text(r), r.node.session_id) for r in rows]
                self.tree_select.rows = max(3, min(12, len(rows)))
                on_page = any(r.node.session_id == self.selected for r in rows)
                self.tree_select.value = self.selected if on_page else None
            finally:
                self._quiet = False
            live = sum(1 for r in self.rows if r.node.status == "live")
            orphans = sum(1 for r in self.rows if r.node.orphan)
            total = len(self.rows)
            self.header_html.value = (
                f'<div class="agc-head"><b>Sessions</b><span class="agc-count">{total} '
                f"session{'' if total == 1 else 's'} · {live} live · {total - live} stored · "
                f"{orphans} orphan</span></div>"
            )
            node = self.selected_node
            self.details_html.value = "" if node is None else render_details(node)
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
                self.show_error(InvalidInputError(f"no session {session_id!r} in the tree"))
                return
            self.selected, self.memory = session_id, {}
            if index is not None:
                self.page = index // self.page_size
            self._render()
        self._memory_loader.request()

    # -- actions ------------------------------------------------------------------------------

    def _needs_selection(self) -> str | None:
        if self.selected is None:
            self.show_error(InvalidInputError("select a session first"))
        return self.selected

    def _picked_agent(self, name: str | None) -> Any:
        name = name or self.agent_dropdown.value
        if not name:
            self.show_error(
                InvalidInputError("no registered agents: call manager.register_agent(agent)")
            )
            return None
        try:
            return agent_named(self.manager, name)
        except InvalidInputError as exc:
            self.show_error(exc)
            return None

    def new_child(self, agent_name: str | None = None) -> BackgroundTask[Any] | None:
        """Create a child of the selected session with a registered agent (the dropdown's)."""
        parent = self._needs_selection()
        agent = None if parent is None else self._picked_agent(agent_name)
        if parent is None or agent is None:
            return None

        def created(child: str) -> None:
            self.selected = child
            self.set_status(f"Created {child} ({agent.name}) under {parent}.")

        coro = self.manager.create_child(parent, agent)
        return self._act(coro, f"Creating a child of {parent}", created)

    def switch_agent(self, agent_name: str | None = None) -> BackgroundTask[Any] | None:
        """Give the selected session another registered agent (history and memory stay)."""
        sid = self._needs_selection()
        agent = None if sid is None else self._picked_agent(agent_name)
        if sid is None or agent is None:
            return None
        return self._act(
            self.manager.switch_agent(sid, agent),
            f"Switching {sid} to {agent.name!r}",
            lambda _: self.set_status(f"{sid} now uses agent {agent.name!r}."),
        )

    def recover(self) -> BackgroundTask[Any] | None:
        """Load the selected stored session from the store (it becomes live)."""
        sid = self._needs_selection()
        if sid is None:
            return None
        return self._act(
            self.manager.recover(sid),
            f"Recovering {sid}",
            lambda _: self.set_status(f"Recovered {sid}; it is live now."),
        )

    def ask_destroy(self) -> None:
        """Ask for confirmation before destroying the selected session."""
        node = self.selected_node
        if node is None:
            self._needs_selection()
            return
        kids = len(node.children)
        orphans = f" Its {kids} child session(s) stay, as orphans." if kids else ""
        self.confirm_bar.ask(
            f"Destroy session {node.session_id} ({node.agent_name}, {node.turn_index} turns)? "
            f"Its messages, memory and checkpoints are deleted.{orphans}",
            lambda: self._destroy(node.session_id),
            action="destroy",
            confirm_label="Destroy",
            on_cancel=lambda: self.set_status("Destroy cancelled; nothing changed."),
        )
        self.set_status("Confirm or Cancel.")

    def confirm_destroy(self) -> BackgroundTask[Any] | None:
        """Destroy the session named in the open question (see :meth:`ask_destroy`)."""
        if self.confirm_bar.pending != "destroy":
            return None
        return self.confirm_bar.confirm()  # type: ignore[return-value]

    def cancel_destroy(self) -> None:
        """Close the question; nothing changes."""
        self.confirm_bar.cancel()

    def _destroy(self, sid: str) -> BackgroundTask[Any] | None:
        return self._act(
            self.manager.destroy(sid),
            f"Destroying {sid}",
            lambda _: self.set_status(f"Destroyed {sid}."),
        )

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
            f"{render_tree(self.page_rows(), selected=self.selected)}{self.details_html.value}"
            f"{self.memory_html.value}</div>"
        )

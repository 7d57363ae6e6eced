"""The session tree browser's actions: New child, Switch agent, Recover, Destroy (asked first).

A mixin of :class:`~agcore_lab.jupyter.SessionTreeBrowser`: each action calls one public
``SessionManager`` method on agcore_lab's background loop through the view's ``_act`` (one at
a time, status and errors inline) and is a method a user can call in a cell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agcore_lab.errors import InvalidInputError
from agcore_lab.jupyter._manager import agent_named
from agcore_lab.jupyter.common.text import plural

if TYPE_CHECKING:
    from agcore_lab.jupyter.common.tasks import BackgroundTask

__all__ = ["TreeActions"]


class TreeActions:
    """Actions on the selected session (needs the browser's ``selected``, ``selected_node``,
    ``agent_dropdown``, ``confirm_bar``, ``manager``, ``_act``, ``show_error``, ``set_status``)."""

    selected: str | None
    selected_node: Any
    manager: Any
    agent_dropdown: Any
    confirm_bar: Any
    _act: Any
    show_error: Any
    set_status: Any

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
        verb = "stays, as an orphan" if kids == 1 else "stay, as orphans"
        orphans = f" Its {plural(kids, 'child session')} {verb}." if kids else ""
        turns = plural(node.turn_index, "turn")
        self.confirm_bar.ask(
            f"Destroy session {node.session_id} ({node.agent_name}, {turns})? "
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
        return self.confirm_bar.confirm()

    def cancel_destroy(self) -> None:
        """Close the question; nothing changes."""
        self.confirm_bar.cancel()

    def _destroy(self, sid: str) -> BackgroundTask[Any] | None:
        return self._act(
            self.manager.destroy(sid),
            f"Destroying {sid}",
            lambda _: self.set_status(f"Destroyed {sid}."),
        )

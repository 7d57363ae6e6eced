"""The timeline's actions: Rollback and Fork, each asked first (Confirm / Cancel).

A mixin of :class:`~agcore_lab.jupyter.CheckpointTimeline`: **Confirm** runs
``checkpointer.rollback(session_id, ckpt_id)`` or ``checkpointer.fork(session_id, ckpt_id)`` on
agcore_lab's background loop through the view's ``_act`` (one action at a time; status and
errors inline); **Cancel** changes nothing. A fork's **Open timeline** shows the child
session's own history below. Each is a method a user can call in a cell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agcore_lab.errors import InvalidInputError

if TYPE_CHECKING:
    from agcore_lab.jupyter.common.tasks import BackgroundTask

__all__ = ["HistoryActions"]


class HistoryActions:
    """Rollback and fork of the selected checkpoint, and opening a fork's own history (needs
    the timeline's ``session_id``, ``gone``, ``forks``, ``graph``, ``manager``,
    ``confirm_bar``, ``select``, ``selected_meta``, the opened views and their box, ``_act``,
    ``show_error`` and ``set_status``)."""

    session_id: str
    gone: bool
    last_fork: str | None
    forks: dict[str, list[str]]
    fork_view: Any
    inspector: Any
    inspector_box: Any
    manager: Any
    confirm_bar: Any
    graph: Any
    select: Any
    selected_meta: Any
    _act: Any
    show_error: Any
    set_status: Any

    def _target(self, ckpt_id: str | None) -> Any:
        if self.gone:
            self.show_error(
                InvalidInputError(f"session {self.session_id} was destroyed; nothing to act on")
            )
            return None
        if ckpt_id is not None:
            self.select(ckpt_id)
        meta = self.selected_meta()
        if meta is None:
            self.show_error(InvalidInputError("select a checkpoint first"))
        return meta

    def ask_rollback(self, ckpt_id: str | None = None) -> None:
        """Ask before rolling the session back to ``ckpt_id`` (default: the selected one)."""
        meta = self._target(ckpt_id)
        if meta is None:
            return
        self.confirm_bar.ask(
            f"Roll session {self.session_id} back to turn {meta.turn_index} "
            f"(checkpoint {meta.ckpt_id}, {meta.source})? Its slots, messages, memory, cost and "
            "turn index return to that state; a 'rollback' checkpoint records it, and later "
            "checkpoints stay in the list.",
            lambda: self._run("rollback", meta),
            action="rollback",
            confirm_label="Confirm rollback",
            on_cancel=lambda: self.set_status("Rollback cancelled; nothing changed."),
        )
        self.set_status("Confirm or Cancel.")

    def ask_fork(self, ckpt_id: str | None = None) -> None:
        """Ask before forking a new session from ``ckpt_id`` (default: the selected one)."""
        meta = self._target(ckpt_id)
        if meta is None:
            return
        self.confirm_bar.ask(
            f"Fork a new child session of {self.session_id} from turn {meta.turn_index} "
            f"(checkpoint {meta.ckpt_id})? This session stays as it is.",
            lambda: self._run("fork", meta),
            action="fork",
            confirm_label="Confirm fork",
            on_cancel=lambda: self.set_status("Fork cancelled; nothing changed."),
        )
        self.set_status("Confirm or Cancel.")

    def confirm(self) -> BackgroundTask[Any] | None:
        """Run the action asked about (rollback or fork); returns its task."""
        return self.confirm_bar.confirm()

    def cancel(self) -> None:
        """Close the question; nothing changes."""
        self.confirm_bar.cancel()

    def _fork_clicked(self, change: Any) -> None:
        child = change["new"]
        if child:
            self.graph.open_session = ""  # a second click on the same fork is a change again
            self.open_fork(child)

    def open_fork(self, session_id: str) -> Any:
        """Show the checkpoint history of a child session forked from here, below this one
        (what a fork's **Open timeline** does); returns that timeline.

        Raises:
            SessionNotFoundError: The child is not in the store (any more).
        """
        if not any(session_id in children for children in self.forks.values()):
            self.show_error(InvalidInputError(f"{session_id!r} is not a fork of this session"))
            return None
        self.show_error(None)
        for opened in (self.inspector, self.fork_view):
            if opened is not None:
                opened.close()
        self.inspector = None
        self.fork_view = type(self)(self.manager, session_id)  # type: ignore[call-arg]
        self.inspector_box.children = [self.fork_view]
        self.set_status(f"The history of fork {session_id} is shown below.")
        return self.fork_view

    def _run(self, action: str, meta: Any) -> BackgroundTask[Any] | None:
        checkpointer = self.manager.checkpointer
        if action == "rollback":

            def rolled_back(recorded: str) -> None:
                self.set_status(
                    f"Rolled back to turn {meta.turn_index} ({meta.ckpt_id}); "
                    f"recorded as checkpoint {recorded}."
                )

            return self._act(
                checkpointer.rollback(self.session_id, meta.ckpt_id),
                f"Rolling back to turn {meta.turn_index}",
                rolled_back,
            )

        def forked(child: str) -> None:
            self.last_fork = child
            self.set_status(f"Forked turn {meta.turn_index} into session {child}.")

        return self._act(
            checkpointer.fork(self.session_id, meta.ckpt_id),
            f"Forking from turn {meta.turn_index}",
            forked,
        )

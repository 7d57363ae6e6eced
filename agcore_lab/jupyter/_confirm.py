"""A confirm / cancel bar for actions that change stored state (rollback, fork, destroy).

The bar is hidden until a view calls :meth:`ConfirmBar.ask` with a sentence saying what will
happen and the action to run. **Confirm** runs the action once and hides the bar; **Cancel**
hides it and runs nothing. Asking again replaces the pending question.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as widgets

__all__ = ["ConfirmBar", "button"]


def button(description: str, *, style: str = "", tooltip: str = "") -> widgets.Button:
    """A button sized to its text (the look of the other agcore_lab views)."""
    return widgets.Button(
        description=description,
        button_style=style,
        tooltip=tooltip or description,
        layout=widgets.Layout(width="auto"),
    )


class ConfirmBar(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A question with Confirm and Cancel buttons, hidden until asked.

    Example:
        >>> bar = ConfirmBar()
        >>> done = []
        >>> bar.ask("Destroy session s1?", lambda: done.append("destroyed"), action="destroy")
        >>> bar.pending, bar.visible
        ('destroy', True)
        >>> bar.cancel()
        >>> done, bar.visible
        ([], False)
    """

    def __init__(self) -> None:
        self.question_html = widgets.HTML()
        self.confirm_button = button("Confirm", style="danger")
        self.cancel_button = button("Cancel", tooltip="Change nothing")
        super().__init__(
            [self.question_html, widgets.HBox([self.confirm_button, self.cancel_button])],
            layout=widgets.Layout(display="none"),
        )
        self.add_class("agc-confirm")
        self.pending: str | None = None
        self._action: Callable[[], object] | None = None
        self._on_cancel: Callable[[], object] | None = None
        self.confirm_button.on_click(lambda _: self.confirm())
        self.cancel_button.on_click(lambda _: self.cancel())

    @property
    def visible(self) -> bool:
        """Whether a question is showing."""
        return self.layout.display != "none"

    def ask(
        self,
        question: str,
        run: Callable[[], object],
        *,
        action: str = "confirm",
        confirm_label: str = "Confirm",
        on_cancel: Callable[[], object] | None = None,
    ) -> None:
        """Show ``question`` (plain text, escaped here) and wait for Confirm or Cancel.

        Args:
            question: What will happen, as plain text.
            run: Called (once) on Confirm.
            action: A name for the pending action (``pending``), e.g. ``"rollback"``.
            confirm_label: The Confirm button's text.
            on_cancel: Called on Cancel.
        """
        self.pending = action
        self._action = run
        self._on_cancel = on_cancel
        self.confirm_button.description = confirm_label
        self.confirm_button.tooltip = confirm_label
        self.question_html.value = (
            f'<div class="agc-preview agc-question">{html.escape(question)}</div>'
        )
        self.layout.display = "flex"

    def _hide(self) -> tuple[Callable[[], object] | None, Callable[[], object] | None]:
        action, on_cancel = self._action, self._on_cancel
        self._action = self._on_cancel = None
        self.pending = None
        self.question_html.value = ""
        self.layout.display = "none"
        return action, on_cancel

    def confirm(self) -> object:
        """Run the pending action (if any) and hide the bar; returns what the action returned."""
        action, _ = self._hide()
        return action() if action is not None else None

    def dismiss(self) -> bool:
        """Withdraw the question (its subject is gone): hide, run nothing, call no callback.

        Returns:
            Whether a question was showing.
        """
        shown = self.pending is not None
        self._hide()
        return shown

    def cancel(self) -> None:
        """Hide the bar without running anything."""
        _, on_cancel = self._hide()
        if on_cancel is not None:
            on_cancel()

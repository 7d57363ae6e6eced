"""The parts :class:`SessionTreeBrowser` and :class:`CheckpointTimeline` share.

A manager view follows the manager's events (reloading in the background, never blocking the
thread that made the change), pages its rows, runs one action at a time on agcore_lab's
background loop, and shows a status line and errors inline.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from agcore_lab.jupyter.common.history_parts import ConfirmBar, button
from agcore_lab.jupyter.common.refresh import Reloader
from agcore_lab.jupyter.common.tasks import BackgroundTask
from agcore_lab.jupyter.common.text import cap_height, error_line
from agcore_lab.jupyter.common.theme import style_tag

if TYPE_CHECKING:
    from agcore_lab.engine.manager import SessionManager

__all__ = ["ManagerView"]


class ManagerView(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """Base of the manager views: paging, status, errors, actions, event subscription."""

    def __init__(
        self, manager: SessionManager, *, page_size: int, prev_label: str, next_label: str
    ) -> None:
        self.manager = manager
        self.page_size = max(1, page_size)
        self.page = 0
        self.task: BackgroundTask[Any] | None = None
        self.last_error: BaseException | None = None
        self._lock = threading.RLock()
        self._quiet = False  # set while the view itself changes a selection widget
        self._acting = False
        self._closed = False
        self._loaders: list[Reloader[Any]] = []
        self.style_html = widgets.HTML(style_tag())
        self.header_html = widgets.HTML()
        self.prev_button = button(prev_label)
        self.next_button = button(next_label)
        self.page_html = widgets.HTML()
        self.refresh_button = button("Refresh", tooltip="Read again")
        self.confirm_bar = ConfirmBar()
        self.status_html = widgets.HTML()
        self.error_html = widgets.HTML()
        self.prev_button.on_click(lambda _: self.show_page(self.page - 1))
        self.next_button.on_click(lambda _: self.show_page(self.page + 1))
        self.refresh_button.on_click(lambda _: self.refresh())
        self._unsubscribe: Callable[[], None] = lambda: None
        super().__init__()  # the subclass sets ``children``
        self.add_class("agc-view")
        cap_height(self)

    def _loader(
        self, load: Callable[[], Coroutine[Any, Any, Any]], on_loaded: Callable[[Any], object]
    ) -> Reloader[Any]:
        loader: Reloader[Any] = Reloader(load, on_loaded=on_loaded, on_error=self.show_error)
        self._loaders.append(loader)
        return loader

    def _start(self) -> None:
        """Subscribe to the manager's events, then load once (waiting up to 10 s)."""
        self._unsubscribe = self.manager.add_listener(self._on_event)
        self._render()
        self.refresh()
        self._loaders[0].wait(10)

    # -- hooks for subclasses -------------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        # Called on the thread that changed the manager: schedule a reload, never block.
        self._loaders[0].request()

    def _row_count(self) -> int:
        raise NotImplementedError

    def _render(self) -> None:
        raise NotImplementedError

    # -- loading --------------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Read the data again, in the background (coalesced with any reload already due).

        Returns:
            ``True`` when this call scheduled the reload, ``False`` when one was due anyway.
        """
        return self._loaders[0].request()

    def wait(self, timeout: float = 10.0) -> bool:
        """Block until loads and the running action are done; ``False`` on timeout."""
        task = self.task
        if task is not None and not task.wait(timeout):
            return False
        return all(loader.wait(timeout) for loader in self._loaders)

    # -- paging, status and errors --------------------------------------------------------------

    @property
    def pages(self) -> int:
        """The number of pages (at least 1)."""
        return max(1, -(-self._row_count() // self.page_size))

    def show_page(self, page: int) -> None:
        """Show page ``page`` (0-based; clamped to the pages there are)."""
        with self._lock:
            self.page = min(max(0, page), self.pages - 1)
            self._render()

    def _render_paging(self) -> None:
        self.page = min(self.page, self.pages - 1)
        self.page_html.value = (
            f'<span class="agc-status">page {self.page + 1} of {self.pages}</span>'
        )
        self.prev_button.disabled = self.page == 0
        self.next_button.disabled = self.page >= self.pages - 1

    def set_status(self, text: str) -> None:
        """Show ``text`` on the status line."""
        self.status_html.value = (
            f'<div class="agc-status agc-status-line">{html.escape(text)}</div>'
        )

    def show_error(self, exc: BaseException | None) -> None:
        """Show an error under the buttons (``None`` clears it); kept in ``last_error``."""
        self.last_error = exc
        self.error_html.value = (
            "" if exc is None else f'<div class="agc-error">{html.escape(error_line(exc))}</div>'
        )

    # -- actions --------------------------------------------------------------------------------

    def _act(
        self, coro: Coroutine[Any, Any, Any], what: str, done: Callable[[Any], object]
    ) -> BackgroundTask[Any] | None:
        """Run one action in the background; ``done(result)`` sets the status when it ends."""
        if self._acting:
            coro.close()
            self.set_status("Busy: wait for the running action to finish.")
            return None
        self._acting = True
        self.show_error(None)
        self.set_status(what + "…")
        self._render()

        def success(result: Any) -> None:
            try:
                done(result)
            finally:
                self._finished()

        def failure(exc: BaseException) -> None:
            self.show_error(exc)
            self.set_status(what + " failed; nothing changed.")
            self._finished()

        self.task = BackgroundTask(coro, on_success=success, on_error=failure)
        return self.task

    def _finished(self) -> None:
        self._acting = False
        self._render()
        self.refresh()

    # -- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop following the manager and close the widget."""
        # getattr: Widget.__del__ calls close() even when __init__ raised early.
        if not getattr(self, "_closed", True):
            self._closed = True
            self._unsubscribe()
            for loader in self._loaders:
                loader.stop()
        super().close()

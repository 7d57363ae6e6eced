"""``GraphFrame``: the anywidget that hosts the graph page in a sandboxed iframe.

The page (:mod:`.page`) runs in ``<iframe sandbox="allow-scripts" srcdoc=...>`` with no
same-origin rights, so nothing in it can reach JupyterLab. ``frame.js`` is the only bridge, by
``postMessage`` and in two narrow ways: it sends JupyterLab's theme into the frame (light or
dark and three colours), and it takes a node id out of it when a node is clicked (``clicked``,
with ``clicks`` counting so that clicking the same node twice is seen twice).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

__all__ = ["GraphFrame"]


class GraphFrame(anywidget.AnyWidget):
    """The sandboxed graph frame.

    Traits:
        page: The page's HTML (it goes into ``srcdoc``).
        height: The frame's height in pixels.
        clicked: The id of the node clicked last (``None`` before any click).
        clicks: How many node clicks there were.
    """

    _esm = Path(__file__).with_name("frame.js")

    page = traitlets.Unicode("").tag(sync=True)
    height = traitlets.Int(460).tag(sync=True)
    clicked = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    clicks = traitlets.Int(0).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("agc-graph-host")

"""The helpers the views borrow from the checkpoint-history family, imported from one place.

The history family (``timeline.py``, ``_history_svg.py``, ``_confirm.py``, ``_svg.py``,
``_session_html.py``) moves into ``jupyter/history/`` on its own branch. The other views
import these names from here only, so that move changes the import lines of this one file.
"""

from __future__ import annotations

from agcore_lab.jupyter._confirm import ConfirmBar, button
from agcore_lab.jupyter._session_html import clip, full_time, render_memory
from agcore_lab.jupyter.common.text import format_cost, format_tokens

__all__ = [
    "ConfirmBar",
    "button",
    "clip",
    "format_cost",
    "format_tokens",
    "full_time",
    "render_memory",
]

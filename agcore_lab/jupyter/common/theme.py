"""CSS for agcore_lab's views (``theme.css``), built on JupyterLab's CSS variables so the dark
theme works.

Every selector is scoped under ``.agc-view``: the rules are injected with the view's HTML and
must not restyle anything else on the page. Highlights mix a theme colour with transparency, so
they read on light and dark backgrounds alike. Fallback values keep exported HTML (nbviewer,
nbconvert), where the ``--jp-*`` variables are missing, readable.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DISABLED_OPACITY", "STYLE", "style_tag"]

DISABLED_OPACITY = 0.45
"""How much ``theme.css`` dims a disabled control (on top of its grey), in any view and theme."""


STYLE = (Path(__file__).parent / "theme.css").read_text(encoding="utf-8")
"""The rules (``theme.css`` beside this module, shipped in the wheel)."""


def style_tag() -> str:
    """The ``<style>`` element to put in front of a view's HTML."""
    return f"<style>{STYLE}</style>"

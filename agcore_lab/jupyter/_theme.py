"""Old path of :mod:`agcore_lab.jupyter.common.theme`, kept for the checkpoint-history family.

``timeline.py`` (moving into ``jupyter/history/`` on its own branch) imports it from here;
new code imports ``agcore_lab.jupyter.common.theme``. Delete this file once nothing imports it.
"""

from agcore_lab.jupyter.common.theme import STYLE, style_tag

__all__ = ["STYLE", "style_tag"]

"""Old path of :mod:`agcore_lab.jupyter.common.text`, kept for the checkpoint-history family.

``timeline.py`` (moving into ``jupyter/history/`` on its own branch) imports it from here;
new code imports ``agcore_lab.jupyter.common.text``. Delete this file once nothing imports it.
"""

from agcore_lab.jupyter.common.text import MAX_HEIGHT, cap_height, error_line, plural

__all__ = ["MAX_HEIGHT", "cap_height", "error_line", "plural"]

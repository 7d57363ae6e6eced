"""Old path of :mod:`agcore_lab.jupyter.common.view`, kept for the checkpoint-history family.

``timeline.py`` (moving into ``jupyter/history/`` on its own branch) imports it from here;
new code imports ``agcore_lab.jupyter.common.view``. Delete this file once nothing imports it.
"""

from agcore_lab.jupyter.common.view import ManagerView

__all__ = ["ManagerView"]

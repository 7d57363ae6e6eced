"""Old path of :mod:`agcore_lab.jupyter.common.tasks`, kept for the checkpoint-history family.

``timeline.py`` (moving into ``jupyter/history/`` on its own branch) imports it from here;
new code imports ``agcore_lab.jupyter.common.tasks``. Delete this file once nothing imports it.
"""

from agcore_lab.jupyter.common.tasks import BackgroundTask

__all__ = ["BackgroundTask"]

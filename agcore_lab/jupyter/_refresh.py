"""Old path of :mod:`agcore_lab.jupyter.common.refresh`, kept for the checkpoint-history family.

``timeline.py`` (moving into ``jupyter/history/`` on its own branch) imports it from here;
new code imports ``agcore_lab.jupyter.common.refresh``. Delete this file once nothing imports it.
"""

from agcore_lab.jupyter.common.refresh import DEFAULT_INTERVAL, Poller, Reloader

__all__ = ["DEFAULT_INTERVAL", "Poller", "Reloader"]

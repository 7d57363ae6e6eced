"""The slot-diff family: :class:`~agcore_lab.jupyter.SlotDiffViewer` (``viewer.py``), its merge
flow (``merge.py``) and the diff grid's HTML (``render.py``)."""

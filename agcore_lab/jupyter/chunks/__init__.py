"""The chunk family: :class:`~agcore_lab.jupyter.ChunkInspector` (``inspector.py``) and its HTML."""

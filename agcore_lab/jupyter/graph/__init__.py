"""The graph family: :class:`agcore_lab.jupyter.GraphExplorer` (``explorer.py``, drawing in
``drawing.py``, clicks in ``clicks.py``, neighbourhood walks in ``walks.py``), the page drawn in
the sandboxed frame (``page.py``), the anywidget that hosts that frame and carries clicks and
the theme across it (``frame.py`` + ``frame.js``), and the pyvis export (``export.py``)."""

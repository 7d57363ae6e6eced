"""The graph explorer's parts: the page drawn in the sandboxed frame (``page.py``), the
anywidget that hosts that frame and carries clicks and the theme across it (``frame.py`` +
``frame.js``), and the pyvis export (``export.py``). The view itself is
:class:`agcore_lab.jupyter.GraphExplorer`."""

"""The session tree family: :class:`~agcore_lab.jupyter.SessionTreeBrowser` (``browser.py``),
its search/sort/collapse (``shape.py``), actions (``actions.py``), rows and columns
(``rows.py``), the static snapshot (``_html.py``) and its front-end, an anywidget tree table
(``table.py`` + ``tree.js``/``tree.css``).

:class:`~agcore_lab.jupyter.tree.table.TreeTable` draws the rows Python gives it (one page,
already filtered, sorted and collapsed) and reports clicks back as trait changes; Python decides
what to show, the browser only how.
"""

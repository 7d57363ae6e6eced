"""The graph explorer's page: vis-network from the installed pyvis package, in a sandboxed iframe.

Offline and safe (see docs/design.md, "Graph pages: offline and safe"):

- ``vis-network.min.js`` is read from the installed pyvis package (no CDN, no Bootstrap) and
  inlined in a small template of our own; pyvis's own HTML templates are not used, so its
  ``innerHTML`` popup for titles containing ``href`` never runs;
- the nodes and edges go in as JSON with ``<``, ``>`` and ``&`` escaped (``\\u003c``...), so no
  entity text can close the ``<script>`` element;
- labels are drawn on the canvas and tooltips are DOM elements filled with ``textContent``:
  entity names, types and descriptions are always shown as text;
- the page goes into ``<iframe sandbox="allow-scripts" srcdoc="...">`` (``srcdoc`` escaped with
  ``html.escape(page, quote=True)``), without ``allow-same-origin``: nothing in the frame can
  reach JupyterLab.

The frame cannot read JupyterLab's CSS variables, so colours come from a light or dark
:data:`PALETTES` entry picked by the explorer's ``theme=`` argument.
"""

from __future__ import annotations

import functools
import html
import importlib.resources
import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agcore_lab.kg.types import GraphEntity, ScoredEntity

__all__ = [
    "PALETTES",
    "TYPE_COLOURS",
    "iframe",
    "page",
    "related_table",
    "tip_lines",
    "vis_network_js",
]

PALETTES: dict[str, dict[str, str]] = {
    "light": {"background": "#ffffff", "font": "#1f1f1f", "edge": "#9e9e9e", "border": "#e0e0e0"},
    "dark": {"background": "#111111", "font": "#e0e0e0", "edge": "#757575", "border": "#424242"},
}
"""Frame colours by theme (the JupyterLab Light / Dark layout and font colours)."""

TYPE_COLOURS: dict[str, tuple[str, ...]] = {
    "light": ("#1976d2", "#2e7d32", "#f57c00", "#8e24aa", "#c62828", "#00838f", "#6d4c41"),
    "dark": ("#64b5f6", "#81c784", "#ffb74d", "#ce93d8", "#ef9a9a", "#4dd0e1", "#bcaaa4"),
}
"""Node colours, one per entity type (types sorted by name, colours reused in turn)."""

_END_SCRIPT = re.compile(r"</script", re.IGNORECASE)
_VERSION = re.compile(r"vis-(\d+)\.(\d+)\.(\d+)")


@functools.lru_cache(maxsize=1)
def vis_network_js() -> str:
    """The newest ``vis-network.min.js`` shipped inside the installed pyvis package."""
    root = importlib.resources.files("pyvis")
    found: list[tuple[tuple[int, ...], Any]] = []
    for folder in (root / "lib", root / "templates" / "lib"):
        if not folder.is_dir():
            continue
        for sub in folder.iterdir():
            match = _VERSION.fullmatch(sub.name)
            script = sub / "vis-network.min.js"
            if match and script.is_file():
                found.append((tuple(int(g) for g in match.groups()), script))
    if not found:
        raise FileNotFoundError("vis-network.min.js not found in the installed pyvis package")
    script = max(found, key=lambda item: item[0])[1]
    return str(script.read_text(encoding="utf-8"))


def _json(data: Any) -> str:
    # No "<", ">" or "&" at all: nothing can end the <script> element or open a tag.
    text = json.dumps(data, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById("agc-data").textContent);
  var p = data.palette;
  function tip(lines) {
    var box = document.createElement("div");
    lines.forEach(function (line, i) {
      var row = document.createElement("div");
      row.textContent = line;
      if (i === 0) { row.style.fontWeight = "600"; }
      box.appendChild(row);
    });
    return box;
  }
  var nodes = new vis.DataSet(data.nodes.map(function (n) {
    return {
      id: n.id, label: n.label, title: tip(n.tip),
      color: {background: n.color, border: n.center ? p.font : n.color},
      borderWidth: n.center ? 3 : 1,
      font: {color: p.font}, shape: "dot", size: n.center ? 18 : 11
    };
  }));
  var edges = new vis.DataSet(data.edges.map(function (e, i) {
    return {
      id: i, from: e.from, to: e.to, label: e.label, title: tip([e.label]),
      arrows: "to", color: {color: p.edge}, font: {color: p.font, strokeWidth: 0, size: 10}
    };
  }));
  var message = document.getElementById("agc-message");
  message.textContent = data.message;
  message.style.display = data.message ? "block" : "none";
  window.network = new vis.Network(document.getElementById("agc-graph"),
    {nodes: nodes, edges: edges},
    {physics: {stabilization: {iterations: 150}}, interaction: {hover: true}});
})();
"""

_TEMPLATE = """<!DOCTYPE html>
<html><head><meta charset="utf-8">
<style>
html, body {{ margin: 0; height: 100%; background: {background}; color: {font};
  font-family: system-ui, sans-serif; font-size: 13px; }}
#agc-graph {{ position: absolute; top: 0; bottom: 0; left: 0; right: 0; }}
#agc-message {{ position: absolute; top: 4px; left: 6px; right: 6px; z-index: 2;
  padding: 3px 6px; border: 1px solid {border}; background: {background}; }}
div.vis-tooltip {{ position: absolute; visibility: hidden; padding: 4px 6px;
  white-space: pre-wrap; max-width: 360px; color: {font}; background: {background};
  border: 1px solid {border}; border-radius: 3px; box-shadow: 0 1px 4px rgba(0,0,0,.3); }}
</style></head>
<body><div id="agc-message"></div><div id="agc-graph"></div>
<script id="agc-data" type="application/json">{data}</script>
<script>{vis}</script>
<script>{script}</script>
</body></html>"""


def page(
    nodes: list[dict[str, Any]], edges: list[dict[str, Any]], *, theme: str, message: str = ""
) -> str:
    """The whole page: ``nodes`` have ``id``, ``label``, ``tip`` (lines), ``color``, ``center``;
    ``edges`` have ``from``, ``to`` and ``label``; ``message`` is shown above the graph."""
    palette = PALETTES[theme]
    data = _json({"nodes": nodes, "edges": edges, "palette": palette, "message": message})
    # Only "</script" could end the element early (the file has none; a blanket "</" escape
    # would break its regular expressions such as /</).
    vis = _END_SCRIPT.sub("<\\\\/script", vis_network_js())
    return _TEMPLATE.format(data=data, vis=vis, script=_SCRIPT, **palette)


def iframe(page_html: str, *, height: int = 460) -> str:
    """``page_html`` in a sandboxed iframe (scripts only: no same origin, no popups, no forms)."""
    return (
        f'<iframe class="agc-graph-frame" sandbox="allow-scripts" '
        f'style="width: 100%; height: {int(height)}px; border: 0; display: block;" '
        f'srcdoc="{html.escape(page_html, quote=True)}"></iframe>'
    )


def tip_lines(entity: GraphEntity) -> list[str]:
    """A node's tooltip, as lines of text: name, type and id, description, tags."""
    lines = [entity.name, f"{entity.entity_type} · {entity.id}"]
    if entity.description:
        lines.append(entity.description)
    if entity.tags:
        lines.append("tags: " + ", ".join(entity.tags))
    return lines


def related_table(center: str | None, related: list[ScoredEntity]) -> str:
    """The side table (escaped HTML): the related entities with their scores and paths."""
    if center is None:
        return '<div class="agc-status">Search for an entity to list its neighbourhood.</div>'
    rows = "".join(
        "<tr>"
        f"<td>{html.escape(r.entity.name)}</td>"
        f"<td>{html.escape(r.entity.entity_type)}</td>"
        f"<td>{r.score:.3g}</td>"
        f'<td class="agc-meta">{html.escape(" → ".join(r.path))}</td>'
        "</tr>"
        for r in related
    )
    head = "<tr><th>entity</th><th>type</th><th>score</th><th>path</th></tr>"
    return (
        f'<div class="agc-head">related to <b>{html.escape(center)}</b></div>'
        f'<table class="agc-table agc-related">{head}{rows}</table>'
    )

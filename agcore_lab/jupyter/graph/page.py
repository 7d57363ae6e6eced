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

The frame cannot read JupyterLab's CSS variables (it shares no origin with the page): its host
(:mod:`.frame`) reads them and posts the theme into the frame — light or dark and the layout
and font colours — whenever JupyterLab's theme changes (``theme="auto"``, the default); the node
colours then come from the matching :data:`TYPE_COLOURS` set. A click on a node posts only the
node's id back to the host.
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
    "snapshot",
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
  var theme = data.theme === "dark" ? "dark" : "light";
  var p = Object.assign({}, data.palettes[theme]);
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
  function nodeStyle(n) {
    var colour = n.colors[theme];
    return {
      id: n.id, color: {background: colour, border: n.center ? p.font : colour},
      font: {color: p.font}
    };
  }
  var nodes = new vis.DataSet(data.nodes.map(function (n) {
    var style = nodeStyle(n);
    style.label = n.label;
    style.title = tip(n.tip);
    style.borderWidth = n.center ? 3 : 1;
    style.shape = "dot";
    style.size = n.center ? 18 : 11;
    return style;
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
  var legend = document.getElementById("agc-legend");
  function drawLegend() {
    legend.replaceChildren();
    data.types.forEach(function (t) {
      var row = document.createElement("div");
      row.className = "agc-legend-row";
      var dot = document.createElement("span");
      dot.className = "agc-dot";
      dot.style.background = t.colors[theme];
      var name = document.createElement("span");
      name.textContent = t.type;
      row.appendChild(dot);
      row.appendChild(name);
      legend.appendChild(row);
    });
    legend.style.display = data.types.length ? "block" : "none";
  }
  function paint() {
    var body = document.body.style;
    body.background = p.background;
    body.color = p.font;
    document.documentElement.style.setProperty("--agc-border", p.border);
    document.documentElement.style.setProperty("--agc-bg", p.background);
    document.documentElement.style.setProperty("--agc-font", p.font);
    nodes.update(data.nodes.map(nodeStyle));
    edges.update(data.edges.map(function (e, i) {
      return {id: i, color: {color: p.edge}, font: {color: p.font, strokeWidth: 0, size: 10}};
    }));
    drawLegend();
  }
  window.network = new vis.Network(document.getElementById("agc-graph"),
    {nodes: nodes, edges: edges},
    {layout: {randomSeed: 7}, physics: {stabilization: {iterations: 150}},
     interaction: {hover: true}});
  window.agcTheme = function () { return theme; };
  // A click on a node asks the notebook to re-centre on it: only the node id crosses.
  window.network.on("click", function (params) {
    if (params.nodes.length && window.parent !== window) {
      window.parent.postMessage({agc: "node", id: String(params.nodes[0])}, "*");
    }
  });
  // The host (frame.js) sends JupyterLab's theme: light or dark, and its colours.
  window.addEventListener("message", function (event) {
    var m = event.data || {};
    if (event.source !== window.parent || m.agc !== "theme" || data.theme !== "auto") return;
    theme = m.light ? "light" : "dark";
    p = Object.assign({}, data.palettes[theme]);
    ["background", "font", "border"].forEach(function (key) {
      if (typeof m[key] === "string" && /^[#a-z0-9(), .%-]{1,40}$/i.test(m[key])) p[key] = m[key];
    });
    paint();
  });
  paint();
  if (window.parent !== window) window.parent.postMessage({agc: "ready"}, "*");
})();
"""

_TEMPLATE = """<!DOCTYPE html>
<html><head><meta charset="utf-8">
<style>
html, body {{ margin: 0; height: 100%; font-family: system-ui, sans-serif; font-size: 13px; }}
#agc-graph {{ position: absolute; top: 0; bottom: 0; left: 0; right: 0; }}
#agc-message {{ position: absolute; top: 4px; left: 6px; right: 6px; z-index: 2;
  padding: 3px 6px; border: 1px solid var(--agc-border); background: var(--agc-bg); }}
#agc-legend {{ position: absolute; bottom: 6px; left: 6px; z-index: 2; padding: 3px 6px;
  border: 1px solid var(--agc-border); background: var(--agc-bg); border-radius: 3px; }}
.agc-legend-row {{ display: flex; align-items: center; gap: 5px; line-height: 1.5; }}
.agc-dot {{ display: inline-block; width: 10px; height: 10px; border-radius: 50%; }}
div.vis-tooltip {{ position: absolute; visibility: hidden; padding: 4px 6px;
  white-space: pre-wrap; max-width: 360px; color: var(--agc-font); background: var(--agc-bg);
  border: 1px solid var(--agc-border); border-radius: 3px; box-shadow: 0 1px 4px rgba(0,0,0,.3); }}
</style></head>
<body><div id="agc-message"></div><div id="agc-legend"></div><div id="agc-graph"></div>
<script id="agc-data" type="application/json">{data}</script>
<script>{vis}</script>
<script>{script}</script>
</body></html>"""


def page(
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    *,
    theme: str,
    message: str = "",
    types: list[dict[str, Any]] | None = None,
) -> str:
    """The whole page.

    Args:
        nodes: ``id``, ``label``, ``tip`` (lines), ``colors`` (``{"light": ..., "dark": ...}``)
            and ``center``.
        edges: ``from``, ``to`` and ``label``.
        theme: ``"light"``, ``"dark"``, or ``"auto"`` (light until the host sends the
            notebook's theme).
        message: Shown above the graph.
        types: The legend: ``type`` and ``colors`` per entity type.
    """
    data = _json(
        {
            "nodes": nodes,
            "edges": edges,
            "palettes": PALETTES,
            "theme": theme,
            "message": message,
            "types": types or [],
        }
    )
    # Only "</script" could end the element early (the file has none; a blanket "</" escape
    # would break its regular expressions such as /</).
    vis = _END_SCRIPT.sub("<\\\\/script", vis_network_js())
    return _TEMPLATE.format(data=data, vis=vis, script=_SCRIPT)


def iframe(page_html: str, *, height: int = 460) -> str:
    """``page_html`` in a sandboxed iframe (scripts only: no same origin, no popups, no forms)."""
    return (
        f'<iframe class="agc-graph-frame" sandbox="allow-scripts" '
        f'style="width: 100%; height: {int(height)}px; border: 0; display: block;" '
        f'srcdoc="{html.escape(page_html, quote=True)}"></iframe>'
    )


def snapshot(
    *,
    header: str,
    center: str | None,
    node_ids: list[str],
    message: str,
    table: str,
    status: str,
) -> str:
    """The explorer's static HTML snapshot (``header``, ``table`` and ``status`` are HTML
    already escaped by the explorer; the rest is escaped here)."""
    where = f"neighbourhood of <b>{html.escape(center)}</b>" if center else "the whole graph"
    names = ", ".join(html.escape(n) for n in node_ids[:50])
    more = f" … and {len(node_ids) - 50} more" if len(node_ids) > 50 else ""
    drawn = f"<div class='agc-meta'>drawn: {names}{more}</div>" if node_ids else ""
    note = f"<div class='agc-status'>{html.escape(message)}</div>" if message else ""
    return (
        f'<div class="agc-view agc-graph-explorer">{header}'
        f"<div class='agc-status'>Showing {where} ({len(node_ids)} entities drawn).</div>"
        f"{note}{drawn}{table}{status}</div>"
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

"""CSS for agcore_lab's views, built on JupyterLab's CSS variables so the dark theme works.

Every selector is scoped under ``.agc-view``: the rules are injected with the view's HTML and
must not restyle anything else on the page. Highlights mix a theme colour with transparency, so
they read on light and dark backgrounds alike. Fallback values keep exported HTML (nbviewer,
nbconvert), where the ``--jp-*`` variables are missing, readable.
"""

from __future__ import annotations

__all__ = ["DISABLED_OPACITY", "STYLE", "style_tag"]

DISABLED_OPACITY = 0.45
"""How much a disabled control is dimmed (on top of its grey), in every view and theme."""


def _tint(var: str, fallback: str, percent: int) -> str:
    return f"color-mix(in srgb, var({var}, {fallback}) {percent}%, transparent)"


STYLE = f"""
.agc-view {{
  color: var(--jp-ui-font-color1, #1f1f1f);
  background: var(--jp-layout-color1, #ffffff);
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--jp-ui-font-size1, 13px);
  line-height: 1.45;
}}
/* A view's height is capped (it scrolls inside): its rows must keep their own height, never
   shrink into one another. */
.agc-view.widget-box > * {{ flex-shrink: 0; }}
/* Shown from saved widget state with no kernel, ipywidgets marks every widget "disconnected";
   one mark, on the view itself, is enough. */
.agc-view .jupyter-widgets-disconnected::before {{ content: none; }}
.agc-view .agc-gone {{
  padding: 3px 6px;
  border-left: 3px solid var(--jp-warn-color1, #f57c00);
  background: var(--jp-layout-color2, #eeeeee);
}}
.agc-view .agc-head {{ margin: 2px 0 6px 0; color: var(--jp-ui-font-color1, #1f1f1f); }}
.agc-view .agc-head .agc-count {{ margin-left: 8px; color: var(--jp-ui-font-color2, #555); }}
.agc-view .agc-head.agc-summary {{
  white-space: nowrap;
  overflow: hidden;
  text-overflow: ellipsis;
}}
.agc-view .agc-cell .agc-line {{
  display: flex;
  align-items: baseline;
  gap: 6px;
  min-width: 0;
}}
.agc-view .agc-line .agc-meta {{ flex: none; }}
.agc-view .agc-line .agc-text, .agc-view .agc-line .agc-tools {{ min-width: 0; }}
.agc-view .agc-grid {{
  display: grid;
  grid-template-columns: minmax(0, 1fr) minmax(0, 1fr);
  gap: 2px 8px;
}}
.agc-view .agc-colhead {{
  font-weight: 600;
  padding: 3px 6px;
  border-bottom: 2px solid var(--jp-border-color1, #bdbdbd);
}}
.agc-view .agc-cell {{
  border: 1px solid var(--jp-border-color2, #e0e0e0);
  border-radius: 3px;
  padding: 3px 6px;
  min-height: 1.4em;
  background: var(--jp-layout-color1, #ffffff);
}}
.agc-view .agc-empty {{
  border-style: dashed;
  background: transparent;
  opacity: 0.5;
}}
.agc-view .agc-shared, .agc-view .agc-equal {{ opacity: 0.62; }}
.agc-view .agc-changed {{
  background: {_tint("--jp-warn-color2", "#ffe082", 30)};
  border-color: var(--jp-warn-color1, #f9a825);
}}
.agc-view .agc-right_only {{
  background: {_tint("--jp-success-color2", "#a5d6a7", 35)};
  border-color: var(--jp-success-color1, #2e7d32);
}}
.agc-view .agc-left_only {{
  background: {_tint("--jp-error-color2", "#ef9a9a", 30)};
  border-color: var(--jp-error-color1, #c62828);
}}
.agc-view .agc-meta {{
  font-size: var(--jp-ui-font-size0, 11px);
  color: var(--jp-ui-font-color2, #555);
}}
.agc-view .agc-role {{
  display: inline-block;
  padding: 0 5px;
  border-radius: 8px;
  font-weight: 600;
  color: var(--jp-ui-inverse-font-color1, #fff);
  background: var(--jp-layout-color4, #757575);
}}
.agc-view .agc-role-user {{ background: var(--jp-brand-color1, #1976d2); }}
.agc-view .agc-role-assistant {{ background: var(--jp-success-color1, #2e7d32); }}
.agc-view .agc-role-tool {{ background: var(--jp-warn-color1, #f57c00); }}
.agc-view .agc-role-system {{ background: var(--jp-layout-color4, #757575); }}
.agc-view .agc-text {{
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  font-family: var(--jp-content-font-family, system-ui, sans-serif);
}}
.agc-view .agc-tools {{
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  font-family: var(--jp-code-font-family, monospace);
  font-size: var(--jp-code-font-size, 12px);
  color: var(--jp-ui-font-color2, #555);
}}
.agc-view .agc-tools-changed {{ outline: 1px dashed var(--jp-warn-color1, #f9a825); }}
.agc-view ins {{
  text-decoration: none;
  background: {_tint("--jp-success-color1", "#2e7d32", 35)};
}}
.agc-view del {{
  text-decoration: line-through;
  background: {_tint("--jp-error-color1", "#c62828", 30)};
}}
.agc-view .agc-note {{
  grid-column: 1 / span 2;
  padding: 3px 6px;
  color: var(--jp-ui-font-color2, #555);
  background: var(--jp-layout-color2, #eeeeee);
  border-radius: 3px;
  font-style: italic;
}}
.agc-view .agc-more-text {{ color: var(--jp-ui-font-color2, #555); font-style: italic; }}
.agc-view .agc-status {{ color: var(--jp-ui-font-color2, #555); }}
.agc-view .agc-error {{
  color: var(--jp-error-color1, #c62828);
  white-space: pre-wrap;
  font-family: var(--jp-code-font-family, monospace);
}}
.agc-view .agc-preview {{
  padding: 4px 6px;
  border-left: 3px solid var(--jp-brand-color1, #1976d2);
  background: var(--jp-layout-color2, #eeeeee);
}}
.agc-view table.agc-table {{ border-collapse: collapse; }}
.agc-view table.agc-table th, .agc-view table.agc-table td {{
  padding: 2px 8px;
  text-align: left;
  border-bottom: 1px solid var(--jp-border-color2, #e0e0e0);
}}
.agc-view table.agc-table tr.agc-selected td {{
  background: {_tint("--jp-brand-color1", "#1976d2", 18)};
}}
.agc-view table.agc-details th {{ color: var(--jp-ui-font-color2, #555); font-weight: 600; }}
.agc-view .agc-tree-list select, .agc-view .agc-ckpt-list select, .agc-view pre.agc-columns {{
  font-family: var(--jp-code-font-family, monospace);
  font-size: var(--jp-code-font-size, 12px);
  white-space: pre;
}}
.agc-view pre.agc-columns {{
  margin: 4px 0 0 0;
  padding: 0 4px;
  color: var(--jp-ui-font-color2, #555);
  background: transparent;
}}
.agc-view .agc-tree-row {{
  font-family: var(--jp-code-font-family, monospace);
  white-space: pre;
}}
.agc-view .agc-tree-row.agc-selected {{ background: {_tint("--jp-brand-color1", "#1976d2", 18)}; }}
.agc-view ol.agc-messages {{ margin: 2px 0; padding-left: 22px; }}
.agc-view ol.agc-messages li {{ margin: 1px 0; }}
.agc-view svg.agc-plot {{ display: block; max-width: 100%; height: auto; }}
.agc-view svg.agc-plot .agc-axis {{ stroke: var(--jp-border-color1, #bdbdbd); stroke-width: 1; }}
.agc-view svg.agc-plot .agc-tick {{
  fill: var(--jp-ui-font-color2, #555);
  font-size: 10px;
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
}}
.agc-view svg.agc-plot .agc-tokens-label {{ fill: var(--jp-brand-color1, #1976d2); }}
.agc-view svg.agc-plot .agc-cost-label {{ fill: var(--jp-warn-color1, #f57c00); }}
.agc-view svg.agc-plot polyline {{ fill: none; stroke-width: 1.5; }}
.agc-view svg.agc-plot .agc-line-tokens {{ stroke: var(--jp-brand-color1, #1976d2); }}
.agc-view svg.agc-plot .agc-line-cost {{
  stroke: var(--jp-warn-color1, #f57c00);
  stroke-dasharray: 4 3;
}}
.agc-view svg.agc-plot .agc-pt {{
  fill: var(--jp-brand-color1, #1976d2);
  stroke: var(--jp-layout-color1, #ffffff);
}}
.agc-view svg.agc-plot .agc-pt-rollback {{ fill: var(--jp-error-color1, #c62828); }}
.agc-view svg.agc-plot .agc-pt-fork {{ fill: var(--jp-success-color1, #2e7d32); }}
.agc-view svg.agc-plot .agc-pt-manual {{ fill: var(--jp-warn-color1, #f57c00); }}
.agc-view svg.agc-history {{ display: block; max-width: 100%; height: auto; }}
.agc-view svg.agc-history polyline.agc-lane {{
  fill: none;
  stroke: var(--jp-brand-color1, #1976d2);
  stroke-width: 2;
}}
.agc-view svg.agc-history polyline.agc-lane-branch {{ stroke: var(--jp-error-color1, #c62828); }}
.agc-view svg.agc-history .agc-fork-stub {{
  stroke: var(--jp-success-color1, #2e7d32);
  stroke-width: 1.5;
  stroke-dasharray: 2 2;
}}
.agc-view svg.agc-plot .agc-pt-selected {{
  stroke: var(--jp-ui-font-color1, #1f1f1f);
  stroke-width: 2;
}}
.agc-view .agc-badge {{
  display: inline-block;
  padding: 0 5px;
  border-radius: 8px;
  font-size: var(--jp-ui-font-size0, 11px);
  white-space: nowrap;
  color: var(--jp-ui-inverse-font-color1, #fff);
  background: var(--jp-layout-color4, #757575);
}}
.agc-view .agc-badge-PENDING_APPROVAL, .agc-view .agc-badge-running {{
  background: var(--jp-warn-color1, #f57c00);
}}
.agc-view .agc-badge-waiting_for_approval {{ background: var(--jp-accent-color1, #8e24aa); }}
.agc-view .agc-badge-EXECUTED, .agc-view .agc-badge-completed, .agc-view .agc-badge-done {{
  background: var(--jp-success-color1, #2e7d32);
}}
.agc-view .agc-badge-EXPIRED, .agc-view .agc-badge-failed, .agc-view .agc-badge-timed_out,
.agc-view .agc-badge-cancelled {{
  background: var(--jp-error-color1, #c62828);
}}
.agc-view .agc-counts {{ margin-left: 8px; }}
/* Disabled controls, in every view and both themes: greyed and dimmed, whatever their style
   (a primary or danger button keeps its colour otherwise, and reads as active in the dark
   theme). The selectors outrank ipywidgets' own ``.jupyter-widgets.jupyter-button`` rules. */
.agc-view .jupyter-widgets.jupyter-button:disabled,
.agc-view .jupyter-widgets.jupyter-button.mod-primary:disabled,
.agc-view .jupyter-widgets.jupyter-button.mod-danger:disabled,
.agc-view .jupyter-widgets.jupyter-button.mod-success:disabled,
.agc-view .jupyter-widgets.jupyter-button.mod-warning:disabled,
.agc-view .jupyter-widgets.jupyter-button.mod-info:disabled,
.agc-view .jupyter-widgets select:disabled,
.agc-view .jupyter-widgets input:disabled,
.agc-view .jupyter-widgets textarea:disabled {{
  opacity: {DISABLED_OPACITY};
  color: var(--jp-ui-font-color3, #9e9e9e);
  background-color: var(--jp-layout-color2, #eeeeee);
  box-shadow: none;
  cursor: not-allowed;
}}
"""


def style_tag() -> str:
    """The ``<style>`` element to put in front of a view's HTML."""
    return f"<style>{STYLE}</style>"

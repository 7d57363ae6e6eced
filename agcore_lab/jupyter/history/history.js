// The checkpoint history (anywidget ESM, assembled by graph.py from format.js, canvas.js,
// table.js and this file): a git-graph style canvas with axes, hover, zoom and brush, and a
// virtualised sortable table below. Python sends every checkpoint as columns (`data`) and the
// table's order (`order`); the browser only draws them and reports clicks as trait changes.
// Text goes in with textContent, never innerHTML.

function render({ model, el: root }) {
  const started = performance.now();
  root.classList.add("agc-ht");

  // -- layout --------------------------------------------------------------------------------
  const bar = el("div", "agc-ht-bar");
  const summary = el("span", "agc-ht-summary");
  const axisTurn = el("button", "agc-ht-btn", "turn");
  const axisTime = el("button", "agc-ht-btn", "time");
  const reset = el("button", "agc-ht-btn agc-ht-reset", "Reset");
  axisTurn.title = "x axis: turn";
  axisTime.title = "x axis: time (UTC)";
  reset.title = "Show the whole history (clear the brush and the zoom)";
  const hint = el("span", "agc-ht-hint", "drag: brush · wheel: zoom · shift-drag: pan");
  const legend = el("span", "agc-ht-legend");
  for (const [kind, text] of [
    ["auto", "turn"],
    ["manual", "manual"],
    ["rollback", "rollback"],
    ["fork", "fork"],
  ]) {
    const item = el("span", "agc-ht-key agc-ht-key-" + kind);
    item.append(el("i"), document.createTextNode(text));
    legend.append(item);
  }
  bar.append(summary, legend, el("span", "agc-ht-gap"), hint, axisTurn, axisTime, reset);
  const plot = el("div", "agc-ht-plot");
  const canvas = el("canvas", "agc-ht-canvas");
  const tip = el("div", "agc-ht-tip");
  plot.append(canvas, tip);
  const note = el("div", "agc-ht-note");
  const tableWrap = el("div", "agc-ht-scroll");
  const table = el("table", "agc-ht-table");
  const head = el("thead");
  const body = el("tbody");
  table.append(head, body);
  tableWrap.append(table);
  const count = el("div", "agc-ht-count");
  const callsBox = el("div", "agc-ht-calls");
  root.append(bar, plot, note, tableWrap, count, callsBox);

  function send(values) {
    for (const [name, value] of Object.entries(values)) model.set(name, value);
    model.save_changes();
  }

  const graph = historyGraph({ model, plot, canvas, tip, reset, axisTurn, axisTime, send, started });
  const rowsView = historyTable({ model, tableWrap, head, body, count, callsBox, send });

  // -- wiring --------------------------------------------------------------------------------
  function drawBar() {
    const data = model.get("data") || {};
    const n = (data.ids || []).length;
    const gone = model.get("disabled");
    const time = model.get("axis") === "time";
    root.classList.toggle("agc-ht-gone", !!gone);
    axisTurn.classList.toggle("agc-ht-on", !time);
    axisTime.classList.toggle("agc-ht-on", time);
    const laneCount = (data.lanes || []).length;
    const branches = laneCount > 1 ? ` · ${laneCount - 1} branch${laneCount === 2 ? "" : "es"}` : "";
    summary.textContent = gone
      ? "session destroyed: no history to show"
      : `${n.toLocaleString("en-US")} checkpoint${n === 1 ? "" : "s"}${branches}`;
    note.textContent = !gone && !n ? "no checkpoints yet" : "";
  }

  function everything() {
    graph.prepare();
    rowsView.prepare();
    drawBar();
    rowsView.drawHead();
    rowsView.drawRows();
    rowsView.drawCalls();
    graph.draw();
  }

  model.on("change:data", everything);
  model.on("change:axis", everything);
  model.on("change:brush", () => {
    graph.applyBrush();
    graph.redraw();
    rowsView.drawRows();
  });
  model.on("change:order", rowsView.drawRows);
  model.on("change:sort_key", rowsView.drawHead);
  model.on("change:descending", rowsView.drawHead);
  model.on("change:columns", () => {
    rowsView.drawHead();
    rowsView.drawRows();
  });
  model.on("change:selected", () => {
    graph.redraw();
    rowsView.scrollToSelected();
    rowsView.drawRows();
    rowsView.drawCalls();
  });
  model.on("change:calls", rowsView.drawCalls);
  model.on("change:disabled", drawBar);

  graph.readColors();
  const themeWatch = new MutationObserver(() => {
    graph.readColors();
    graph.redraw();
  });
  themeWatch.observe(document.body, {
    attributes: true,
    attributeFilter: ["data-jp-theme-light", "data-jp-theme-name"],
  });
  const sizeWatch = new ResizeObserver(() => graph.draw());
  sizeWatch.observe(plot);
  everything();
  return () => {
    themeWatch.disconnect();
    sizeWatch.disconnect();
    graph.destroy();
  };
}

export default { render };

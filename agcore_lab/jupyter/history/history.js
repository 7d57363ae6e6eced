// The checkpoint history (anywidget ESM): a git-graph style canvas with axes, hover, zoom and
// brush, and a virtualised sortable table below. Python sends every checkpoint as columns
// (`data`) and the table's order (`order`); this file only draws them and reports clicks as
// trait changes. Text goes in with textContent, never innerHTML.

const SOURCES = ["auto", "manual", "rollback", "fork"];
const ROW = 26; // graph row per branch
const TOP = 10;
const BOTTOM = 36;
const LEFT = 150;
const RIGHT = 16;
const ROW_H = 22; // table row
const TIME_STEPS = [
  1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
  172800, 604800, 2592000,
];

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function formatCost(cost) {
  if (!(cost > 0)) return "—";
  if (cost >= 1) {
    return "$" + cost.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }
  if (cost >= 0.0001) return "$" + Number(cost.toPrecision(3)).toString();
  return "<$0.0001";
}

function isoParts(seconds) {
  const iso = new Date(seconds * 1000).toISOString(); // UTC
  return { date: iso.slice(0, 10), time: iso.slice(11, 19) };
}

function fullTime(seconds) {
  const p = isoParts(seconds);
  return p.date + " " + p.time;
}

function niceTurnStep(span) {
  const raw = Math.max(span / 8, 1e-9);
  const magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) {
    if (m * magnitude >= raw) return Math.max(1, m * magnitude);
  }
  return Math.max(1, 10 * magnitude);
}

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
  bar.append(summary, el("span", "agc-ht-gap"), hint, axisTurn, axisTime, reset);
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

  // -- state ---------------------------------------------------------------------------------
  let data = {};
  let n = 0;
  let xs = new Float64Array(0);
  let domain = [0, 1];
  let view = [0, 1];
  let lanes = []; // per lane: indices, oldest first
  let byRow = []; // per graph row: indices sorted by x (hover)
  let rows = 1;
  let rowOf = new Int32Array(0); // each checkpoint's graph row
  let width = 0;
  let colors = {};
  let drag = null; // {mode: "brush"|"pan", x0, x1, view0}
  let hovered = -1;
  let painted = false;
  let indexOfId = new Map();

  function send(values) {
    for (const [name, value] of Object.entries(values)) model.set(name, value);
    model.save_changes();
  }

  function readColors() {
    const css = getComputedStyle(root);
    const pick = (name, fallback) => (css.getPropertyValue(name) || "").trim() || fallback;
    colors = {
      lane: pick("--jp-brand-color1", "#1976d2"),
      branch: pick("--jp-error-color1", "#c62828"),
      auto: pick("--jp-brand-color1", "#1976d2"),
      manual: pick("--jp-warn-color1", "#f57c00"),
      rollback: pick("--jp-error-color1", "#c62828"),
      fork: pick("--jp-success-color1", "#2e7d32"),
      text: pick("--jp-ui-font-color1", "#1f1f1f"),
      muted: pick("--jp-ui-font-color2", "#555555"),
      axis: pick("--jp-border-color1", "#bdbdbd"),
      grid: pick("--jp-border-color3", "#eeeeee"),
      bg: pick("--jp-layout-color1", "#ffffff"),
      brush: pick("--jp-brand-color2", "#64b5f6"),
      font: pick("--jp-ui-font-family", "system-ui, sans-serif"),
    };
  }

  function axis() {
    return model.get("axis") === "time" ? "time" : "turn";
  }

  function prepare() {
    data = model.get("data") || {};
    n = (data.ids || []).length;
    const column = axis() === "time" ? data.t || [] : data.x || [];
    xs = Float64Array.from(column);
    indexOfId = new Map((data.ids || []).map((id, i) => [id, i]));
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < n; i++) {
      if (xs[i] < lo) lo = xs[i];
      if (xs[i] > hi) hi = xs[i];
    }
    if (!n) {
      lo = 0;
      hi = 1;
    }
    const pad = axis() === "time" ? Math.max(1, (hi - lo) * 0.02) : 0.75;
    domain = [lo - (axis() === "time" ? pad : 0.25), hi + pad];
    const meta = data.lanes || [];
    const laneOf = data.lane || [];
    lanes = Array.from({ length: meta.length }, () => []);
    rowOf = new Int32Array(n);
    rows = 1;
    for (const lane of meta) rows = Math.max(rows, lane.row + 1);
    for (let i = 0; i < n; i++) {
      const lane = laneOf[i];
      if (!lanes[lane]) lanes[lane] = [];
      lanes[lane].push(i);
      rowOf[i] = meta[lane] ? meta[lane].row : 0;
    }
    byRow = Array.from({ length: rows }, () => []);
    for (let i = 0; i < n; i++) byRow[rowOf[i]].push(i);
    for (const list of byRow) list.sort((a, b) => xs[a] - xs[b]);
    applyBrush();
  }

  function applyBrush() {
    const brush = model.get("brush") || [];
    view = brush.length === 2 ? [brush[0], brush[1]] : [domain[0], domain[1]];
    if (view[1] - view[0] < 1e-6) view = [view[0] - 0.5, view[1] + 0.5];
  }

  function plotWidth() {
    return Math.max(10, width - LEFT - RIGHT);
  }

  function px(value) {
    return LEFT + ((value - view[0]) / (view[1] - view[0])) * plotWidth();
  }

  function unpx(x) {
    return view[0] + ((x - LEFT) / plotWidth()) * (view[1] - view[0]);
  }

  function rowY(row) {
    return TOP + ROW * (row + 0.5);
  }

  function ticks() {
    const span = view[1] - view[0];
    const out = [];
    if (axis() === "turn") {
      const step = niceTurnStep(span);
      for (let v = Math.ceil(view[0] / step) * step; v <= view[1]; v += step) {
        out.push({ v, label: (Math.round(v) || 0).toLocaleString("en-US"), sub: "" });
      }
      return out;
    }
    const t0 = data.t0 || 0;
    const step = TIME_STEPS.find((s) => s >= span / 7) || TIME_STEPS[TIME_STEPS.length - 1];
    let lastDate = "";
    const first = Math.ceil((t0 + view[0]) / step) * step;
    for (let abs = first; abs <= t0 + view[1]; abs += step) {
      const p = isoParts(abs);
      const label = step >= 86400 ? p.date.slice(5) : step < 60 ? p.time : p.time.slice(0, 5);
      const sub = p.date !== lastDate ? p.date : "";
      lastDate = p.date;
      out.push({ v: abs - t0, label, sub: step >= 86400 ? "" : sub });
    }
    return out;
  }

  // -- the graph -----------------------------------------------------------------------------
  function draw() {
    width = plot.clientWidth;
    if (!width) return;
    const height = TOP + ROW * rows + BOTTOM;
    const dpr = window.devicePixelRatio || 1;
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(height * dpr)) {
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(height * dpr);
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const base = TOP + ROW * rows;
    const font = "10px " + colors.font;
    ctx.font = font;
    ctx.lineWidth = 1;
    // Axis, ticks, grid.
    ctx.strokeStyle = colors.axis;
    ctx.beginPath();
    ctx.moveTo(LEFT, base + 0.5);
    ctx.lineTo(LEFT + plotWidth(), base + 0.5);
    ctx.stroke();
    ctx.fillStyle = colors.muted;
    ctx.textAlign = "center";
    for (const tick of ticks()) {
      const x = Math.round(px(tick.v)) + 0.5;
      if (x < LEFT - 1 || x > LEFT + plotWidth() + 1) continue;
      ctx.strokeStyle = colors.grid;
      ctx.beginPath();
      ctx.moveTo(x, TOP);
      ctx.lineTo(x, base);
      ctx.stroke();
      ctx.strokeStyle = colors.axis;
      ctx.beginPath();
      ctx.moveTo(x, base);
      ctx.lineTo(x, base + 4);
      ctx.stroke();
      ctx.fillText(tick.label, x, base + 14);
      if (tick.sub) ctx.fillText(tick.sub, x, base + 25);
    }
    ctx.fillText(axis() === "time" ? "time (UTC)" : "turn", LEFT + plotWidth() / 2, base + 34);
    // Row labels: where each branch came from.
    ctx.textAlign = "right";
    const labels = new Map();
    for (const lane of data.lanes || []) {
      const seen = labels.get(lane.row);
      labels.set(lane.row, seen ? { text: seen.text, more: seen.more + 1 } : { text: lane.label, more: 0 });
    }
    for (const [row, label] of labels) {
      let text = label.text + (label.more ? ` (+${label.more})` : "");
      if (text.length > 26) text = text.slice(0, 25) + "…";
      ctx.fillStyle = row === 0 ? colors.text : colors.muted;
      ctx.fillText(text, LEFT - 8, rowY(row) + 3);
    }
    // Clip the lanes and dots to the plot area.
    ctx.save();
    ctx.beginPath();
    ctx.rect(LEFT - 6, 0, plotWidth() + 12, base);
    ctx.clip();
    const meta = data.lanes || [];
    lanes.forEach((indices, number) => {
      if (!indices.length) return;
      const row = rowOf[indices[0]];
      ctx.strokeStyle = number === 0 ? colors.lane : colors.branch;
      ctx.lineWidth = 2;
      ctx.beginPath();
      const origin = meta[number] ? meta[number].origin : -1;
      if (origin >= 0) {
        ctx.moveTo(px(xs[origin]), rowY(rowOf[origin]));
        ctx.lineTo(px(xs[indices[0]]), rowY(row));
      } else {
        ctx.moveTo(px(xs[indices[0]]), rowY(row));
      }
      let lastX = -Infinity;
      for (const i of indices) {
        const x = px(xs[i]);
        if (x - lastX < 0.5 && i !== indices[indices.length - 1]) continue; // decimate
        ctx.lineTo(x, rowY(rowOf[i]));
        lastX = x;
      }
      ctx.stroke();
    });
    // Dots, one path per colour; at most one ordinary dot per 3 px of a lane.
    const paths = { auto: new Path2D(), manual: new Path2D(), rollback: new Path2D() };
    const forks = data.forks || {};
    const src = data.src || [];
    const selected = model.get("selected");
    const selectedIndex = selected == null ? -1 : indexOfId.get(selected) ?? -1;
    const diamonds = [];
    const left = LEFT - 6;
    const right = LEFT + plotWidth() + 6;
    for (const indices of lanes) {
      let lastX = -Infinity;
      indices.forEach((i, k) => {
        const x = px(xs[i]);
        if (x < left || x > right) return;
        const special =
          src[i] !== 0 || forks[i] || i === selectedIndex || k === 0 || k === indices.length - 1;
        if (!special && x - lastX < 3) return;
        lastX = x;
        const y = rowY(rowOf[i]);
        if (forks[i]) {
          diamonds.push([x, y]);
          return;
        }
        const kind = SOURCES[src[i]] || "auto";
        const r = kind === "auto" ? 3.5 : 4.5;
        const path = paths[kind] || paths.auto;
        path.moveTo(x + r, y);
        path.arc(x, y, r, 0, Math.PI * 2);
      });
    }
    for (const [kind, path] of Object.entries(paths)) {
      ctx.fillStyle = colors[kind];
      ctx.fill(path);
    }
    ctx.fillStyle = colors.fork;
    ctx.strokeStyle = colors.fork;
    ctx.lineWidth = 1.5;
    for (const [x, y] of diamonds) {
      ctx.setLineDash([2, 2]);
      ctx.beginPath();
      ctx.moveTo(x, y);
      ctx.lineTo(x + 11, y - 10);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.beginPath();
      ctx.moveTo(x, y - 6);
      ctx.lineTo(x + 6, y);
      ctx.lineTo(x, y + 6);
      ctx.lineTo(x - 6, y);
      ctx.closePath();
      ctx.fill();
    }
    for (const [i, style] of [
      [hovered, colors.muted],
      [selectedIndex, colors.text],
    ]) {
      if (i < 0 || i >= n) continue;
      ctx.strokeStyle = style;
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.arc(px(xs[i]), rowY(rowOf[i]), 7, 0, Math.PI * 2);
      ctx.stroke();
    }
    ctx.restore();
    if (drag && drag.mode === "brush") {
      const a = Math.min(drag.x0, drag.x1);
      const b = Math.max(drag.x0, drag.x1);
      ctx.globalAlpha = 0.2;
      ctx.fillStyle = colors.brush;
      ctx.fillRect(a, TOP, b - a, base - TOP);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = colors.lane;
      ctx.strokeRect(a + 0.5, TOP + 0.5, b - a, base - TOP);
    }
    canvas.dataset.points = String(n);
    canvas.dataset.view = view.map((v) => v.toFixed(3)).join(",");
    if (!painted && n) {
      painted = true;
      requestAnimationFrame(() => {
        canvas.dataset.firstPaintMs = (performance.now() - started).toFixed(1);
      });
    }
  }

  let frame = 0;
  function redraw() {
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      draw();
    });
  }

  // -- hover, click, brush, zoom, pan --------------------------------------------------------
  function nearest(x, y) {
    const row = Math.floor((y - TOP) / ROW);
    let best = -1;
    let bestDistance = 10;
    for (const r of [row - 1, row, row + 1]) {
      const list = byRow[r];
      if (!list || !list.length) continue;
      const target = unpx(x);
      let lo = 0;
      let hi = list.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (xs[list[mid]] < target) lo = mid + 1;
        else hi = mid;
      }
      for (let k = Math.max(0, lo - 3); k <= Math.min(list.length - 1, lo + 3); k++) {
        const i = list[k];
        const d = Math.hypot(px(xs[i]) - x, rowY(r) - y);
        if (d < bestDistance) {
          bestDistance = d;
          best = i;
        }
      }
    }
    return best;
  }

  function describe(i) {
    const bits = [`turn ${data.turn[i]}`, SOURCES[data.src[i]] || "auto"];
    if (data.label[i]) bits.push(data.label[i]);
    bits.push(fullTime((data.t0 || 0) + data.t[i]) + " UTC");
    bits.push(`slot ${data.slot[i]}`, `${data.msgs[i]} messages`);
    bits.push(`${data.tokens[i].toLocaleString("en-US")} tokens`, formatCost(data.cost[i]));
    const calls = data.calls[i];
    if (calls >= 0) bits.push(`${calls} model call${calls === 1 ? "" : "s"}`);
    const lane = (data.lanes || [])[data.lane[i]];
    if (lane) bits.push(lane.label);
    const forks = (data.forks || {})[i];
    if (forks) bits.push("forked into " + forks.join(", "));
    return bits.join(" · ") + " · " + data.ids[i];
  }

  function local(event) {
    const box = canvas.getBoundingClientRect();
    return { x: event.clientX - box.left, y: event.clientY - box.top };
  }

  canvas.addEventListener("mousemove", (event) => {
    const p = local(event);
    if (drag) {
      drag.x1 = Math.max(LEFT, Math.min(LEFT + plotWidth(), p.x));
      if (drag.mode === "pan") {
        const shift = ((drag.x0 - p.x) / plotWidth()) * (drag.view0[1] - drag.view0[0]);
        view = [drag.view0[0] + shift, drag.view0[1] + shift];
      }
      redraw();
      return;
    }
    const i = nearest(p.x, p.y);
    if (i !== hovered) {
      hovered = i;
      redraw();
    }
    if (i < 0) {
      tip.style.display = "none";
      return;
    }
    tip.textContent = describe(i);
    tip.style.display = "block";
    const left = Math.min(Math.max(0, px(xs[i]) + 10), Math.max(0, width - 320));
    tip.style.left = left + "px";
    tip.style.top = rowY(rowOf[i]) + 12 + "px";
  });
  canvas.addEventListener("mouseleave", () => {
    hovered = -1;
    tip.style.display = "none";
    redraw();
  });
  canvas.addEventListener("mousedown", (event) => {
    if (model.get("disabled")) return;
    const p = local(event);
    drag = { mode: event.shiftKey ? "pan" : "brush", x0: p.x, x1: p.x, view0: view.slice() };
    event.preventDefault();
  });
  const onMouseUp = (event) => {
    if (!drag) return;
    const done = drag;
    drag = null;
    if (done.mode === "pan") {
      redraw();
      return;
    }
    if (Math.abs(done.x1 - done.x0) > 4) {
      const a = unpx(Math.min(done.x0, done.x1));
      const b = unpx(Math.max(done.x0, done.x1));
      send({ brush: [a, b] });
      return;
    }
    const p = local(event);
    const i = nearest(p.x, p.y);
    if (i >= 0) send({ selected: data.ids[i] });
    redraw();
  };
  window.addEventListener("mouseup", onMouseUp);
  canvas.addEventListener(
    "wheel",
    (event) => {
      if (!n) return;
      event.preventDefault();
      const p = local(event);
      const at = unpx(Math.max(LEFT, Math.min(LEFT + plotWidth(), p.x)));
      const factor = Math.exp(event.deltaY * 0.0015);
      const full = domain[1] - domain[0];
      const span = Math.min(full, Math.max(axis() === "time" ? 0.5 : 2, (view[1] - view[0]) * factor));
      const ratio = (at - view[0]) / (view[1] - view[0]);
      let lo = at - ratio * span;
      lo = Math.max(domain[0], Math.min(domain[1] - span, lo));
      view = [lo, lo + span];
      redraw();
    },
    { passive: false },
  );
  reset.addEventListener("click", () => {
    view = [domain[0], domain[1]];
    send({ brush: [] });
    redraw();
  });
  for (const [button, name] of [
    [axisTurn, "turn"],
    [axisTime, "time"],
  ]) {
    button.addEventListener("click", () => {
      if (axis() !== name) send({ axis: name, brush: [] });
    });
  }

  // -- the table -----------------------------------------------------------------------------
  function cell(key, i) {
    switch (key) {
      case "turn":
        return String(data.turn[i]);
      case "time":
        return fullTime((data.t0 || 0) + data.t[i]);
      case "slot":
        return data.slot[i];
      case "source":
        return SOURCES[data.src[i]] || "auto";
      case "label":
        return data.label[i];
      case "msgs":
        return data.msgs[i].toLocaleString("en-US");
      case "tokens":
        return data.tokens[i].toLocaleString("en-US");
      case "cost":
        return formatCost(data.cost[i]);
      case "calls":
        return data.calls[i] < 0 ? "…" : String(data.calls[i]);
      default:
        return "";
    }
  }

  function drawHead() {
    head.replaceChildren();
    const tr = el("tr");
    const key = model.get("sort_key");
    for (const column of model.get("columns")) {
      let label = column.label;
      if (column.key === key) label += model.get("descending") ? " ▼" : " ▲";
      const th = el("th", column.key === key ? "agc-ht-sorted" : "", label);
      if (column.align === "right") th.classList.add("agc-ht-right");
      th.dataset.key = column.key;
      th.title = "Sort by " + column.label;
      th.addEventListener("click", () => {
        if (model.get("sort_key") === column.key) {
          if (model.get("descending")) send({ sort_key: "", descending: false });
          else send({ descending: true });
        } else {
          send({ sort_key: column.key, descending: false });
        }
      });
      tr.append(th);
    }
    head.append(tr);
  }

  function drawRows() {
    const order = model.get("order") || [];
    const columns = model.get("columns");
    const selected = model.get("selected");
    const first = Math.max(0, Math.floor(tableWrap.scrollTop / ROW_H) - 5);
    const visible = Math.ceil((tableWrap.clientHeight || 220) / ROW_H) + 10;
    const last = Math.min(order.length, first + visible);
    body.replaceChildren();
    const spacer = (h) => {
      const tr = el("tr", "agc-ht-spacer");
      const td = el("td");
      td.colSpan = columns.length;
      td.style.height = h + "px";
      tr.append(td);
      return tr;
    };
    if (first > 0) body.append(spacer(first * ROW_H));
    for (let k = first; k < last; k++) {
      const i = order[k];
      const tr = el("tr", "agc-ht-row agc-ht-src-" + (SOURCES[data.src[i]] || "auto"));
      tr.dataset.id = data.ids[i];
      if (data.ids[i] === selected) tr.classList.add("agc-ht-selected");
      for (const column of columns) {
        const td = el("td", column.align === "right" ? "agc-ht-right" : "", cell(column.key, i));
        td.dataset.key = column.key;
        tr.append(td);
      }
      tr.addEventListener("click", () => {
        if (!model.get("disabled")) send({ selected: data.ids[i] });
      });
      body.append(tr);
    }
    if (last < order.length) body.append(spacer((order.length - last) * ROW_H));
    if (!order.length) {
      const tr = el("tr");
      const td = el("td", "agc-ht-empty", n ? "no checkpoints in the brushed range" : "no checkpoints yet");
      td.colSpan = columns.length;
      tr.append(td);
      body.append(tr);
    }
    const brush = model.get("brush") || [];
    const range =
      brush.length === 2
        ? axis() === "time"
          ? ` · brushed ${fullTime((data.t0 || 0) + brush[0])} – ${fullTime((data.t0 || 0) + brush[1])} UTC`
          : ` · brushed turns ${Math.ceil(brush[0])}–${Math.floor(brush[1])}`
        : "";
    count.textContent = `${order.length.toLocaleString("en-US")} of ${n.toLocaleString("en-US")} checkpoints${range}`;
  }

  let rowFrame = 0;
  tableWrap.addEventListener("scroll", () => {
    if (rowFrame) return;
    rowFrame = requestAnimationFrame(() => {
      rowFrame = 0;
      drawRows();
    });
  });

  function scrollToSelected() {
    const selected = model.get("selected");
    if (selected == null) return;
    const at = (model.get("order") || []).indexOf(indexOfId.get(selected));
    if (at < 0) return;
    const top = at * ROW_H;
    const h = tableWrap.clientHeight || 220;
    if (top < tableWrap.scrollTop + ROW_H || top > tableWrap.scrollTop + h - 2 * ROW_H) {
      tableWrap.scrollTop = Math.max(0, top - h / 2);
    }
  }

  // -- the selected checkpoint's model calls -------------------------------------------------
  function drawCalls() {
    callsBox.replaceChildren();
    const selected = model.get("selected");
    const i = selected == null ? undefined : indexOfId.get(selected);
    if (i === undefined) return;
    const calls = model.get("calls") || [];
    const counted = data.calls[i];
    const title = el("div", "agc-ht-calls-head");
    title.append(el("b", "", `Model calls of turn ${data.turn[i]}`));
    const what =
      counted < 0 ? " · counting…" : ` · ${counted} call${counted === 1 ? "" : "s"} led to this checkpoint`;
    title.append(document.createTextNode(what));
    callsBox.append(title);
    if (counted === 0) {
      callsBox.append(
        el("div", "agc-ht-muted", "none (a start, manual, rollback or fork checkpoint sends no request)"),
      );
      return;
    }
    if (!calls.length) {
      callsBox.append(el("div", "agc-ht-muted", "loading…"));
      return;
    }
    const list = el("table", "agc-ht-call-list");
    for (const call of calls) {
      const tr = el("tr", "agc-ht-call agc-ht-call-" + call.status);
      tr.dataset.id = call.id;
      for (const text of [call.kind, call.model, call.tokens + " tok", call.ms + " ms", call.cost, call.status]) {
        tr.append(el("td", "", text));
      }
      const td = el("td");
      const open = el("button", "agc-ht-btn agc-ht-inspect", "Inspect");
      open.title = "Open the call inspector at " + call.id;
      open.addEventListener("click", () => send({ inspect: call.id }));
      td.append(open);
      tr.append(td);
      list.append(tr);
    }
    callsBox.append(list);
  }

  // -- wiring --------------------------------------------------------------------------------
  function drawBar() {
    const gone = model.get("disabled");
    root.classList.toggle("agc-ht-gone", !!gone);
    axisTurn.classList.toggle("agc-ht-on", axis() === "turn");
    axisTime.classList.toggle("agc-ht-on", axis() === "time");
    const laneCount = (data.lanes || []).length;
    const branches = laneCount > 1 ? ` · ${laneCount - 1} branch${laneCount === 2 ? "" : "es"}` : "";
    summary.textContent = gone
      ? "session destroyed: no history to show"
      : `${n.toLocaleString("en-US")} checkpoint${n === 1 ? "" : "s"}${branches}`;
    note.textContent = !gone && !n ? "no checkpoints yet" : "";
  }

  function everything() {
    prepare();
    drawBar();
    drawHead();
    drawRows();
    drawCalls();
    draw();
  }

  model.on("change:data", everything);
  model.on("change:axis", everything);
  model.on("change:brush", () => {
    applyBrush();
    redraw();
    drawRows();
  });
  model.on("change:order", drawRows);
  model.on("change:sort_key", drawHead);
  model.on("change:descending", drawHead);
  model.on("change:columns", () => {
    drawHead();
    drawRows();
  });
  model.on("change:selected", () => {
    redraw();
    scrollToSelected();
    drawRows();
    drawCalls();
  });
  model.on("change:calls", drawCalls);
  model.on("change:disabled", drawBar);

  readColors();
  const themeWatch = new MutationObserver(() => {
    readColors();
    redraw();
  });
  themeWatch.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light", "data-jp-theme-name"] });
  const sizeWatch = new ResizeObserver(() => draw());
  sizeWatch.observe(plot);
  everything();
  return () => {
    themeWatch.disconnect();
    sizeWatch.disconnect();
    window.removeEventListener("mouseup", onMouseUp);
  };
}

export default { render };

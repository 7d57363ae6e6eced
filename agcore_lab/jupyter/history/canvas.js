// The history graph (part of the anywidget ESM, see graph.py): git-graph style lanes on a
// canvas, turn or time axis, hover details, click to select, drag to brush, wheel to zoom,
// shift-drag to pan. Dots are decimated (at most one ordinary dot per 3 px of a lane) and the
// lanes are single paths, so 10,000 checkpoints draw in a few milliseconds.

function historyGraph({ model, plot, canvas, tip, reset, axisTurn, axisTime, send, started }) {
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
  const root = plot;

  function readColors() {
    const css = getComputedStyle(root);
    const pick = (name, fallback) => (css.getPropertyValue(name) || "").trim() || fallback;
    colors = {
      lane: pick("--jp-brand-color1", "#1976d2"),
      branch: pick("--jp-info-color1", "#0097a7"),
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
    for (const tick of axisTicks(view, axis(), data.t0 || 0)) {
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
      if (x + 24 > width) continue; // its label would be cut at the right edge
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
    // Dots, one path per colour, an ordinary dot in its lane's colour. A lane with more than
    // one checkpoint per 6 px in view shows only its special dots (rollbacks, forks, manual
    // ones, its ends, the selected one): the line carries the rest.
    const paths = {
      lane: new Path2D(),
      branch: new Path2D(),
      manual: new Path2D(),
      rollback: new Path2D(),
    };
    const forks = data.forks || {};
    const src = data.src || [];
    const selected = model.get("selected");
    const selectedIndex = selected == null ? -1 : indexOfId.get(selected) ?? -1;
    const diamonds = [];
    const left = LEFT - 6;
    const right = LEFT + plotWidth() + 6;
    lanes.forEach((indices, number) => {
      let lastX = -Infinity;
      let inView = 0;
      for (const i of indices) if (px(xs[i]) >= left && px(xs[i]) <= right) inView++;
      const dense = inView > plotWidth() / 6;
      indices.forEach((i, k) => {
        const x = px(xs[i]);
        if (x < left || x > right) return;
        const special =
          src[i] !== 0 || forks[i] || i === selectedIndex || k === 0 || k === indices.length - 1;
        if (!special && (dense || x - lastX < 3)) return;
        lastX = x;
        const y = rowY(rowOf[i]);
        if (forks[i]) {
          diamonds.push([x, y]);
          return;
        }
        const kind = SOURCES[src[i]] || "auto";
        const r = kind === "auto" ? 3.5 : 4.5;
        const path = paths[kind] || (number === 0 ? paths.lane : paths.branch);
        path.moveTo(x + r, y);
        path.arc(x, y, r, 0, Math.PI * 2);
      });
    });
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
    tip.textContent = describeCheckpoint(data, i);
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


  return {
    prepare,
    applyBrush,
    draw,
    redraw,
    readColors,
    destroy: () => window.removeEventListener("mouseup", onMouseUp),
  };
}

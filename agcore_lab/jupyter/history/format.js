// Shared by the history's front-end parts (plain functions, concatenated before canvas.js,
// table.js and history.js into one anywidget ESM by graph.py).

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

// Axis ticks of the view [lo, hi]: nice turn numbers, or UTC times with the date under the
// first tick of each day.
function axisTicks(view, axis, t0) {
  const span = view[1] - view[0];
  const out = [];
  if (axis === "turn") {
    const step = niceTurnStep(span);
    for (let v = Math.ceil(view[0] / step) * step; v <= view[1]; v += step) {
      out.push({ v, label: (Math.round(v) || 0).toLocaleString("en-US"), sub: "" });
    }
    return out;
  }
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

// A checkpoint's hover text (plain text: it goes in with textContent).
function describeCheckpoint(data, i) {
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

// The history table and the selected checkpoint's model calls (part of the anywidget ESM,
// see graph.py). The table is virtualised: only the rows in view (and a margin) are in the
// page, between two spacer rows, so 10,000 checkpoints scroll like 20.

function historyTable({ model, tableWrap, head, body, count, callsBox, send }) {
  let data = {};
  let n = 0;
  let indexOfId = new Map();

  function prepare() {
    data = model.get("data") || {};
    n = (data.ids || []).length;
    indexOfId = new Map((data.ids || []).map((id, i) => [id, i]));
  }

  function axis() {
    return model.get("axis") === "time" ? "time" : "turn";
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
    const children = (data.forks || {})[i] || [];
    if (children.length) {
      const line = el("div", "agc-ht-forks", "Forked into ");
      for (const child of children) {
        line.append(el("code", "", child));
        const open = el("button", "agc-ht-btn agc-ht-open-fork", "Open timeline");
        open.title = "Show the checkpoint history of " + child;
        open.addEventListener("click", () => send({ open_session: child }));
        line.append(open);
      }
      callsBox.append(line);
    }
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

  return { prepare, drawHead, drawRows, drawCalls, scrollToSelected };
}

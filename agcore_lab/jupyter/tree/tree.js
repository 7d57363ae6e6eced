// The session tree table (anywidget ESM). Python sends one page of rows; this file draws
// them and reports clicks as trait changes. Text goes in with textContent, never innerHTML.

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

// How long ago a moment (ms since the epoch) was, in the words Python's common.text.ago uses.
export function ago(stamp, now = Date.now()) {
  const seconds = (now - stamp) / 1000;
  if (seconds < 10) return "just now";
  if (seconds < 60) return Math.floor(seconds) + " s ago";
  if (seconds < 3600) return Math.floor(seconds / 60) + " min ago";
  if (seconds < 86400) return Math.floor(seconds / 3600) + " h ago";
  if (seconds < 30 * 86400) {
    const days = Math.floor(seconds / 86400);
    return days + (days === 1 ? " day ago" : " days ago");
  }
  return new Date(stamp).toISOString().slice(0, 10);
}

function render({ model, el: root }) {
  root.classList.add("agc-tt");
  const bar = el("div", "agc-tt-bar");
  const search = el("input", "agc-tt-search");
  search.type = "search";
  search.placeholder = "Search by id or agent";
  search.value = model.get("query") || "";
  const count = el("span", "agc-tt-count");
  bar.append(search, count);
  const scroll = el("div", "agc-tt-scroll");
  const table = el("table");
  const head = el("thead");
  const body = el("tbody");
  table.append(head, body);
  scroll.append(table);
  root.append(bar, scroll);

  let timer = null;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      model.set("query", search.value);
      model.save_changes();
    }, 200);
  });

  function send(name, value) {
    model.set(name, value);
    model.save_changes();
  }

  function drawHead() {
    head.replaceChildren();
    const tr = el("tr");
    const key = model.get("sort_key");
    for (const column of model.get("columns")) {
      let label = column.label;
      if (column.key === key) label += model.get("descending") ? " ▼" : " ▲";
      const th = el("th", column.key === key ? "agc-tt-sorted" : "", label);
      if (column.align === "right") th.classList.add("agc-tt-right");
      th.dataset.key = column.key;
      th.title = "Sort by " + column.label;
      th.addEventListener("click", () => {
        if (model.get("sort_key") === column.key) {
          if (model.get("descending")) {
            model.set("sort_key", "");
            model.set("descending", false);
          } else {
            model.set("descending", true);
          }
        } else {
          model.set("sort_key", column.key);
          model.set("descending", false);
        }
        model.save_changes();
      });
      tr.append(th);
    }
    head.append(tr);
  }

  function drawBody() {
    body.replaceChildren();
    const columns = model.get("columns");
    const rows = model.get("rows");
    const selected = model.get("selected");
    for (const row of rows) {
      const tr = el("tr", "agc-tt-row");
      tr.dataset.id = row.id;
      if (row.id === selected) tr.classList.add("agc-tt-selected");
      if (row.title) tr.title = row.title;
      columns.forEach((column, index) => {
        const td = el("td", column.align === "right" ? "agc-tt-right" : "");
        td.dataset.key = column.key;
        const text = (row.cells || {})[column.key];
        const hover = (row.titles || {})[column.key];
        if (hover) td.title = hover;
        const stamp = (row.stamps || {})[column.key];
        if (index === 0) {
          td.style.paddingLeft = 4 + 16 * (row.depth || 0) + "px";
          if (row.kids > 0) {
            const toggle = el("button", "agc-tt-toggle", row.open ? "▾" : "▸");
            toggle.title = (row.open ? "Collapse " : "Expand ") + row.kids + " child(ren)";
            toggle.setAttribute("aria-expanded", row.open ? "true" : "false");
            toggle.addEventListener("click", (event) => {
              event.stopPropagation();
              const ids = model.get("collapsed").slice();
              const at = ids.indexOf(row.id);
              if (at >= 0) ids.splice(at, 1);
              else ids.push(row.id);
              send("collapsed", ids);
            });
            td.append(toggle);
          } else {
            td.append(el("span", "agc-tt-leaf"));
          }
          td.append(el("span", "agc-tt-name", text == null ? "" : text));
        } else if (column.key === "status") {
          td.append(el("span", "agc-tt-status agc-tone-" + (row.tone || "muted"), text));
        } else if (column.key === "id") {
          td.append(el("span", "agc-tt-id", text));
        } else if (stamp !== undefined && stamp !== null) {
          // A relative time ("3 min ago"): kept current by the timer below.
          td.dataset.stamp = String(stamp);
          td.textContent = ago(Number(stamp));
        } else {
          td.textContent = text == null ? "" : String(text);
        }
        tr.append(td);
      });
      tr.addEventListener("click", () => send("selected", row.id));
      body.append(tr);
    }
    if (!rows.length) {
      const tr = el("tr");
      const td = el("td", "agc-tt-empty", model.get("empty"));
      td.colSpan = Math.max(1, columns.length);
      tr.append(td);
      body.append(tr);
    }
    count.textContent = model.get("empty") && !rows.length ? "" : rows.length + " shown";
  }

  function draw() {
    drawHead();
    drawBody();
  }
  model.on("change:columns", draw);
  model.on("change:sort_key", drawHead);
  model.on("change:descending", drawHead);
  model.on("change:rows", drawBody);
  model.on("change:selected", drawBody);
  model.on("change:query", () => {
    if (document.activeElement !== search) search.value = model.get("query") || "";
  });
  draw();
  // Relative times go stale while the table is open: reword them twice a minute.
  const timer2 = setInterval(() => {
    for (const td of body.querySelectorAll("td[data-stamp]")) {
      td.textContent = ago(Number(td.dataset.stamp));
    }
  }, 30000);
  return () => clearInterval(timer2);
}

export default { render };

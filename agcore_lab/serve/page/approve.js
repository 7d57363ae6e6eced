// The approval page: decide calls with the service's own JSON routes, refresh by polling.
// Rows are rendered (and escaped) by the server; this script only swaps them in and wires
// the buttons. Requests carry the login cookie and the page header the service requires.
(function () {
  "use strict";
  const root = document.getElementById("agc-approve");
  const rows = document.getElementById("rows");
  const status = document.getElementById("status");
  const every = Number(root.dataset.poll) * 1000;
  let busy = false;

  function say(text, kind) {
    status.textContent = text;
    status.className = kind;
  }

  function editing() {
    const active = document.activeElement;
    return active && rows.contains(active) && active.matches("input, textarea");
  }

  // What was typed in each row and not sent yet, so a refresh never loses it.
  const BOXES = ["input.reason", "input.outcome", "textarea.edit"];

  function typed() {
    const kept = new Map();
    for (const row of rows.querySelectorAll("tr[data-interrupt]")) {
      const values = [];
      for (const selector of BOXES) {
        const box = row.querySelector(selector);
        if (box && box.value !== box.defaultValue) values.push([selector, box.value]);
      }
      if (values.length) kept.set(row.dataset.interrupt, values);
    }
    return kept;
  }

  function restore(kept) {
    for (const row of rows.querySelectorAll("tr[data-interrupt]")) {
      for (const [selector, value] of kept.get(row.dataset.interrupt) || []) {
        const box = row.querySelector(selector);
        if (box) box.value = value;
      }
    }
  }

  async function refresh() {
    if (busy || editing()) return;
    try {
      const answer = await fetch("approve/rows", { credentials: "same-origin" });
      if (answer.status === 401) { window.location.reload(); return; }
      if (!answer.ok) { say("refresh failed: HTTP " + answer.status, "error"); return; }
      const html = await answer.text(); // server-rendered, escaped HTML
      // Typing began while this poll was on its way: swapping the rows now would take the
      // box (and the keys typed next) away from the user. A later poll brings them.
      if (editing()) return;
      const kept = typed(); // after the last await: nothing typed can slip in between
      rows.innerHTML = html;
      restore(kept);
      tick();
    } catch (err) {
      say("refresh failed: " + err, "error");
    }
  }

  function tick() {
    const now = Date.now();
    for (const cell of rows.querySelectorAll("td.left[data-expires]")) {
      const left = Math.round((Date.parse(cell.dataset.expires) - now) / 1000);
      cell.textContent = left > 0 ? left + " s" : "expired";
      cell.classList.toggle("overdue", left <= 0);
    }
  }

  async function decide(row, body, route) {
    busy = true;
    for (const b of row.querySelectorAll("button")) b.disabled = true;
    const url = "sessions/" + encodeURIComponent(row.dataset.session) + "/runs/" +
      encodeURIComponent(row.dataset.run) + "/interrupts/" +
      encodeURIComponent(row.dataset.interrupt) + "/" + (route || "resume");
    try {
      const answer = await fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-Agcore-Page": "1" },
        body: JSON.stringify(body),
      });
      const data = await answer.json();
      if (answer.ok) {
        const done = route === "settle" ? "settled " :
          body.decision === "approve" ? "approved " : "rejected ";
        say(done + row.dataset.tool + " (" + row.dataset.interrupt +
          "); reply: " + data.reply, "ok");
      } else {
        say("HTTP " + answer.status + ": " + data.detail, "error");
      }
    } catch (err) {
      say("the decision was not sent: " + err, "error");
    } finally {
      busy = false;
      await refresh();
    }
  }

  rows.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const row = button.closest("tr[data-interrupt]");
    const action = button.dataset.action;
    if (action === "approve") {
      decide(row, { decision: "approve" });
    } else if (action === "edit") {
      let args;
      try {
        args = JSON.parse(row.querySelector("textarea.edit").value);
      } catch (err) {
        say("the edited arguments are not JSON: " + err.message, "error");
        return;
      }
      if (args === null || typeof args !== "object" || Array.isArray(args)) {
        say("the edited arguments must be a JSON object", "error");
        return;
      }
      decide(row, { decision: "approve", arguments: args });
    } else if (action === "reject") {
      decide(row, { decision: "reject", reason: row.querySelector("input.reason").value });
    } else if (action === "settle") {
      const outcome = row.querySelector("input.outcome").value.trim();
      decide(row, outcome ? { result: outcome } : {}, "settle");
    }
  });

  tick();
  setInterval(tick, 1000);
  setInterval(refresh, every);
})();

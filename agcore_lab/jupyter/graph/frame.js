// Hosts the graph page in a sandboxed iframe (scripts only, no same origin). The only traffic
// across it: the notebook's theme goes in, a clicked node's id comes out.

const SAFE_COLOUR = /^[#a-z0-9(), .%-]{1,40}$/i;

function themeOf(el) {
  const style = getComputedStyle(el);
  const read = (name) => {
    const value = style.getPropertyValue(name).trim();
    return SAFE_COLOUR.test(value) ? value : undefined;
  };
  const flag = document.body.dataset.jpThemeLight;
  return {
    agc: "theme",
    light: flag === undefined ? true : flag !== "false",
    background: read("--jp-layout-color1"),
    font: read("--jp-ui-font-color1"),
    border: read("--jp-border-color2"),
  };
}

function render({ model, el }) {
  const frame = document.createElement("iframe");
  frame.className = "agc-graph-frame";
  frame.setAttribute("sandbox", "allow-scripts");
  frame.style.width = "100%";
  frame.style.border = "0";
  frame.style.display = "block";
  el.append(frame);

  function load() {
    frame.style.height = model.get("height") + "px";
    frame.srcdoc = model.get("page");
  }
  function sendTheme() {
    if (frame.contentWindow) frame.contentWindow.postMessage(themeOf(el), "*");
  }
  function onMessage(event) {
    if (event.source !== frame.contentWindow) return;
    const message = event.data || {};
    if (message.agc === "ready") {
      sendTheme();
    } else if (message.agc === "node" && typeof message.id === "string") {
      model.set("clicked", message.id.slice(0, 1000));
      model.set("clicks", model.get("clicks") + 1);
      model.save_changes();
    }
  }
  window.addEventListener("message", onMessage);
  // JupyterLab marks the theme on <body>; its CSS may settle a moment later.
  const observer = new MutationObserver(() => {
    sendTheme();
    setTimeout(sendTheme, 300);
  });
  observer.observe(document.body, {
    attributes: true,
    attributeFilter: ["data-jp-theme-light", "data-jp-theme-name"],
  });
  model.on("change:page", load);
  model.on("change:height", load);
  load();
  return () => {
    window.removeEventListener("message", onMessage);
    observer.disconnect();
  };
}

export default { render };

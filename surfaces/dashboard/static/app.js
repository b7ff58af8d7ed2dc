// acp-relay dashboard: one browser tab = one conversation. Plain JavaScript, no build step.
// The relay sends neutral Markdown; marked renders it and DOMPurify sanitises the HTML.
//
// Agent text is untrusted. Rendered Markdown never holds a control: DOMPurify drops form elements,
// and class, id, style and data-* attributes, so an answer cannot look like (or be) one of the
// page's own buttons, and only the buttons the page builds from a message's `buttons` list are
// approval buttons (`approvalButtons`). The core's parts of a reply are recognised by position,
// not by their words alone (see `decorate`).
//
// The page draws its own icons (inline SVG): the core's tool lines and footer open with emoji,
// which a browser without an emoji font (a plain Debian install) shows as empty boxes.
(() => {
  "use strict";

  const TAB_KEY = "acp-relay-tab";
  const TAB_RE = /^[A-Za-z0-9_-]{1,64}$/;
  // The core's own marks, put into the page by the server (core/engine/wording.py is their source).
  const MARKS = JSON.parse(document.getElementById("core-marks").textContent);
  const TOOL_STATUS = MARKS.tool_glyphs;  // glyph -> status
  const FOOTER_GLYPH = MARKS.footer_glyph;
  const REFUSAL_LEAD = MARKS.refusal_lead;
  const PURIFY = {
    FORBID_TAGS: ["form", "button", "input", "select", "textarea", "style", "option"],
    FORBID_ATTR: ["class", "id", "style"],
    ALLOW_DATA_ATTR: false,
  };

  const $ = (sel) => document.querySelector(sel);
  const messages = $("#messages");
  const textarea = $("#composer textarea");
  const sendButton = $("#send");
  const stopButton = $("#stop");
  const modelSelect = $("#model");

  // Random ids without crypto.randomUUID, which needs a secure context (http on a LAN is not one).
  function newId() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // sessionStorage is per tab and survives a reload: the tab keeps its conversation.
  function tabId() {
    let id = sessionStorage.getItem(TAB_KEY);
    if (!id || !TAB_RE.test(id)) {
      id = newId();
      sessionStorage.setItem(TAB_KEY, id);
    }
    return id;
  }

  const tab = tabId();
  const api = (path) => `/api/conversations/${tab}/${path}`;

  async function post(path, body) {
    const response = await fetch(api(path), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      credentials: "same-origin",
      body: JSON.stringify(body),
    });
    return answer(response);
  }

  // The session ended (logged out in another tab, expired, the relay restarted): show the login page.
  async function answer(response) {
    if (response.status === 401) {
      location.assign("/");
      throw new Error("Log in again.");
    }
    let data = {};
    try { data = await response.json(); } catch (_) { /* not JSON */ }
    if (!response.ok) throw new Error(data.error || `The relay answered ${response.status}.`);
    return data;
  }

  let errorTimer = null;
  function showError(text) {
    const box = $("#error");
    box.textContent = text;
    box.hidden = false;
    clearTimeout(errorTimer);
    errorTimer = setTimeout(() => { box.hidden = true; }, 10000);
  }
  $("#error").addEventListener("click", (e) => { e.currentTarget.hidden = true; });

  // ---- rendering --------------------------------------------------------------------------

  // A task-list box ("- [x] ...") is an <input>, which the sanitiser drops: marked writes a marker
  // instead, with a random per-page label that agent HTML cannot know, and `decorate` puts a
  // disabled checkbox in its place.
  const TASK_MARK = `task-${newId()}`;
  marked.use({
    gfm: true,
    breaks: true,
    renderer: {
      checkbox({ checked }) {
        return `<span role="checkbox" aria-checked="${checked ? "true" : "false"}" aria-label="${TASK_MARK}"></span> `;
      },
    },
  });
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
  });

  function markdown(text) {
    const body = document.createElement("div");
    body.className = "body markdown";
    body.innerHTML = DOMPurify.sanitize(marked.parse(text), PURIFY);
    decorate(body);
    return body;
  }

  // ---- icons ------------------------------------------------------------------------------

  // 16x16 line drawings in currentColor; "solid" parts are filled, "knock" strokes are cut out of them.
  const SVG_NS = "http://www.w3.org/2000/svg";
  const ICONS = {
    pending: [["path", { d: "M4.5 1.75h7M4.5 14.25h7M5.5 1.75v1.5c0 2.25 5 2.5 5 4.75s-5 2.5-5 4.75v1.5"
      + "M10.5 1.75v1.5c0 2.25-5 2.5-5 4.75s5 2.5 5 4.75v1.5" }]],
    in_progress: [["path", { d: "M13.25 8A5.25 5.25 0 1 1 8 2.75" }], ["path", { d: "M7 .75l2 2-2 2" }]],
    completed: [["circle", { cx: 8, cy: 8, r: 7, class: "solid" }], ["path", { d: "M4.75 8.25l2.25 2.25 4.25-4.5", class: "knock" }]],
    failed: [["circle", { cx: 8, cy: 8, r: 7, class: "solid" }], ["path", { d: "M5.5 5.5l5 5M10.5 5.5l-5 5", class: "knock" }]],
    cancelled: [["rect", { x: 2.5, y: 2.5, width: 11, height: 11, rx: 2, class: "solid" }]],
    denied: [["circle", { cx: 8, cy: 8, r: 6.25 }], ["path", { d: "M3.6 12.4l8.8-8.8" }]],
    timer: [["circle", { cx: 8, cy: 9, r: 5.5 }], ["path", { d: "M8 9V6.25M6.5 1.75h3M8 1.75v1.75M12.25 4.25l1 -1" }]],
  };

  function icon(name) {
    const svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("viewBox", "0 0 16 16");
    svg.setAttribute("class", `icon icon-${name}`);
    svg.setAttribute("aria-hidden", "true");  // the words next to it say the same
    for (const [tag, attrs] of ICONS[name] || []) {
      const part = document.createElementNS(SVG_NS, tag);
      for (const [key, value] of Object.entries(attrs)) part.setAttribute(key, String(value));
      svg.appendChild(part);
    }
    return svg;
  }

  // A line's opening glyph (with the emoji variation selector an agent may add), or "".
  function leadingGlyph(line) {
    const m = /^(\S)\uFE0F?/u.exec(line);
    return m && TOOL_STATUS[m[1]] ? m[0] : "";
  }

  // ---- the core's parts -----------------------------------------------------------------

  // The core's document is Markdown; give its parts classes so they look like what they are.
  //
  // The footer and the refusal card are recognised by POSITION, because an agent can write the
  // same words: the core's document (core/engine/document.py) ends a finished turn with its footer
  // ("⏱ 12.3s · context 45%") as the LAST top-level block, and a refusal card (first line exactly
  // REFUSAL_LEAD) comes immediately before it (nothing else follows a refusal card: an error and a
  // refusal do not happen in one turn). A paragraph anywhere else that starts with those words is
  // plain agent text. (An answer still streaming has no footer yet; an agent could make its last
  // paragraph look like one until the real footer arrives: that is cosmetic, never a control.)
  function decorate(body) {
    const last = body.lastElementChild;
    if (last && last.tagName === "P" && lines(last).length === 1 && lines(last)[0].startsWith(`${FOOTER_GLYPH} `)) {
      last.classList.add("footer");
      last.replaceChildren(icon("timer"), document.createTextNode(lines(last)[0].slice(FOOTER_GLYPH.length).trim()));
      const card = last.previousElementSibling;
      if (card && card.tagName === "P" && lines(card)[0] === REFUSAL_LEAD) card.classList.add("refusal-card");
    }
    for (const p of body.querySelectorAll("p")) {
      if (p.classList.contains("footer") || p.classList.contains("refusal-card")) continue;
      const text = p.textContent.trim();
      if (text && lines(p).every(leadingGlyph)) toolRows(p);
    }
    for (const mark of body.querySelectorAll(`span[role=checkbox][aria-label="${TASK_MARK}"]`)) {
      const box = document.createElement("input");
      box.type = "checkbox";
      box.disabled = true;
      box.checked = mark.getAttribute("aria-checked") === "true";
      mark.replaceWith(box);
    }
    for (const li of body.querySelectorAll("li")) {
      const box = li.querySelector(":scope > input[type=checkbox]");
      if (!box) continue;
      li.closest("ul, ol").classList.add("plan");
      li.classList.add(box.checked ? "done" : li.textContent.endsWith("(in progress)") ? "in-progress" : "todo");
    }
    for (const pre of body.querySelectorAll("pre")) {
      if (!navigator.clipboard) break;
      const code = pre.textContent;
      const copy = document.createElement("button");
      copy.type = "button";
      copy.className = "copy";
      copy.textContent = "Copy";
      copy.addEventListener("click", () => {
        navigator.clipboard.writeText(code).then(() => { copy.textContent = "Copied"; });
      });
      pre.appendChild(copy);
    }
  }

  // A paragraph's lines: marked turns single newlines into <br> (the core's line breaks).
  function lines(p) {
    const out = [""];
    for (const node of p.childNodes) {
      if (node.nodeName === "BR") out.push("");
      else out[out.length - 1] += node.textContent;
    }
    return out.map((line) => line.trim()).filter(Boolean);
  }

  // Tool calls become status rows, one per call, with data-status for styling and tests; the
  // core's glyph gives way to the page's icon.
  function toolRows(p) {
    const rows = document.createElement("div");
    rows.className = "tools";
    for (const line of lines(p)) {
      const glyph = leadingGlyph(line);
      const status = TOOL_STATUS[[...glyph][0]];
      const row = document.createElement("div");
      row.className = "tool-row";
      row.dataset.status = status;
      const words = document.createElement("span");
      words.textContent = line.slice(glyph.length).trim();
      row.append(icon(status), words);
      rows.appendChild(row);
    }
    p.replaceWith(rows);
  }

  // The approval buttons the page built (renderMessage); a click on any other button is ignored.
  const approvalButtons = new WeakSet();

  function renderMessage(el, m) {
    const body = m.role === "user" || m.plain ? document.createElement("div") : markdown(m.text);
    if (m.role === "user" || m.plain) {
      body.className = "body plain";
      body.textContent = m.text;
    }
    el.replaceChildren(body);
    if (m.buttons.length) {
      const row = document.createElement("div");
      row.className = "buttons";
      for (const b of m.buttons) {
        const button = document.createElement("button");
        button.type = "button";
        button.className = `approval ${b.style}`;
        button.dataset.token = b.token;
        button.dataset.style = b.style;
        button.textContent = b.label;
        approvalButtons.add(button);
        row.appendChild(button);
      }
      el.appendChild(row);
    }
  }

  function nearBottom() {
    return messages.scrollHeight - messages.scrollTop - messages.clientHeight < 80;
  }

  function upsert(m) {
    const stick = nearBottom();
    let el = document.getElementById(`msg-${m.id}`);
    const signature = JSON.stringify([m.text, m.buttons, m.plain]);
    if (el && el.dataset.signature === signature) return;
    if (!el) {
      el = document.createElement("article");
      el.id = `msg-${m.id}`;
      el.dataset.id = m.id;
      el.dataset.role = m.role;
      el.className = `msg msg-${m.role}`;
      messages.appendChild(el);
    }
    el.dataset.signature = signature;
    renderMessage(el, m);
    if (stick) messages.scrollTop = messages.scrollHeight;
  }

  function setTyping(active) {
    $("#typing").hidden = !active;
    stopButton.classList.toggle("active", active);
  }

  function handle(event) {
    if (event.type === "snapshot") {
      messages.replaceChildren();
      event.messages.forEach(upsert);
      setTyping(event.typing);
      messages.scrollTop = messages.scrollHeight;
    } else if (event.type === "message") {
      upsert(event);
    } else if (event.type === "delete") {
      document.getElementById(`msg-${event.id}`)?.remove();
    } else if (event.type === "typing") {
      setTyping(event.active);
    }
    scheduleStatus();
  }

  // ---- live updates -----------------------------------------------------------------------

  let retryMs = 1000;
  function setConnected(state, text) {
    const conn = $("#conn");
    conn.dataset.state = state;
    conn.textContent = text;
  }

  function connect() {
    const source = new EventSource(api("events"));
    source.onopen = () => { retryMs = 1000; setConnected("open", "Connected"); };
    source.onmessage = (e) => handle(JSON.parse(e.data));
    source.onerror = () => {
      setConnected("closed", "Reconnecting…");
      if (source.readyState === EventSource.CLOSED) {  // the browser gave up (e.g. 401): retry ourselves
        setTimeout(connect, retryMs);
        retryMs = Math.min(retryMs * 2, 15000);
      }
    };
  }

  // ---- status panel -----------------------------------------------------------------------

  let statusTimer = null;
  function scheduleStatus() {
    clearTimeout(statusTimer);
    statusTimer = setTimeout(refreshStatus, 250);
  }

  async function refreshStatus() {
    let s;
    try {
      const response = await fetch(api("status"), { credentials: "same-origin" });
      if (response.status === 401) location.assign("/");
      if (!response.ok) return;
      s = await response.json();
    } catch (_) {
      return;
    }
    $(".status-agent").textContent = s.agent || "–";
    $(".status-cwd").textContent = s.cwd || "–";
    $(".status-cwd").title = s.cwd || "";
    $(".status-session").textContent = s.session_id || "none yet";
    const pct = s.context_pct == null ? null : Math.round(s.context_pct);
    $(".status-context .value").textContent = pct == null ? "–" : `${pct}%`;
    const meter = $(".status-context meter");
    meter.hidden = pct == null;
    meter.value = pct || 0;
    $(".status-queue").textContent = String(s.queue_length);
    $(".status-state").textContent = s.busy ? "answering" : "idle";
    stopButton.classList.toggle("active", s.busy || !$("#typing").hidden);
    // A status without a live session lists no models (e.g. the idle agent was stopped): keep the list.
    if (document.activeElement !== modelSelect) fillModels(s.model, s.models && s.models.length ? s.models : knownModels);
    if (s.busy) {  // follow a running turn closely; idle tabs only poll every few seconds
      clearTimeout(statusTimer);
      statusTimer = setTimeout(refreshStatus, 1000);
    }
  }

  // The picker's choices come from the agent itself, asked for as soon as the tab opens (this starts
  // the agent, so it is a POST: no GET changes anything), so a model can be chosen before the first message.
  let knownModels = [];
  function fillModels(current, models) {
    knownModels = models;
    const names = models.length ? models : [current || "default"];
    const signature = JSON.stringify([current, names]);
    if (modelSelect.dataset.signature === signature) return;
    modelSelect.dataset.signature = signature;
    modelSelect.replaceChildren(...names.map((name) => new Option(name, name, false, name === current)));
    modelSelect.disabled = models.length === 0;
  }

  async function loadModels() {
    modelSelect.replaceChildren(new Option("loading…", ""));
    try {
      const data = await post("models", {});  // a POST: asking starts the agent
      fillModels(data.model, data.models || []);
      scheduleStatus();  // the agent has a session now
    } catch (e) {
      fillModels(null, knownModels);
      showError(e.message);
    }
  }

  modelSelect.addEventListener("change", async () => {
    try {
      await post("model", { model: modelSelect.value });
    } catch (e) {
      showError(e.message);
    }
    modelSelect.dataset.signature = "";
    refreshStatus();
  });

  // ---- composer, approvals, stop ----------------------------------------------------------

  let unsent = null;  // {text, id} of a send that failed: resending the same text reuses its id
  async function send() {
    const text = textarea.value;
    if (!text.trim()) return;
    const id = unsent && unsent.text === text ? unsent.id : newId();
    unsent = { text, id };
    sendButton.disabled = true;
    try {
      await post("messages", { text, id });
      unsent = null;
      textarea.value = "";
    } catch (e) {
      showError(`Not sent: ${e.message}`);
    } finally {
      sendButton.disabled = false;
      textarea.focus();
      scheduleStatus();
    }
  }

  $("#composer").addEventListener("submit", (e) => { e.preventDefault(); send(); });
  textarea.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });

  messages.addEventListener("click", async (e) => {
    const button = e.target.closest("button");
    if (!button || !approvalButtons.has(button)) return;  // e.g. a button inside rendered Markdown
    const row = button.parentElement;
    const article = row.parentElement;
    const all = [...row.children].filter((b) => approvalButtons.has(b));
    all.forEach((b) => { b.disabled = true; });
    button.classList.add("chosen");
    try {
      const result = await post("buttons", { token: button.dataset.token, id: article.dataset.id });
      if (result.outcome !== "resolved") showError(result.text);  // expired: the tap changed nothing
    } catch (err) {
      all.forEach((b) => { b.disabled = false; });
      button.classList.remove("chosen");
      showError(err.message);
    }
  });

  stopButton.addEventListener("click", async () => {
    stopButton.disabled = true;
    try {
      await post("stop", {});
    } catch (e) {
      showError(e.message);
    } finally {
      stopButton.disabled = false;
      scheduleStatus();
    }
  });

  connect();
  loadModels();
  refreshStatus();
  setInterval(refreshStatus, 5000);
  textarea.focus();
})();

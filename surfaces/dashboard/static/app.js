// acp-relay dashboard: one browser tab = one conversation. Plain JavaScript, no build step.
// The relay sends each message as typed blocks (surfaces/dashboard/render.py): Markdown, which
// marked renders and DOMPurify sanitises, and the core's own parts (tool lines, the plan, the
// refusal card, the footer), which the page draws from their fields. A message without blocks (a
// transcript from before them) is its Markdown.
//
// Agent text is untrusted. Rendered Markdown never holds a control: DOMPurify drops form elements,
// and class, id, style and data-* attributes, so an answer cannot look like (or be) one of the
// page's own buttons, and only the buttons the page builds from a message's `buttons` list are
// approval buttons (`approvalButtons`). Nothing is recognised by its words: agent text that reads
// like a footer or a refusal card is text.
//
// The page draws its own icons (inline SVG): the core's tool lines and footer open with emoji,
// which a browser without an emoji font (a plain Debian install) shows as empty boxes.
(() => {
  "use strict";

  const TAB_KEY = "acp-relay-tab";
  const TAB_RE = /^[A-Za-z0-9_-]{1,64}$/;
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
  const agentSelect = $("#agent");
  const projectSelect = $("#project");
  const sessionList = $("#sessions .session-list");
  const controlNote = $("#sessions .control-note");

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

  // Sanitised HTML of one Markdown text, as nodes to put into a message's body.
  function markdownNodes(text) {
    const holder = document.createElement("div");
    holder.innerHTML = DOMPurify.sanitize(marked.parse(text), PURIFY);
    return [...holder.childNodes];
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

  // ---- the core's blocks -----------------------------------------------------------------

  function checkbox(checked) {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.disabled = true;
    box.checked = checked;
    return box;
  }

  // Lines of text with a line break between them, in a new element.
  function linesIn(tag, className, lines) {
    const el = document.createElement(tag);
    el.className = className;
    lines.forEach((line, i) => {
      if (i) el.appendChild(document.createElement("br"));
      el.appendChild(document.createTextNode(line));
    });
    return el;
  }

  // One block of a message as nodes. A kind the page does not know yet is its Markdown.
  function blockNodes(block) {
    if (block.type === "tools") {
      // One status row per tool call, with data-status for styling and tests; the page's icon.
      const rows = document.createElement("div");
      rows.className = "tools";
      for (const call of block.calls) {
        const row = document.createElement("div");
        row.className = "tool-row";
        row.dataset.status = call.status;
        const words = document.createElement("span");
        words.textContent = call.words;
        row.append(icon(call.status), words);
        rows.appendChild(row);
      }
      return [rows];
    }
    if (block.type === "plan") {
      const list = document.createElement("ul");
      list.className = "plan";
      for (const step of block.steps) {
        const item = document.createElement("li");
        item.className = step.state;
        item.append(checkbox(step.state === "done"), document.createTextNode(` ${step.words}`));
        list.appendChild(item);
      }
      return [list];
    }
    if (block.type === "refusal") return [linesIn("p", "refusal-card", block.lines)];
    if (block.type === "form") return [formCard(block)];
    if (block.type === "footer") {
      const footer = document.createElement("p");
      footer.className = "footer";
      footer.append(icon("timer"), document.createTextNode(block.words));
      return [footer];
    }
    return markdownNodes(block.markdown || "");
  }

  // The agent's question: its words, a link shown as text (the page never opens it), the answers so
  // far, the field asked now and, when it is answered by writing, an input that sends the answer as a
  // message of this tab (as the composer would).
  function formCard(block) {
    const card = document.createElement("div");
    card.className = "form-card";
    const text = (tag, className, words) => {
      const el = document.createElement(tag);
      el.className = className;
      el.textContent = words;
      card.appendChild(el);
      return el;
    };
    text("p", "form-message", block.message);
    if (block.url) text("code", "form-url", block.url);
    if (block.answers.length) {
      const list = document.createElement("ul");
      list.className = "form-answers";
      for (const [title, value] of block.answers) {
        const item = document.createElement("li");
        const name = document.createElement("strong");
        name.textContent = `${title}: `;
        item.append(name, document.createTextNode(value));
        list.appendChild(item);
      }
      card.appendChild(list);
    }
    if (block.question) text("p", "form-question", block.question);
    if (block.choices.length) {
      const list = document.createElement("ol");
      list.className = "form-choices";
      for (const choice of block.choices) {
        const item = document.createElement("li");
        item.textContent = choice;
        list.appendChild(item);
      }
      card.appendChild(list);
    }
    if (block.hint) text("p", "form-hint", block.hint);
    if (block.outcome) {
      const settled = { accept: "completed", decline: "denied", timed_out: "timer" }[block.settled] || "cancelled";
      text("p", "form-outcome", "").append(icon(settled), document.createTextNode(` ${block.outcome}`));
    }
    if (block.reply && !block.outcome) {
      const reply = document.createElement("form");
      reply.className = "form-reply";
      const input = document.createElement("input");
      input.type = "text";
      input.placeholder = block.question;
      input.setAttribute("aria-label", block.question);
      const go = document.createElement("button");
      go.type = "submit";
      go.textContent = "Answer";
      reply.append(input, go);
      reply.addEventListener("submit", async (e) => {
        e.preventDefault();
        if (!input.value.trim()) return;
        go.disabled = true;
        try {
          await post("messages", { text: input.value, id: newId() });
          input.value = "";
        } catch (err) {
          showError(`Not sent: ${err.message}`);
        } finally {
          go.disabled = false;
        }
      });
      card.appendChild(reply);
    }
    return card;
  }

  function messageBody(m) {
    const body = document.createElement("div");
    body.className = "body markdown";
    const blocks = m.blocks && m.blocks.length ? m.blocks : [{ type: "markdown", markdown: m.text }];
    for (const block of blocks) body.append(...blockNodes(block));
    decorate(body);
    return body;
  }

  // What marked leaves for the page to finish in agent Markdown: task-list boxes, copy buttons.
  function decorate(body) {
    for (const mark of body.querySelectorAll(`span[role=checkbox][aria-label="${TASK_MARK}"]`)) {
      mark.replaceWith(checkbox(mark.getAttribute("aria-checked") === "true"));
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

  // The approval buttons the page built (renderMessage); a click on any other button is ignored.
  const approvalButtons = new WeakSet();

  function renderMessage(el, m) {
    const body = m.role === "user" || m.plain ? document.createElement("div") : messageBody(m);
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
    if (m.unsaved) {  // the relay could not write it down (a full disk): a reload loses it
      const note = document.createElement("p");
      note.className = "unsaved";
      note.textContent = "Not saved: the relay could not write this to its disk, so reloading the page loses it.";
      el.appendChild(note);
    }
  }

  function nearBottom() {
    return messages.scrollHeight - messages.scrollTop - messages.clientHeight < 80;
  }

  function upsert(m) {
    const stick = nearBottom();
    let el = document.getElementById(`msg-${m.id}`);
    const signature = JSON.stringify([m.text, m.blocks, m.buttons, m.plain, Boolean(m.unsaved)]);
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

  // A refresh is due at most 250 ms after an event, however many events follow: each event pushing it
  // back left the panel idle through a whole streamed answer (a chunk every 50 ms) until the 5 s poll.
  let statusTimer = null;
  let statusDueAt = 0;
  function scheduleStatus(delay = 250) {
    const dueAt = performance.now() + delay;
    if (statusTimer !== null && statusDueAt <= dueAt) return;  // an earlier one reads the latest too
    clearTimeout(statusTimer);
    statusDueAt = dueAt;
    statusTimer = setTimeout(() => { statusTimer = null; refreshStatus(); }, delay);
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
    // A choice made in the chat (/agent, /project) shows in the pickers too.
    if (document.activeElement !== agentSelect) syncPicker(agentSelect, s.agent || "");
    if (document.activeElement !== projectSelect) syncPicker(projectSelect, s.project || "");
    $(".status-title").textContent = s.title || "–";
    $(".status-cost").textContent = s.cost || "–";
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
    // Relays sharing a database: the one running the conversation (the controls act there).
    for (const cell of document.querySelectorAll(".status-relay")) cell.hidden = !s.relay;
    $("dd.status-relay").textContent = s.relay || "–";
    stopButton.classList.toggle("active", s.busy || !$("#typing").hidden);
    // A status without a live session lists no models (e.g. the idle agent was stopped): keep the list.
    if (document.activeElement !== modelSelect) fillModels(s.model, s.models && s.models.length ? s.models : knownModels);
    if (s.busy) scheduleStatus(1000);  // follow a running turn closely; idle tabs only poll every few seconds
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

  // ---- project, agent and sessions ---------------------------------------------------------
  // The same controls as the chat's /project, /agent and /sessions: the relay says what each choice
  // did (or why nothing changed) in one sentence, shown under the sessions list.

  function note(text) {
    controlNote.textContent = text;
  }

  function syncPicker(select, value) {
    if ([...select.options].some((o) => o.value === value)) select.value = value;
  }

  function fillPicker(select, data) {
    const options = data.options.map((o, i) => new Option(o.label, o.value, false, i === data.current));
    if (data.current < 0) options.unshift(new Option(data.options.length ? "none" : "–", "", true, true));
    select.replaceChildren(...options);
    select.disabled = data.options.length === 0;
    select.title = data.options.length ? "" : data.prompt;  // e.g. "No projects are configured"
  }

  async function loadPicker(select, kind) {
    try {
      fillPicker(select, await post("choices", { kind }));
    } catch (e) {
      showError(e.message);
    }
  }

  async function choose(kind, value) {
    try {
      const data = await post("choose", { kind, value });
      note(data.text);
      if (kind !== "sessions") sessionList.replaceChildren();  // another agent or folder: another list
    } catch (e) {
      showError(e.message);
    }
    loadPicker(agentSelect, "agent");
    loadPicker(projectSelect, "project");
    modelSelect.dataset.signature = "";
    refreshStatus();
  }

  for (const [select, kind] of [[agentSelect, "agent"], [projectSelect, "project"]]) {
    select.addEventListener("change", () => { if (select.value) choose(kind, select.value); });
  }

  async function showSessions(page) {
    sessionList.replaceChildren();
    try {
      const data = await post("choices", { kind: "sessions", page: page || "" });  // starts the agent
      if (!data.options.length) note(data.prompt);
      data.options.forEach((o, i) => {
        const item = document.createElement("li");
        const button = document.createElement("button");
        button.type = "button";
        button.textContent = o.label;
        button.dataset.session = o.value;
        if (i === data.current) {
          button.classList.add("current");
          button.setAttribute("aria-current", "true");
        }
        button.addEventListener("click", async () => {
          await choose("sessions", o.value);
          showSessions(page);
        });
        item.append(button);
        sessionList.append(item);
      });
      if (data.more) {
        const more = document.createElement("button");
        more.type = "button";
        more.className = "more";
        more.textContent = "More…";
        more.addEventListener("click", () => showSessions(data.more));
        sessionList.append(more);
      }
    } catch (e) {
      showError(e.message);
    }
  }

  $("#sessions-show").addEventListener("click", () => showSessions(""));

  // ---- composer, approvals, stop ----------------------------------------------------------

  // Files to send with the next message: the Attach button, a drop on the composer, a pasted screenshot.
  // The relay sends a text file up to 512 KB to the agent, and an image up to 10 MB; a larger file goes
  // without its bytes, and the answer names it as not sent.
  const MAX_FILE_BYTES = 512 * 1024;
  const MAX_IMAGE_BYTES = 10 * 1024 * 1024;
  const MAX_FILES = 10;
  const MAX_TOTAL_BYTES = 16 * 1024 * 1024;  // what one message carries in all (the relay takes its base64)
  const composer = $("#composer");
  const attachInput = $("#attach-input");
  const attachList = $("#attachments");
  let chosen = [];

  function showChosen() {
    attachList.replaceChildren(...chosen.map((file, i) => {
      const item = document.createElement("li");
      const remove = document.createElement("button");
      remove.type = "button";
      remove.dataset.index = String(i);
      remove.title = `Do not send ${file.name}`;
      remove.textContent = "\u00d7";
      item.append(file.name, remove);
      return item;
    }));
    attachList.hidden = chosen.length === 0;
  }

  function attach(files) {
    for (const file of files) {
      if (chosen.length >= MAX_FILES) {
        showError(`At most ${MAX_FILES} files go with one message.`);
        break;
      }
      chosen.push(file);
    }
    showChosen();
  }

  function base64(buffer) {
    const bytes = new Uint8Array(buffer);
    let binary = "";
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return btoa(binary);
  }

  // Each file with its bytes, as long as they fit; past a limit it goes by name only (named as not sent).
  async function encoded(files) {
    let total = 0;
    const sent = [];
    for (const file of files) {
      const type = file.type || "application/octet-stream";
      const limit = type.startsWith("image/") ? MAX_IMAGE_BYTES : MAX_FILE_BYTES;
      const one = { name: file.name || "pasted", type, size: file.size };
      if (file.size <= limit && total + file.size <= MAX_TOTAL_BYTES) {
        one.data = base64(await file.arrayBuffer());
        total += file.size;
      }
      sent.push(one);
    }
    return sent;
  }

  $("#attach").addEventListener("click", () => attachInput.click());
  attachInput.addEventListener("change", () => { attach(attachInput.files); attachInput.value = ""; });
  attachList.addEventListener("click", (e) => {
    const button = e.target.closest("button");
    if (!button) return;
    chosen.splice(Number(button.dataset.index), 1);
    showChosen();
  });
  textarea.addEventListener("paste", (e) => {
    const data = e.clipboardData;
    const files = data ? [...data.files] : [];
    // Words come first: cells copied from a spreadsheet or a document bring a picture of themselves along.
    if (!files.length || data.getData("text/plain").trim()) return;
    e.preventDefault();
    attach(files);
  });
  // Only files are the composer's to take: dragged text still drops into the text box, as anywhere.
  const carriesFiles = (e) => Boolean(e.dataTransfer && [...e.dataTransfer.types].includes("Files"));
  composer.addEventListener("dragover", (e) => {
    if (!carriesFiles(e)) return;
    e.preventDefault();
    composer.classList.add("dropping");
  });
  composer.addEventListener("dragleave", (e) => {
    if (!composer.contains(e.relatedTarget)) composer.classList.remove("dropping");  // not onto a child of it
  });
  composer.addEventListener("drop", (e) => {
    composer.classList.remove("dropping");
    if (!carriesFiles(e)) return;
    e.preventDefault();
    attach(e.dataTransfer.files);
  });

  let unsent = null;  // {text, id} of a send that failed: resending the same text reuses its id
  async function send() {
    const text = textarea.value;
    if (!text.trim() && !chosen.length) return;
    const id = unsent && unsent.text === text ? unsent.id : newId();
    unsent = { text, id };
    sendButton.disabled = true;
    try {
      const body = { text, id };
      if (chosen.length) body.files = await encoded(chosen);
      await post("messages", body);
      unsent = null;
      textarea.value = "";
      chosen = [];
      showChosen();
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
  loadPicker(agentSelect, "agent");
  loadPicker(projectSelect, "project");
  refreshStatus();
  setInterval(refreshStatus, 5000);
  textarea.focus();
})();

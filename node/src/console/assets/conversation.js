// One conversation: its live terminal (the node's own screen as styled
// cells, re-fetched when terminal.data says it changed, at most one fetch in
// flight, or polled for a companion), the atomic
// send box, the attributed transcript (resumed from its cursor after a
// reconnection; monitor advice marked), pause / continue / terminate, and
// its workspace and diff when its agent works on a repository.

import { h, put, ago, errorLine, action } from "./dom.js";
import { drawScreen } from "./terminal.js";
import { workspaceSection } from "./workspace.js";

const MAX_EVENTS = 2000;

/** The bytes a key sends to a terminal (null: not one we send). */
export function keyBytes(ev) {
  const named = { Enter: "\r", Backspace: "\x7f", Tab: "\t", Escape: "\x1b", ArrowUp: "\x1b[A", ArrowDown: "\x1b[B", ArrowRight: "\x1b[C", ArrowLeft: "\x1b[D", Home: "\x1b[H", End: "\x1b[F", Delete: "\x1b[3~" };
  if (ev.metaKey || ev.altKey) return null;
  if (ev.ctrlKey) {
    const k = ev.key.toLowerCase();
    return k.length === 1 && k >= "a" && k <= "z" ? String.fromCharCode(k.charCodeAt(0) - 96) : null;
  }
  if (named[ev.key]) return named[ev.key];
  return ev.key.length === 1 ? ev.key : null;
}

export function conversationView(main, ctx, id) {
  let alive = true;
  let conv = null;
  let nextSeq = 1;
  let termSub = null;
  let transcriptSub = null;
  let fetching = false;
  let again = false;

  const title = h("h1", {}, h("code", {}, id));
  const meta = h("div", { class: "row", id: "conv-meta" });
  const controls = h("div", { class: "row actions", id: "conv-controls" });
  const term = h("pre", { id: "terminal", class: "terminal", "aria-label": "terminal", tabindex: "0" });
  const termState = h("div", { class: "muted small", id: "terminal-state" });
  const usage = h("div", { class: "muted small", id: "usage" });
  const events = h("ol", { id: "transcript", class: "transcript" });
  const workspace = workspaceSection(ctx, id);
  // Keystrokes waiting for their echo: when each was sent (the latency
  // figures in window.warrenStats().keys).
  const unechoed = [];
  const keys = async (bytes) => {
    unechoed.push(performance.now());
    try {
      await ctx.rpc.call("conversation.sendKeys", { conversation: id, keys: bytes });
    } catch (e) {
      unechoed.length = 0;
      put(termState, e.message);
    }
  };
  const keysInput = h("input", { id: "term-keys", class: "keys", placeholder: "type into the terminal", autocapitalize: "off", autocomplete: "off", spellcheck: "false", "aria-label": "type into the terminal" });
  const sendStatus = h("div", { class: "status-line", id: "send-status" });
  const text = h("textarea", { id: "send-text", name: "text", rows: 2, placeholder: "Message (Enter sends, Shift+Enter a new line)", autocapitalize: "sentences" });
  const form = h("form", { id: "send-form", class: "send" }, text, h("button", { type: "submit", class: "primary big", id: "send-button" }, "Send"));
  const send = async (ev) => {
    if (ev) ev.preventDefault();
    const t = text.value;
    if (!t.trim()) return;
    put(sendStatus, "sending...");
    try {
      await ctx.rpc.call("conversation.sendMessage", { conversation: id, text: t });
      text.value = "";
      put(sendStatus, "delivered");
    } catch (e) {
      put(sendStatus, errorLine(e));
    }
  };
  form.addEventListener("submit", send);
  // Desktop: keys typed on the focused terminal go to the PTY as they are.
  term.addEventListener("keydown", (ev) => {
    if (ctx.readOnly) return;
    const b = keyBytes(ev);
    if (b == null) return;
    ev.preventDefault();
    keys(b);
  });
  // Phones: their keyboards insert text rather than send keys.
  keysInput.addEventListener("keydown", (ev) => {
    const b = ["Enter", "Backspace", "Tab", "Escape", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"].includes(ev.key) || ev.ctrlKey ? keyBytes(ev) : null;
    if (b == null) return;
    ev.preventDefault();
    keys(b);
  });
  keysInput.addEventListener("input", () => {
    const t = keysInput.value;
    keysInput.value = "";
    if (t) keys(t);
  });
  text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) send(ev);
  });

  put(
    main,
    h("p", {}, h("a", { href: "#/fleet" }, "← Fleet"), " ", h("span", { id: "agent-link" })),
    title,
    meta,
    controls,
    h("section", { class: "split" }, h("div", { class: "pane" }, h("h2", {}, "Terminal"), term, termState, ctx.readOnly ? null : keysInput, ctx.readOnly ? null : form, sendStatus), h("div", { class: "pane" }, h("h2", {}, "Transcript"), events, usage)),
    workspace.el,
  );

  let shown = "";
  const showConv = (c) => {
    conv = c;
    workspace.show(c.workspace);
    const key = JSON.stringify([c.state, c.status, c.pause_reason]);
    if (key === shown) return;
    shown = key;
    put(document.getElementById("agent-link") || h("span"), h("a", { href: `#/agent/${encodeURIComponent(c.agent)}` }, c.agent));
    put(meta, h("span", { class: "badge" }, c.state), h("span", { class: `badge ${c.status.toLowerCase()}`, id: "conv-status" }, c.status), h("span", { class: "muted small" }, `started ${ago(c.created_at)}`), c.pause_reason ? h("span", { class: "muted small" }, c.pause_reason) : null);
    if (ctx.readOnly) return put(controls);
    const liveNow = c.state === "active" || c.state === "starting";
    put(
      controls,
      liveNow ? action("Pause", () => control("conversation.pause"), "big") : null,
      c.state === "paused" ? action("Continue", () => control("conversation.continue"), "primary big") : null,
      c.state !== "archived" ? action("Terminate", () => control("conversation.terminate"), "danger big") : null,
    );
  };
  const control = async (method) => {
    const r = await ctx.rpc.call(method, { conversation: id });
    showConv(r.conversation);
    subscribeTerminal();
  };

  const refreshScreen = async () => {
    if (fetching) {
      again = true;
      return;
    }
    fetching = true;
    try {
      do {
        again = false;
        const s = await ctx.rpc.call("conversation.screen", { conversation: id, cells: true });
        if (!alive) return;
        if (drawScreen(term, s)) {
          const now = performance.now();
          for (const t of unechoed.splice(0)) ctx.keyLatency.push(now - t);
          if (ctx.keyLatency.length > 1000) ctx.keyLatency.splice(0, ctx.keyLatency.length - 1000);
        }
        put(termState, `${s.cols}×${s.rows} · ${s.status}`);
      } while (again && alive);
    } catch (e) {
      if (e.code !== "offline") put(termState, e.message);
    } finally {
      fetching = false;
    }
  };

  const addEvent = (e) => {
    if (e.seq < nextSeq) return;
    nextSeq = e.seq + 1;
    const monitor = e.speaker.startsWith("monitor:");
    const who = monitor ? `advice from monitor ${e.speaker.slice(8)}` : e.speaker;
    events.append(h("li", { class: `ev speaker-${monitor ? "monitor" : e.speaker} kind-${e.kind}`, "data-seq": e.seq }, h("span", { class: "who" }, who), h("span", { class: "muted small" }, new Date(e.ts).toLocaleTimeString()), h("div", { class: "text" }, e.text)));
    while (events.childElementCount > MAX_EVENTS) events.firstElementChild.remove();
    events.scrollTop = events.scrollHeight;
  };

  const subscribeTerminal = async () => {
    if (!ctx.live || !conv || (conv.state !== "active" && conv.state !== "starting")) return;
    ctx.rpc.cancel(termSub);
    try {
      termSub = await ctx.rpc.subscribe("terminal.subscribe", { conversation: id }, () => refreshScreen());
    } catch {
      termSub = null;
    }
  };

  // On every (re)connection: a fresh screen, the transcript from its cursor.
  const up = async () => {
    try {
      const c = await ctx.rpc.call("conversation.get", { conversation: id });
      if (!alive) return;
      showConv(c.conversation);
      await refreshScreen();
      await subscribeTerminal();
      transcriptSub = await ctx.rpc.subscribe("transcript.subscribe", { conversation: id, from_seq: nextSeq }, (_m, p) => p.event && addEvent(p.event));
    } catch (e) {
      if (alive && e.code !== "offline") main.append(errorLine(e));
    }
  };
  up();
  const undoUp = ctx.onUp(up);
  // State and status are not pushed: a light poll, and the screen for a
  // companion (which may not subscribe to raw terminal bytes).
  const loadUsage = async () => {
    try {
      const u = await ctx.rpc.call("usage.get", { scope: "conversation", id });
      const t = u.tokens || {};
      put(usage, `usage: ${u.turns ?? 0} turns · ${t.input ?? 0} in / ${t.output ?? 0} out tokens`, u.usd != null ? ` · $${Number(u.usd).toFixed(4)}` : "");
    } catch {
      /* no usage for this token or harness */
    }
  };
  loadUsage();
  let ticks = 0;
  const timer = setInterval(async () => {
    try {
      const c = await ctx.rpc.call("conversation.get", { conversation: id });
      if (alive) showConv(c.conversation);
      if (++ticks % 5 === 0) loadUsage();
      if (!termSub) refreshScreen();
    } catch {
      /* offline: "up" redoes it */
    }
  }, ctx.live ? 2000 : 1000);
  return () => {
    alive = false;
    workspace.stop();
    clearInterval(timer);
    undoUp();
    ctx.rpc.cancel(termSub);
    ctx.rpc.cancel(transcriptSub);
  };
}

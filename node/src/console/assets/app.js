// The console's entry: sign-in (a one-time pairing code, or a pasted token,
// kept in localStorage and never put in a URL), the header with the
// connection state and how many things need you (holds; parked tasks are
// counted on the Tasks entry), and the hash router.

import { Rpc, callOnce } from "./rpc.js";
import { h, put, errorLine } from "./dom.js";
import { fleetView, agentView } from "./views.js";
import { monitorsView } from "./monitors.js";
import { holdsView } from "./holds.js";
import { usageView } from "./usage.js";
import { conversationView } from "./conversation.js";
import { tasksView, taskView } from "./tasks.js";
import { nodeView } from "./nodes.js";
import { chatsView, chatView } from "./chat.js";
import { enablePush } from "./push.js";

const TOKEN_KEY = "warren.token";
const PROFILE_KEY = "warren.profile";
const main = document.getElementById("view");
const header = document.getElementById("top");

/** What a view gets: the connection, whether writes are offered, helpers. */
const ctx = {
  rpc: null,
  readOnly: false,
  live: true,
  needsYou: 0,
  keyLatency: [],
  onNeeds: new Set(),
  onEvent: new Set(),
  refreshNeeds: () => refreshNeeds(),
  /** Runs `f` after every reconnection until the view goes; returns the undo. */
  onUp(f) {
    const rpc = ctx.rpc;
    rpc.addEventListener("up", f);
    return () => rpc.removeEventListener("up", f);
  },
  /** Runs `f(kind, event)` on every server event until the view goes. */
  onEvents(f) {
    ctx.onEvent.add(f);
    return () => ctx.onEvent.delete(f);
  },
};

let teardown = null;

function signIn(token, profile) {
  localStorage.setItem(TOKEN_KEY, token);
  localStorage.setItem(PROFILE_KEY, profile || "console");
  start();
}

function signOut() {
  localStorage.removeItem(TOKEN_KEY);
  localStorage.removeItem(PROFILE_KEY);
  if (ctx.rpc) ctx.rpc.stop();
  ctx.rpc = null;
  showSignIn();
}

function showSignIn(message, code) {
  document.body.dataset.signedIn = "no";
  put(header, h("span", { class: "brand" }, "warren"));
  const codeInput = h("input", {
    id: "pair-code",
    name: "code",
    autocomplete: "one-time-code",
    inputmode: "text",
    placeholder: "ABCD-EFGH",
    required: true,
  });
  if (code) codeInput.value = code;
  const tokenInput = h("textarea", { id: "paste-token", name: "token", rows: 3, placeholder: "a token (warren token mint ...)" });
  const status = h("div", { class: "status-line" }, message ? errorLine(new Error(message)) : null);
  const pair = async (ev) => {
    if (ev) ev.preventDefault();
    put(status, "pairing...");
    try {
      const r = await callOnce("session.pair", { code: codeInput.value.trim() });
      signIn(r.token, r.profile);
    } catch (e) {
      put(status, errorLine(e));
    }
  };
  put(
    main,
    h(
      "section",
      { class: "card signin" },
      h("h1", {}, "Sign in to this node"),
      h("p", {}, "On the node's machine run ", h("code", {}, "warren console pair"), " and type the code it prints (valid 60 s, once)."),
      h("form", { id: "pair-form", onsubmit: pair }, h("label", { for: "pair-code" }, "Pairing code"), codeInput, h("button", { type: "submit", id: "pair-button", class: "primary" }, "Pair")),
      h(
        "form",
        {
          id: "token-form",
          onsubmit: (ev) => {
            ev.preventDefault();
            const t = tokenInput.value.trim();
            if (t) signIn(t, "pasted");
          },
        },
        h("label", { for: "paste-token" }, "Or paste a token"),
        tokenInput,
        h("button", { type: "submit" }, "Use token"),
      ),
      status,
    ),
  );
  if (code) pair();
}

function navLink(href, label, id) {
  return h("a", { href, id, class: "nav" }, label);
}

function showHeader() {
  const state = h("span", { id: "conn-state", class: "pill connecting", role: "status" }, "connecting");
  const needs = h("a", { href: "#/holds", id: "needs-you", class: "pill needs hidden" }, "");
  put(
    header,
    h("a", { href: "#/fleet", class: "brand" }, "warren"),
    h("nav", {}, navLink("#/chats", "Chats", "nav-chats"), navLink("#/fleet", "Fleet", "nav-fleet"), navLink("#/tasks", ["Tasks", h("span", { class: "count hidden", id: "parked-count", title: "parked tasks need you" })], "nav-tasks"), navLink("#/holds", "Holds", "nav-holds"), navLink("#/monitors", "Monitors", "nav-monitors"), navLink("#/usage", "Usage", "nav-usage")),
    needs,
    state,
    ctx.readOnly ? h("span", { class: "pill readonly", id: "read-only" }, "read-only") : null,
    "Notification" in window && Notification.permission !== "denied"
      ? h("button", { type: "button", class: "link", id: "notify-me", onclick: notifyMe }, "Notify me")
      : null,
    h("button", { type: "button", class: "link", id: "sign-out", onclick: signOut }, "Sign out"),
  );
  ctx.rpc.addEventListener("state", (ev) => {
    state.className = `pill ${ev.detail}`;
    state.textContent = ev.detail;
    document.body.dataset.conn = ev.detail;
    if (ev.detail === "signed-out") showSignIn("The node refused the stored token: pair again.");
  });
  ctx.onNeeds.add((n) => {
    needs.textContent = `${n} need${n === 1 ? "s" : ""} you`;
    needs.classList.toggle("hidden", n === 0);
  });
}

/** Turns Web Push on for this browser; the button becomes what happened. */
async function notifyMe(ev) {
  const button = ev.target;
  button.disabled = true;
  const said = await enablePush(ctx);
  button.replaceWith(h("span", { class: "pill", id: "push-state", title: said }, said.startsWith("push on") ? "push on" : "page only"));
}

/** Holds waiting for a human: the count in the title and the header. */
async function refreshNeeds() {
  if (!ctx.rpc) return;
  refreshParked();
  try {
    const r = await ctx.rpc.call("supervision.holds", { fleet: true });
    setNeeds(r.holds.length);
  } catch {
    /* offline: the next "up" refreshes */
  }
}

/** Parked tasks (they wait for a human until dealt with): a count on the
 * Tasks entry. A token that may not list tasks shows none. */
async function refreshParked() {
  try {
    const r = await ctx.rpc.call("task.list", { state: "parked", fleet: true });
    const count = document.getElementById("parked-count");
    if (!count) return;
    count.textContent = String(r.tasks.length);
    count.classList.toggle("hidden", r.tasks.length === 0);
  } catch {
    /* offline or not allowed */
  }
}

function setNeeds(n) {
  const before = ctx.needsYou;
  ctx.needsYou = n;
  document.title = n > 0 ? `(${n}) warren` : "warren";
  setFavicon(n);
  if (n > before) notify(n);
  for (const f of ctx.onNeeds) f(n);
}

/** The favicon carries the count (a drawn PNG; img-src allows data:). */
function setFavicon(n) {
  const link = document.querySelector("link[rel=icon]");
  if (!link) return;
  if (n === 0) {
    link.href = "/assets/icon.svg";
    return;
  }
  const c = document.createElement("canvas");
  c.width = c.height = 32;
  const g = c.getContext("2d");
  if (!g) return;
  g.fillStyle = "#2b5d4a";
  g.beginPath();
  g.roundRect(0, 0, 32, 32, 7);
  g.fill();
  g.fillStyle = "#b3261e";
  g.beginPath();
  g.arc(20, 12, 12, 0, 2 * Math.PI);
  g.fill();
  g.fillStyle = "#fff";
  g.font = "bold 16px sans-serif";
  g.textAlign = "center";
  g.textBaseline = "middle";
  g.fillText(n > 9 ? "9+" : String(n), 20, 13);
  link.href = c.toDataURL("image/png");
}

/** A browser notification when a hold appears (if the person allowed it). */
function notify(n) {
  if (!("Notification" in window) || Notification.permission !== "granted" || !document.hidden) return;
  const note = new Notification("warren: an agent needs you", { body: `${n} waiting`, tag: "warren-needs-you" });
  note.onclick = () => {
    window.focus();
    location.hash = "#/holds";
  };
}

function route() {
  if (!ctx.rpc) return;
  if (teardown) teardown();
  teardown = null;
  const [, view, ...rest] = (location.hash || "#/fleet").split("/");
  const arg = rest.map(decodeURIComponent).join("/");
  document.body.dataset.view = view || "fleet";
  const section = { task: "tasks", node: "fleet", chat: "chats" }[view] || view;
  for (const a of header.querySelectorAll("a.nav")) a.classList.toggle("active", a.getAttribute("href") === `#/${section}`);
  const views = { fleet: fleetView, agent: agentView, conv: conversationView, task: taskView, tasks: tasksView, holds: holdsView, monitors: monitorsView, usage: usageView, node: nodeView, chats: chatsView, chat: chatView };
  const render = views[view] || fleetView;
  main.replaceChildren();
  teardown = render(main, ctx, arg) || null;
}

function start() {
  const token = localStorage.getItem(TOKEN_KEY);
  if (!token) return showSignIn();
  const profile = localStorage.getItem(PROFILE_KEY) || "console";
  ctx.readOnly = profile.startsWith("companion");
  // A companion's token has events.subscribe (read-only) but no
  // terminal.subscribe: its terminal polls the screen instead.
  ctx.live = !ctx.readOnly;
  ctx.actions = profile === "companion_actions";
  document.body.dataset.signedIn = "yes";
  document.body.dataset.readOnly = ctx.readOnly ? "yes" : "no";
  ctx.rpc = new Rpc(token);
  ctx.onNeeds = new Set();
  ctx.onEvent = new Set();
  showHeader();
  let first = true;
  let poll = null;
  ctx.rpc.addEventListener("up", async () => {
    refreshNeeds();
    if (first) {
      first = false;
      route();
    }
    let subscribed = false;
    {
      try {
        // Every member's events on this one connection (a member that
        // cannot be asked is left out; the views still poll as a backstop).
        await ctx.rpc.subscribe("events.subscribe", { fleet: true }, (method, params) => {
          if (method.startsWith("event.supervision") || method === "event.monitor.tripped") refreshNeeds();
          else if (method === "event.task.changed") refreshParked();
          for (const f of ctx.onEvent) f(method, params.event);
        });
        subscribed = true;
      } catch {
        subscribed = false;
      }
    }
    if (!subscribed && !poll) poll = setInterval(refreshNeeds, 5000);
  });
  ctx.rpc.start();
}

window.addEventListener("hashchange", route);
// What this page's connection has carried (frame text, in characters),
// and the latest keystroke-to-echo times (ms).
window.warrenStats = () => ({ in: ctx.rpc ? ctx.rpc.bytesIn : 0, out: ctx.rpc ? ctx.rpc.bytesOut : 0, keys: ctx.keyLatency.slice() });

// A pairing QR opens the console with the code in the fragment (never sent
// to the server); it is taken out of the address bar at once.
const frag = new URLSearchParams(location.hash.slice(1));
const code = frag.get("pair");
if (code) {
  history.replaceState(null, "", location.pathname + "#/fleet");
  showSignIn(null, code);
} else {
  start();
}

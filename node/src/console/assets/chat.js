// The chat view, for people who just talk to their agents: their agents as
// a list (who needs them first), and one agent's conversation as a chat:
// the attributed transcript as bubbles (a monitor's advice marked), a
// message box, the dialogs held for a human inline as Approve / Deny cards,
// and start / pause / continue. No terminal, and no node names: an agent on
// another member is reached through this node all the same.

import { h, put, errorLine, action, live } from "./dom.js";
import { agentRows } from "./views.js";

const MAX_BUBBLES = 1000;
const SAY = { "needs-you": "needs you", busy: "working", idle: "waiting for you", paused: "paused", none: "not started" };

export function chatsView(main, ctx) {
  const body = h("div", { id: "chats" }, h("p", { class: "muted" }, "loading..."));
  put(main, h("h1", {}, "Chats"), body);
  return live(
    body,
    ctx,
    async () => {
      const [nodes, agents, convs, holds] = await Promise.all([
        ctx.rpc.call("fleet.nodes", {}).catch(() => ({ nodes: [] })),
        ctx.rpc.call("agent.list", { fleet: true }),
        ctx.rpc.call("conversation.list", { fleet: true }),
        ctx.rpc.call("supervision.holds", { fleet: true }).catch(() => ({ holds: [] })),
      ]);
      const rows = agentRows(nodes.nodes, agents.agents, convs.conversations, holds.holds);
      if (!rows.length) return h("p", { class: "muted" }, "No agents yet.");
      return h(
        "ul",
        { class: "list chats" },
        rows.map(({ a, address, state }) => h("li", { "data-chat": address, "data-state": state }, h("a", { href: `#/chat/${encodeURIComponent(address)}`, class: "row big" }, h("b", {}, a.name), h("span", { class: `badge ${state}` }, SAY[state])))),
      );
    },
    ["event.supervision", "event.conversation", "event.fleet"],
  );
}

/** One bubble of the transcript. */
function bubble(e) {
  const monitor = e.speaker.startsWith("monitor:");
  const side = e.speaker === "human" ? "mine" : e.speaker === "agent" || monitor ? "theirs" : "note";
  return h(
    "li",
    { class: `bubble ${side} ${monitor ? "advice" : ""}`, "data-seq": e.seq, "data-speaker": e.speaker },
    monitor ? h("div", { class: "muted small" }, `advice from monitor ${e.speaker.slice(8)}`) : null,
    h("div", { class: "text" }, e.text),
  );
}

export function chatView(main, ctx, address) {
  let alive = true;
  let conv = null;
  let nextSeq = 1;
  let sub = null;
  const bubbles = h("ol", { class: "chat", id: "chat" });
  const holdsEl = h("div", { id: "chat-holds" });
  const controls = h("div", { class: "row actions", id: "chat-controls" });
  const status = h("div", { class: "status-line", id: "chat-status" });
  const text = h("textarea", { id: "chat-text", rows: 2, placeholder: "Message", autocapitalize: "sentences" });
  const form = h("form", { id: "chat-form", class: "send" }, text, h("button", { type: "submit", class: "primary big", id: "chat-send" }, "Send"));
  const name = address.split("@")[0];
  put(main, h("p", {}, h("a", { href: "#/chats" }, "← Chats")), h("h1", {}, name), controls, bubbles, holdsEl, ctx.readOnly ? null : form, status);

  const send = async (ev) => {
    if (ev) ev.preventDefault();
    const t = text.value;
    if (!t.trim() || !conv) return;
    put(status, "sending...");
    try {
      await ctx.rpc.call("conversation.sendMessage", { conversation: conv.id, text: t });
      text.value = "";
      put(status);
    } catch (e) {
      put(status, errorLine(e));
    }
  };
  form.addEventListener("submit", send);
  text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) send(ev);
  });

  const add = (e) => {
    if (e.seq < nextSeq) return;
    nextSeq = e.seq + 1;
    bubbles.append(bubble(e));
    while (bubbles.childElementCount > MAX_BUBBLES) bubbles.firstElementChild.remove();
    bubbles.lastElementChild.scrollIntoView({ block: "end" });
  };
  const follow = async () => {
    if (!conv || sub) return;
    try {
      sub = await ctx.rpc.subscribe("transcript.subscribe", { conversation: conv.id, from_seq: nextSeq }, (_m, p) => p.event && add(p.event));
    } catch (e) {
      if (e.code !== "offline") put(status, errorLine(e));
    }
  };
  const control = async (method, params) => {
    try {
      const r = await ctx.rpc.call(method, params);
      show(r.conversation);
    } catch (e) {
      put(status, errorLine(e));
    }
  };
  let shown = "";
  const show = (c) => {
    if (c && (!conv || conv.id !== c.id)) {
      ctx.rpc.cancel(sub);
      sub = null;
      nextSeq = 1;
      bubbles.replaceChildren();
    }
    conv = c;
    const key = JSON.stringify(c ? [c.id, c.state] : null);
    if (key !== shown) {
      shown = key;
      if (ctx.readOnly) put(controls);
      else if (!c || c.state === "archived") put(controls, action("Start", () => control("conversation.start", { agent: address }), "primary big start"));
      else if (c.state === "paused") put(controls, action("Continue", () => control("conversation.continue", { conversation: c.id }), "primary big continue"));
      else put(controls, action("Pause", () => control("conversation.pause", { conversation: c.id }), "big pause"));
    }
    follow();
  };
  const canAnswer = !ctx.readOnly || ctx.actions;
  const load = async () => {
    const [convs, holds] = await Promise.all([ctx.rpc.call("conversation.list", { agent: address }), ctx.rpc.call("supervision.holds", { agent: address }).catch(() => ({ holds: [] }))]);
    if (!alive) return;
    // The newest conversation that is not archived is the chat.
    const open = convs.conversations.filter((c) => c.state !== "archived").sort((a, b) => b.created_at - a.created_at);
    show(open[0] || null);
    put(
      holdsEl,
      holds.holds.map((x) =>
        h(
          "div",
          { class: "card hold", "data-hold": x.id },
          h("div", { class: "muted small" }, `${name} asks to run:`),
          h("pre", { class: "subject" }, x.command || x.summary),
          canAnswer ? h("div", { class: "row actions" }, action("Approve", () => answer(x.id, "approve"), "primary big approve"), action("Deny", () => answer(x.id, "deny"), "danger big deny")) : null,
        ),
      ),
    );
  };
  const answer = async (hold, decision) => {
    try {
      await ctx.rpc.call("supervision.answer", { hold, decision });
      ctx.refreshNeeds();
      await load();
    } catch (e) {
      put(status, errorLine(e));
    }
  };
  const tick = () => load().catch((e) => alive && e.code !== "offline" && put(status, errorLine(e)));
  tick();
  const undoUp = ctx.onUp(() => {
    sub = null;
    tick();
  });
  const undoEvents = ctx.onEvents((kind) => kind.startsWith("event.supervision") && tick());
  const timer = setInterval(tick, 2000);
  return () => {
    alive = false;
    clearInterval(timer);
    undoUp();
    undoEvents();
    ctx.rpc.cancel(sub);
  };
}

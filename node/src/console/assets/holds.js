// The holds inbox: each dialog supervision held for a human, with what it
// asks shown before the answer (a Bash dialog's command, an edit's diff or
// text and its paths, and the dialog as the screen shows it), then approve
// and deny, one tap each. A read-only companion sees no answer buttons.
// Parked tasks wait for a human too: they are listed after the holds.

import { h, ago, action, live } from "./dom.js";
import { parkedSection } from "./tasks.js";

/** An edit's content with its added and removed lines marked. */
function diffBlock(text) {
  return h(
    "pre",
    { class: "diff" },
    text.split("\n").map((line) => {
      const t = line.trimStart();
      const cls = t.startsWith("+") ? "add" : t.startsWith("-") ? "del" : "ctx";
      return h("span", { class: cls }, line, "\n");
    }),
  );
}

function holdCard(ctx, x) {
  const canAnswer = !ctx.readOnly || ctx.actions;
  const paths = x.paths || [];
  return h(
    "li",
    { class: "card hold", "data-hold": x.id, "data-class": x.dialog_class },
    h("div", { class: "row" }, h("b", {}, x.agent), x.node ? h("span", { class: "muted small node" }, `on ${x.node}`) : null, h("code", {}, x.dialog_class), h("span", { class: "muted small" }, ago(x.since))),
    x.title ? h("div", { class: "hold-title" }, x.title) : null,
    x.doubt ? h("div", { class: "muted small doubt" }, `Not read for sure: ${x.doubt}. Check the terminal's text below.`) : null,
    h("pre", { class: "subject" }, x.summary),
    x.command ? h("div", { class: "what" }, h("div", { class: "muted small" }, "Command"), h("pre", { class: "command" }, x.command)) : null,
    paths.length ? h("div", { class: "what" }, h("div", { class: "muted small" }, paths.length === 1 ? "File" : "Files"), h("pre", { class: "paths" }, paths.join("\n"))) : null,
    x.content ? h("div", { class: "what" }, h("div", { class: "muted small" }, "Change"), diffBlock(x.content)) : null,
    x.detail ? h("details", { class: "what" }, h("summary", {}, "As the terminal shows it"), h("pre", { class: "detail" }, x.detail)) : null,
    x.detail_truncated ? h("div", { class: "muted small" }, "(cut: open the conversation for all of it)") : null,
    x.options && x.options.length ? h("div", { class: "muted small" }, x.options.join(" | ")) : null,
    canAnswer
      ? h("div", { class: "row actions" }, action("Approve", () => answer(ctx, x.id, "approve"), "primary big approve"), action("Deny", () => answer(ctx, x.id, "deny"), "danger big deny"))
      : null,
    h("a", { href: `#/conv/${encodeURIComponent(x.conversation)}` }, "open the conversation"),
  );
}

export function holdsView(main, ctx) {
  const body = h("div", { id: "holds" }, h("p", { class: "muted" }, "loading..."));
  const parked = parkedSection(ctx);
  main.replaceChildren(h("h1", {}, "Holds"), body, parked.el);
  const stop = live(
    body,
    ctx,
    async () => {
      // Every member's holds: one answered here is forwarded to its home.
      const r = await ctx.rpc.call("supervision.holds", { fleet: true });
      if (!r.holds.length) return h("p", { class: "muted", id: "no-holds" }, "No dialog is held for you.");
      return h(
        "ul",
        { class: "cards" },
        r.holds.map((x) => holdCard(ctx, x)),
      );
    },
    ["event.supervision"],
  );
  return () => {
    stop();
    parked.stop();
  };
}

async function answer(ctx, hold, decision) {
  await ctx.rpc.call("supervision.answer", { hold, decision });
  ctx.refreshNeeds();
  location.hash = "#/holds";
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}

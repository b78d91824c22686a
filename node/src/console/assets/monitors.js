// Monitors (seed 002 section 12): every attachment with its breaker (a
// tripped one is re-armed with one tap), and the one-form attach: keywords
// and their mode, the target (an agent or one conversation), watch-only or
// advising, the breaker's numbers (defaults filled in) and a model. It
// creates the monitor agent from the advisor persona when it does not exist,
// on the target's home unless told otherwise, and attaches it there: the
// console stores none of it.

import { h, put, ago, errorLine, action, live } from "./dom.js";

/** The built-in advisor persona (node::monitors::ADVISOR_PERSONA; a test holds them equal). */
export const ADVISOR_PERSONA = "You are a monitor: you watch another agent's conversation and wake when a keyword fires. Read what happened with warren-read (the trigger message says where), weigh who said what (a human, the agent, a tool, another monitor), then either give one concise, concrete piece of advice with warren-advise, or decide that silence is right and say nothing. Never repeat advice you already gave; never argue with the agent.";

/** The breaker's defaults (the monitor crate's). */
const BREAKER_DEFAULTS = { max_cycles: 5, max_wakes: 20, window_mins: 10 };

export function monitorsView(main, ctx) {
  const body = h("div", { id: "monitors" }, h("p", { class: "muted" }, "loading..."));
  put(main, h("h1", {}, "Monitors"), body, ctx.readOnly ? null : attachForm(ctx));
  return live(
    body,
    ctx,
    async () => {
      // Every member's attachments; one is re-armed on the member that holds it.
      const r = await ctx.rpc.call("monitor.list", { fleet: true });
      if (!r.attachments.length) return h("p", { class: "muted" }, "No monitors are attached.");
      return h(
        "ul",
        { class: "cards" },
        r.attachments.map((m) =>
          h(
            "li",
            { class: `card monitor ${m.state}`, "data-attachment": m.id },
            h("div", { class: "row" }, h("b", {}, m.monitor), " watches ", h("b", {}, m.target.agent || m.target.conversation), h("span", { class: `badge ${m.state}` }, m.state), m.node ? h("span", { class: "muted small node" }, `on ${m.node}`) : null),
            h("div", { class: "small" }, "keywords: ", (m.trigger.keywords || []).map((k) => k.text).join(", "), m.inject ? " · advises" : " · watch only"),
            h("div", { class: "small muted" }, `cycles ${m.cycles}`, m.tripped_at ? ` · tripped ${ago(m.tripped_at)}` : ""),
            m.state === "tripped" && !ctx.readOnly
              ? action(
                  "Re-arm",
                  async () => {
                    await ctx.rpc.call("monitor.rearm", m.node ? { attachment: m.id, node: m.node } : { attachment: m.id });
                    window.dispatchEvent(new HashChangeEvent("hashchange"));
                  },
                  "primary big rearm",
                )
              : null,
          ),
        ),
      );
    },
    ["event.monitor"],
  );
}

/** `monitor-TARGET` (the CLI's default name): at most 63 characters. */
export function defaultMonitorName(target) {
  return `monitor-${target.split("@")[0]}`.slice(0, 63).replace(/-+$/, "");
}

/**
 * The member that homes the target (an agent `NAME`/`NAME@NODE`, or a
 * conversation id) when it is not this node; null: this node, or not found
 * (the attach then says so).
 */
async function homeOf(rpc, scope, target) {
  const list = scope === "agent" ? "agents" : "conversations";
  const method = scope === "agent" ? "agent.list" : "conversation.list";
  const named = (r) => (r[list] || []).filter((x) => (scope === "agent" ? x.name : x.id) === target);
  if (scope === "agent" && target.includes("@")) return target.slice(target.indexOf("@") + 1);
  if (named(await rpc.call(method, {})).length) return null;
  const all = named(await rpc.call(method, { fleet: true }));
  return all.length === 1 && all[0].node ? all[0].node : null;
}

/**
 * The one submit: the monitor agent (created from the advisor persona when
 * missing) on `f.node`, else the target's home, then the attachment there.
 * Returns the attachment and where it lives.
 */
export async function attachMonitor(rpc, f) {
  const home = f.node || (await homeOf(rpc, f.scope, f.target));
  const name = f.monitor || defaultMonitorName(f.target);
  const address = home ? `${name}@${home}` : name;
  let created = false;
  try {
    await rpc.call("agent.get", { agent: address });
  } catch (e) {
    if (e.code !== -32004) throw e;
    const p = { name, harness: f.harness || "claude", persona: ADVISOR_PERSONA };
    if (f.model) p.model = f.model;
    if (home) p.node = home;
    await rpc.call("agent.create", p);
    created = true;
  }
  const p = {
    monitor: name,
    target: f.scope === "agent" ? { agent: f.target } : { conversation: f.target },
    trigger: { keywords: f.keywords.map((text) => ({ text, mode: f.mode })), case_sensitive: !!f.caseSensitive },
    inject: f.inject,
    breaker: f.breaker,
  };
  if (home) p.node = home;
  const r = await rpc.call("monitor.attach", p);
  return { attachment: r.attachment, address, created };
}

/** The one-form attach: keywords, mode, target, watch-only or advising, breaker, model. */
function attachForm(ctx) {
  const field = (id, label, attrs) => [h("label", { for: id }, label), h("input", { id, name: id, autocapitalize: "off", ...attrs })];
  const select = (id, label, options) => [h("label", { for: id }, label), h("select", { id, name: id }, options.map(([v, text]) => h("option", { value: v }, text)))];
  const [keywordsLabel, keywords] = field("attach-keywords", "Keywords (comma-separated)", { required: true, placeholder: "panic, segfault" });
  const [modeLabel, mode] = select("attach-mode", "Match", [["substring", "anywhere (substring)"], ["word", "whole words only"]]);
  const caseSensitive = h("input", { id: "attach-case", type: "checkbox" });
  const [scopeLabel, scope] = select("attach-scope", "Watch", [["agent", "an agent (every conversation it starts)"], ["conversation", "one conversation"]]);
  const [targetLabel, target] = field("attach-target", "Target (NAME, NAME@NODE or a conversation id)", { required: true, placeholder: "coder" });
  const [injectLabel, inject] = select("attach-inject", "The monitor", [["advise", "advises (injects advice)"], ["watch", "watches only"]]);
  const num = (id, label, value, max) => field(id, label, { type: "number", min: 1, max, value, required: true, inputmode: "numeric" });
  const [cyclesLabel, cycles] = num("attach-max-cycles", "Breaker: cycles without a human", BREAKER_DEFAULTS.max_cycles, 100);
  const [wakesLabel, wakes] = num("attach-max-wakes", "Breaker: wakes at most", BREAKER_DEFAULTS.max_wakes, 1000);
  const [windowLabel, windowMins] = num("attach-window-mins", "Breaker: within minutes", BREAKER_DEFAULTS.window_mins, 1440);
  const [modelLabel, model] = field("attach-model", "Model (empty: the harness's default)", { placeholder: "e.g. claude-sonnet-4-5" });
  const [harnessLabel, harness] = field("attach-harness", "Harness (for a new monitor agent)", { required: true, value: "claude" });
  const [monitorLabel, monitor] = field("attach-monitor", "Monitor agent (empty: monitor-TARGET, created when missing)", { placeholder: "monitor-coder" });
  const [nodeLabel, node] = field("attach-node", "Monitor's node (empty: the target's)", { placeholder: "the target's node" });
  const status = h("div", { class: "status-line", id: "attach-status" });
  const submit = async (ev) => {
    ev.preventDefault();
    put(status, "attaching...");
    try {
      const r = await attachMonitor(ctx.rpc, {
        keywords: keywords.value.split(",").map((k) => k.trim()).filter(Boolean),
        mode: mode.value,
        caseSensitive: caseSensitive.checked,
        scope: scope.value,
        target: target.value.trim(),
        inject: inject.value === "advise",
        breaker: { max_cycles: Number(cycles.value), max_wakes: Number(wakes.value), window_mins: Number(windowMins.value) },
        model: model.value.trim(),
        harness: harness.value.trim(),
        monitor: monitor.value.trim(),
        node: node.value.trim(),
      });
      // The list above shows this node's attachments on its next refresh.
      put(status, h("span", { id: "attach-done", "data-attachment": r.attachment.id }, `attached: ${r.address}${r.created ? " (created from the advisor persona)" : ""} watches ${target.value.trim()}`));
    } catch (e) {
      put(status, errorLine(e));
    }
  };
  return h(
    "details",
    { class: "card" },
    h("summary", { id: "attach-monitor-open" }, "Attach a monitor"),
    h(
      "form",
      { id: "attach-form", onsubmit: submit },
      keywordsLabel,
      keywords,
      modeLabel,
      mode,
      h("label", { class: "check" }, caseSensitive, " case-sensitive"),
      scopeLabel,
      scope,
      targetLabel,
      target,
      injectLabel,
      inject,
      cyclesLabel,
      cycles,
      wakesLabel,
      wakes,
      windowLabel,
      windowMins,
      modelLabel,
      model,
      harnessLabel,
      harness,
      monitorLabel,
      monitor,
      nodeLabel,
      node,
      h("button", { type: "submit", class: "primary" }, "Attach"),
      status,
    ),
  );
}

// The console's views over the public API: the fleet at a glance (with
// unread mail, today's spend and this node's supervision defaults), one agent (definition, grants,
// conversations, its supervision panel, read-only here since supervision.set
// is local-only, and its mail). Monitors are monitors.js.

import { h, put, ago, errorLine, action, live } from "./dom.js";
import { utcDay, spendText } from "./usage.js";

/** Order of agents on the fleet view: who needs you first. */
const STATE_ORDER = ["needs-you", "busy", "idle", "paused", "none"];

/** The state an agent shows in: needs-you, busy, idle, paused or none.
 * Items of a fleet-wide list name their member (`node`): an agent's holds
 * and conversations are those of its own member. */
export function agentState(agent, conversations, holds) {
  const its = (x) => x.agent === agent.name && (x.node || "") === (agent.node || "");
  if (holds.some(its)) return "needs-you";
  const mine = conversations.filter((c) => its(c) && c.state !== "archived");
  const live = mine.find((c) => c.state === "active" || c.state === "starting");
  if (live) {
    if (live.status === "DIALOG") return "needs-you";
    // Out of budget (rate zero or far too slow): a human must top up.
    if (live.budget === "exhausted") return "needs-you";
    return live.status === "BUSY" ? "busy" : "idle";
  }
  return mine.some((c) => c.state === "paused") ? "paused" : "none";
}

/** The member a new agent goes to unless the person picks another: the
 * healthy one with the most room, that is the fewest live conversations per
 * CPU (ties: more memory, then the name), as `agent.create {node: "auto"}`
 * chooses (node/src/fleet/place.rs). */
export function pickNode(nodes) {
  const load = (n) => ((n.live_conversations ?? 0) + 1) / Math.max(1, n.capacity?.cpus ?? 1);
  const healthy = nodes.filter((n) => n.healthy && n.name);
  healthy.sort((a, b) => load(a) - load(b) || (b.capacity?.memory_mb ?? 0) - (a.capacity?.memory_mb ?? 0) || a.name.localeCompare(b.name));
  return healthy[0] || nodes.find((n) => n.self) || null;
}

/** How this node addresses an item of a fleet-wide list: by `name` when it
 * is its own (or not in a fleet), else as NAME@NODE. */
export function addressOf(item, name, nodes) {
  const self = (nodes.find((n) => n.self) || {}).name;
  return item.node && item.node !== self ? `${name}@${item.node}` : name;
}

/** The fleet's agents (not archived) with their address and state, who
 * needs you first, then by address. */
export function agentRows(nodes, agents, conversations, holds) {
  return agents
    .filter((a) => !a.archived)
    .map((a) => ({ a, address: addressOf(a, a.name, nodes), state: agentState(a, conversations, holds) }))
    .sort((x, y) => STATE_ORDER.indexOf(x.state) - STATE_ORDER.indexOf(y.state) || x.address.localeCompare(y.address));
}

function badge(state) {
  return h("span", { class: `badge ${state}` }, state.replace("-", " "));
}

export function fleetView(main, ctx) {
  const body = h("div", { id: "fleet" }, h("p", { class: "muted" }, "loading..."));
  // The agents of one node only ("" every node): kept across refreshes.
  let shownNode = "";
  const nodeFilter = (nodes) => {
    const names = nodes.map((n) => n.name).filter(Boolean);
    const select = h("select", { id: "agents-node", "aria-label": "agents of" }, h("option", { value: "" }, "every node"), names.map((n) => h("option", { value: n, selected: n === shownNode ? "" : null }, n)));
    select.addEventListener("change", () => {
      shownNode = select.value;
      for (const li of body.querySelectorAll("#agents li")) li.hidden = !!shownNode && li.dataset.node !== shownNode;
    });
    return select;
  };
  const extra = h("section", { class: "summary", id: "fleet-extra" });
  const form = ctx.readOnly ? null : createAgentForm(ctx);
  put(main, h("h1", {}, "Fleet"), body, extra, form && form.el);
  const stopExtra = fleetExtra(extra, ctx);
  const stop = live(
    body,
    ctx,
    async () => {
      const [nodes, agents, convs, holds, monitors, sup] = await Promise.all([
        ctx.rpc.call("fleet.nodes", {}),
        // Every member's agents, conversations, holds and monitors (each
        // naming its node); a member that did not answer is left out.
        ctx.rpc.call("agent.list", { fleet: true }),
        ctx.rpc.call("conversation.list", { fleet: true }),
        ctx.rpc.call("supervision.holds", { fleet: true }),
        ctx.rpc.call("monitor.list", { fleet: true }).catch(() => ({ attachments: [] })),
        // A companion's token may not read settings: no defaults shown then.
        ctx.rpc.call("supervision.get", {}).catch(() => null),
      ]);
      if (form) form.setNodes(nodes.nodes);
      const self = (nodes.nodes.find((n) => n.self) || {}).name || "";
      // This node's agents by name, another member's as NAME@NODE.
      const rows = agentRows(nodes.nodes, agents.agents, convs.conversations, holds.holds);
      const tripped = monitors.attachments.filter((m) => m.state === "tripped");
      const removed = nodes.removed_from;
      return [
        removed
          ? h("p", { class: "warn", id: "removed-from", role: "status" }, `The owner of fleet ${removed.fleet_id.slice(0, 12)} removed this node (${new Date(removed.removed_at).toLocaleString()}): it is in no fleet now and its agents are kept. To join another fleet, restart it and join with a new code.`)
          : null,
        h(
          "section",
          { class: "summary" },
          h("a", { href: "#/holds", class: `tile ${holds.holds.length ? "alert" : ""}`, id: "holds-waiting" }, h("b", {}, holds.holds.length), " holds waiting"),
          h("a", { href: "#/monitors", class: `tile ${tripped.length ? "alert" : ""}`, id: "tripped-breakers" }, h("b", {}, tripped.length), " tripped breakers"),
        ),
        h("h2", {}, "Nodes"),
        h(
          "ul",
          { class: "cards", id: "nodes" },
          nodes.nodes.map((n) =>
            h(
              "li",
              { class: `card node ${n.healthy ? "healthy" : "unhealthy"}`, "data-node": n.name || n.node_id },
              h("div", { class: "row" }, h("a", { href: `#/node/${encodeURIComponent(n.name || n.node_id)}`, class: "node-link" }, h("b", {}, n.name || n.node_id)), n.self ? h("span", { class: "muted" }, " (this node)") : null, h("span", { class: `dot ${n.healthy ? "ok" : "bad"}`, title: n.healthy ? "healthy" : "unhealthy" })),
              h("div", { class: "muted small" }, n.endpoint || "no endpoint", " · v", n.version || "?"),
              h("div", { class: "small" }, `${n.agents ?? "?"} agents · ${n.live_conversations ?? "?"} live`, n.self ? "" : ` · seen ${ago(n.last_seen)}`),
            ),
          ),
        ),
        sup ? defaultsPanel(sup.defaults) : null,
        h("div", { class: "row" }, h("h2", {}, "Agents"), nodes.nodes.length > 1 ? nodeFilter(nodes.nodes) : null),
        rows.length
          ? h(
              "ul",
              { class: "list", id: "agents" },
              rows.map(({ a, address: name, state }) => {
                const home = a.node || self;
                return h("li", { "data-agent": name, "data-node": home, "data-state": state, hidden: shownNode && home !== shownNode ? "" : null }, h("a", { href: `#/agent/${encodeURIComponent(name)}`, class: "row big" }, h("b", {}, name), h("span", { class: "muted" }, a.harness), badge(state)));
              }),
            )
          : h("p", { class: "muted", id: "agents" }, "No agents yet."),
      ];
    },
    ["event.fleet", "event.supervision", "event.monitor"],
    null,
    // The first usable fleet view of this page load (the tests measure it).
    () => performance.getEntriesByName("fleet-ready").length || requestAnimationFrame(() => performance.mark("fleet-ready")),
  );
  return () => {
    stop();
    stopExtra();
  };
}

/** Unread mail across the fleet's agents, and today's spend: after the
 * fleet itself, refreshed on mail events. */
function fleetExtra(el, ctx) {
  return live(
    el,
    ctx,
    async () => {
      // One call for every member's counts (not an inbox call per agent).
      const [counts, nodes, spend] = await Promise.all([
        ctx.rpc.call("mailbox.unread", { fleet: true }).catch(() => ({ agents: [] })),
        ctx.rpc.call("fleet.nodes", {}).catch(() => ({ nodes: [] })),
        ctx.rpc.call("spend.history", { since_day: utcDay(0) }).catch(() => null),
      ]);
      const withMail = counts.agents.filter((a) => a.unread > 0).map((a) => ({ ...a, address: addressOf(a, a.agent, nodes.nodes) }));
      const unread = withMail.reduce((n, a) => n + a.unread, 0);
      return [
        h(
          withMail.length === 1 ? "a" : "div",
          { class: `tile ${unread ? "mail" : ""}`, id: "mail-waiting", href: withMail.length === 1 ? `#/agent/${encodeURIComponent(withMail[0].address)}` : null },
          h("b", {}, String(unread)),
          " unread mail",
          withMail.length ? h("div", { class: "muted small" }, withMail.map((a) => `${a.address} ${a.unread}`).join(" · ")) : null,
        ),
        spend
          ? h("a", { href: "#/usage", class: "tile", id: "spend-today" }, h("b", { class: "spend" }, spendText(spend.days)), " today")
          : null,
      ];
    },
    ["event.mail", "event.fleet", "event.budget"],
    15000,
  );
}

function createAgentForm(ctx) {
  const name = h("input", { id: "new-agent-name", name: "name", required: true, pattern: "[a-z0-9][a-z0-9_-]*", placeholder: "name", autocapitalize: "off" });
  const harness = h("input", { id: "new-agent-harness", name: "harness", required: true, value: "fake", autocapitalize: "off" });
  const repo = h("input", { id: "new-agent-repo", name: "repo", placeholder: "/path/to/repo or URL (optional)", autocapitalize: "off" });
  const base = h("input", { id: "new-agent-base", name: "base", placeholder: "base branch (default: current)", autocapitalize: "off" });
  // Where it is homed: a member of the fleet (the one with the most room
  // unless the person picks another; a pick is kept across refreshes).
  const node = h("select", { id: "new-agent-node", name: "node" });
  let picked = false;
  let shown = "";
  node.addEventListener("change", () => (picked = true));
  const setNodes = (nodes) => {
    const best = pickNode(nodes);
    const key = JSON.stringify([nodes.map((n) => [n.name, n.healthy, n.self]), best && best.name]);
    if (key === shown) return;
    shown = key;
    const keep = picked ? node.value : best && best.name;
    put(
      node,
      nodes.map((n) => {
        const note = [n.self ? "this node" : "", best && n.name === best.name ? "most room" : "", n.healthy ? "" : "unhealthy"].filter(Boolean).join(", ");
        return h("option", { value: n.name, "data-self": n.self ? "yes" : "no", disabled: n.healthy ? null : "disabled" }, note ? `${n.name} (${note})` : n.name);
      }),
    );
    node.value = keep || "";
  };
  const status = h("div", { class: "status-line" });
  const submit = async (ev) => {
    ev.preventDefault();
    put(status, "creating...");
    try {
      const p = { name: name.value.trim(), harness: harness.value.trim() };
      const home = node.selectedOptions[0];
      if (home && home.dataset.self !== "yes") p.node = home.value;
      if (repo.value.trim()) {
        p.workspace = { repo: repo.value.trim() };
        if (base.value.trim()) p.workspace.base = base.value.trim();
      }
      const r = await ctx.rpc.call("agent.create", p);
      location.hash = `#/agent/${encodeURIComponent(p.node ? `${r.agent.name}@${p.node}` : r.agent.name)}`;
    } catch (e) {
      put(status, errorLine(e));
    }
  };
  const el = h(
    "details",
    { class: "card" },
    h("summary", { id: "new-agent" }, "New agent"),
    h("form", { id: "new-agent-form", onsubmit: submit }, h("label", { for: "new-agent-name" }, "Name"), name, h("label", { for: "new-agent-harness" }, "Harness"), harness, h("label", { for: "new-agent-node" }, "Node"), node, h("label", { for: "new-agent-repo" }, "Repository"), repo, h("label", { for: "new-agent-base" }, "Base branch"), base, h("button", { type: "submit", class: "primary", id: "create-agent" }, "Create"), status),
  );
  return { el, setNodes };
}

function table(headers, rows) {
  return h("table", {}, h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))), h("tbody", {}, rows));
}

export function agentView(main, ctx, name) {
  const body = h("div", { id: "agent" }, h("p", { class: "muted" }, "loading..."));
  const activity = h("ol", { class: "log", id: "activity" });
  const mail = h("ol", { class: "log", id: "mail" });
  const outbox = h("ol", { class: "log", id: "outbox" });
  const outboxCount = h("span", { class: "muted small", id: "outbox-count" });
  const egress = h("ol", { class: "log", id: "egress" });
  let nudged = "";
  put(main, h("p", {}, h("a", { href: "#/fleet" }, "← Fleet")), h("h1", {}, name), body, h("h2", {}, "Supervision activity"), activity, h("h2", {}, "Mail waiting ", h("span", { class: "muted small", id: "mail-count" })), mail, h("h2", {}, "Mail to other nodes ", outboxCount), outbox, h("h2", {}, "Egress refused ", h("span", { class: "muted small", id: "egress-allow" })), egress);
  const stop = live(body, ctx, async () => {
    const [agent, convs, sup, budget] = await Promise.all([
      ctx.rpc.call("agent.get", { agent: name }),
      ctx.rpc.call("conversation.list", { agent: name }),
      ctx.rpc.call("supervision.get", { agent: name }).catch((e) => ({ error: e })),
      ctx.rpc.call("budget.get", { agent: name }).catch(() => null),
    ]);
    const a = agent.agent;
    const g = a.grants || {};
    const liveConv = convs.conversations.find((c) => c.state === "active" || c.state === "starting");
    return [
      h(
        "section",
        { class: "card" },
        h("dl", {}, h("dt", {}, "Harness"), h("dd", {}, a.harness), h("dt", {}, "Model"), h("dd", {}, a.model || "default"), h("dt", {}, "Persona"), h("dd", {}, a.persona || "none"), h("dt", {}, "Created"), h("dd", {}, ago(a.created_at)), h("dt", {}, "Budget"), h("dd", { id: "budget" }, budgetText(budget)), a.workspace ? [h("dt", {}, "Repository"), h("dd", { id: "agent-repo" }, h("code", { class: "path" }, a.workspace.repo), ` from ${a.workspace.base}, ${a.workspace.mode === "in_place" ? "in place" : "a worktree per conversation"}`)] : null),
        h("h3", {}, "Grants"),
        h("dl", {}, h("dt", {}, "Tools"), h("dd", {}, (g.tools || []).join(", ") || "none"), h("dt", {}, "Peers"), h("dd", {}, Array.isArray(g.peers) ? g.peers.join(", ") : g.peers || "none"), h("dt", {}, "Recall"), h("dd", {}, g.recall ? "yes" : "no"), h("dt", {}, "Egress"), h("dd", {}, (g.egress || []).join(", ") || "none")),
      ),
      h("h2", {}, "Conversations"),
      ctx.readOnly || liveConv
        ? null
        : action(
            "Start conversation",
            async () => {
              const r = await ctx.rpc.call("conversation.start", { agent: name });
              location.hash = `#/conv/${encodeURIComponent(r.conversation.id)}`;
            },
            "primary big",
          ),
      h(
        "ul",
        { class: "list", id: "conversations" },
        convs.conversations
          .slice()
          .sort((x, y) => y.created_at - x.created_at)
          .map((c) => h("li", {}, h("a", { href: `#/conv/${encodeURIComponent(c.id)}`, class: "row big" }, h("code", {}, c.id), h("span", {}, c.state), h("span", { class: `badge ${c.status.toLowerCase()}` }, c.status)))),
      ),
      h("h2", {}, "Supervision"),
      supervisionPanel(sup),
      // A nudge is one of the companion's allowlisted actions.
      (!ctx.readOnly || ctx.actions) && liveConv
        ? action(
            "Nudge",
            async () => {
              const r = await ctx.rpc.call("supervision.nudge", { agent: name });
              // Kept across re-renders of the view.
              nudged = `nudge: ${r.outcome}`;
              const note = document.getElementById("nudge-result");
              if (note) note.textContent = nudged;
            },
            "big nudge",
          )
        : null,
      h("div", { class: "status-line", id: "nudge-result" }, nudged),
    ];
  });
  const loadActivity = async () => {
    try {
      const r = await ctx.rpc.call("supervision.audit", { agent: name, limit: 20 });
      put(activity, r.entries.length ? r.entries.map(auditRow) : h("li", { class: "muted" }, "No supervision actions yet."));
    } catch (e) {
      if (e.code !== "offline") put(activity, errorLine(e));
    }
  };
  const loadMail = async () => {
    try {
      const r = await ctx.rpc.call("mailbox.inbox", { agent: name, limit: 50 });
      const count = document.getElementById("mail-count");
      if (count) count.textContent = r.messages.length ? `(${r.messages.length}${r.messages.length >= 50 ? "+" : ""} unread, oldest first; the agent reads and acknowledges its own)` : "";
      put(
        mail,
        r.messages.length
          ? r.messages.map((m) => h("li", {}, h("span", { class: "muted small" }, ago(m.ts)), " from ", h("b", {}, m.from), m.context ? h("span", { class: "muted small" }, ` (${m.context})`) : null, h("div", { class: "text" }, m.body)))
          : h("li", { class: "muted" }, "No unread mail."),
      );
    } catch (e) {
      if (e.code !== "offline") put(mail, h("li", { class: "muted" }, e.code === -32003 ? "This token may not read this agent's mail." : e.message));
    }
  };
  // Mail this agent sent to agents on other members, newest first: delivered,
  // pending (kept until the member takes it) or refused with the reason.
  // Its states change with no event, so this polls with the egress list.
  const loadOutbox = async () => {
    try {
      const r = await ctx.rpc.call("mailbox.outbox", { agent: name, limit: 20 });
      const pending = r.messages.filter((m) => m.state === "pending").length;
      outboxCount.textContent = pending ? `(${pending} pending)` : "";
      put(
        outbox,
        r.messages.length
          ? r.messages.map((m) => h("li", { class: `outbox-${m.state}` }, h("span", { class: "muted small" }, ago(m.ts)), " to ", h("b", {}, m.to), " ", h("span", { class: `badge ${m.state}` }, m.state), m.reason ? h("span", { class: "muted small" }, `: ${m.reason}`) : null))
          : h("li", { class: "muted" }, "None sent to other nodes."),
      );
    } catch (e) {
      if (e.code !== "offline") put(outbox, errorLine(e));
    }
  };
  // The guests' refused connections and lookups, newest first (refusals are
  // recorded as they happen; there is no event for them, so this polls).
  const loadEgress = async () => {
    try {
      const r = await ctx.rpc.call("egress.audit", { agent: name, limit: 100 });
      const allow = document.getElementById("egress-allow");
      if (allow) allow.textContent = `(allowed: the node, the model endpoint${r.egress.length ? ", " + r.egress.join(", ") : ""})`;
      const refused = r.entries.filter((e) => !e.allowed).slice(0, 30);
      put(egress, refused.length ? refused.map(egressRow) : h("li", { class: "muted" }, "Nothing refused."));
    } catch (e) {
      if (e.code !== "offline") put(egress, errorLine(e));
    }
  };
  loadActivity();
  loadMail();
  loadOutbox();
  loadEgress();
  const poll = setInterval(() => {
    loadEgress();
    loadOutbox();
  }, 10000);
  const undo = [
    () => clearInterval(poll),
    ctx.onUp(loadActivity),
    ctx.onUp(loadMail),
    ctx.onUp(loadOutbox),
    ctx.onUp(loadEgress),
    ctx.onEvents((kind, ev) => kind === "event.supervision.acted" && (!ev || !ev.agent || ev.agent === name) && loadActivity()),
    ctx.onEvents((kind, ev) => kind === "event.mail.arrived" && (!ev || !ev.to || ev.to === name) && loadMail()),
  ];
  return () => {
    stop();
    for (const u of undo) u();
  };
}

/** An agent's spend-rate bucket in a line: rate, burst, what is available, its state. */
function budgetText(b) {
  if (!b) return "unknown";
  if (!b.budgeted) return "none";
  const usd = (v) => `$${Number(v).toFixed(2)}`;
  const retry = b.state === "waiting" && b.retry_after_ms ? `, resumes in ${Math.ceil(b.retry_after_ms / 1000)} s` : "";
  return `${usd(b.usd_per_hour)}/h, burst ${usd(b.burst_usd)} · ${usd(b.available_usd)} available · ${b.state}${retry}`;
}

function auditRow(e) {
  return h("li", {}, h("span", { class: "muted small" }, ago(e.at)), " ", h("b", {}, e.trigger), " ", e.decision, " ", e.dialog_class ? h("code", {}, e.dialog_class) : null, " ", h("span", { class: `badge ${e.outcome}` }, e.outcome), e.subject ? h("div", { class: "small" }, e.subject) : null);
}

function egressRow(e) {
  const times = e.count > 1 ? ` ×${e.count}` : "";
  return h("li", {}, h("span", { class: "muted small" }, ago(e.at)), " ", h("code", {}, `${e.dest}:${e.port}`), times, " ", h("span", { class: "small" }, e.rule));
}

/** `command_exec` as `command exec` (it wraps on a phone). */
function words(v) {
  return String(v ?? "").replaceAll("_", " ");
}

/** This node's global supervision defaults (warren.toml's, or those
 * `config.set` stored), read-only here: setting them is local-only. */
export function defaultsPanel(d) {
  const classes = d.classes || {};
  return h(
    "section",
    { class: "card", id: "supervision-defaults", "data-master": d.enabled ? "on" : "off" },
    h("h2", {}, "Supervision defaults"),
    h("p", {}, "Master switch: ", h("b", { id: "master-switch" }, d.enabled ? "on" : "off"), " · mail ", words(d.mail_mode), " · stall ", String(d.stall_mins), " min · ", String(d.nudge_retries), " nudges"),
    h("p", { class: "muted small" }, "Nudge: ", d.nudge_text),
    // The class grid folded, so the agents below stay in view.
    h(
      "details",
      {},
      h("summary", {}, "Dialog classes"),
      table(
        ["class", "action"],
        Object.keys(classes).map((c) => h("tr", { "data-class": c }, h("td", {}, words(c)), h("td", {}, words(classes[c])))),
      ),
    ),
    h("p", { class: "muted small" }, "Changing the defaults is local-only: ", h("code", {}, "warren config set --supervision '{\"enabled\": true}'"), " on the node."),
  );
}

/** The class grid: default vs this agent's override, read-only here. */
function supervisionPanel(sup) {
  if (sup.error) {
    return h("section", { class: "card", id: "supervision" }, h("p", { class: "muted" }, sup.error.code === -32003 ? "This token may not read supervision settings." : sup.error.message));
  }
  const defaults = (sup.defaults && sup.defaults.classes) || {};
  const over = (sup.agent && sup.agent.classes) || {};
  const eff = sup.effective || {};
  const effClasses = eff.classes || defaults;
  const rows = Object.keys(defaults).map((c) =>
    h("tr", { class: over[c] ? "overridden" : "", "data-class": c }, h("td", {}, words(c)), h("td", {}, words(defaults[c])), h("td", {}, over[c] ? h("span", { class: "dot-mark", title: "overridden" }, words(over[c])) : "·"), h("td", {}, words(effClasses[c]))),
  );
  return h(
    "section",
    { class: "card", id: "supervision" },
    h("p", {}, "Supervision: ", h("b", {}, eff.enabled ? "on" : "off"), sup.defaults && !sup.defaults.enabled ? " (the master switch is off)" : "", " · mail ", eff.mail_mode || sup.defaults?.mail_mode || "?", " · stall ", String(eff.stall_mins ?? sup.defaults?.stall_mins ?? "?"), " min"),
    table(["class", "default", "override", "effective"], rows),
    h("p", { class: "muted small" }, "Changing policy is local-only: ", h("code", {}, "warren supervision set"), " on the node."),
  );
}

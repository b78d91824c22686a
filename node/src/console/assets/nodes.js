// One member of the fleet: its health, version, runtime and capacity, what
// is wrong in its harnesses' setup, where its prices come from, and its
// supervision master switch and defaults. Read-only here: a node's settings
// change only on its own machine.

import { h, put, ago, live } from "./dom.js";
import { defaultsPanel } from "./views.js";

function gib(mb) {
  return mb >= 1024 ? `${(mb / 1024).toFixed(1)} GiB` : `${mb} MiB`;
}

export function nodeView(main, ctx, name) {
  const body = h("div", { id: "node" }, h("p", { class: "muted" }, "loading..."));
  put(main, h("p", {}, h("a", { href: "#/fleet" }, "← Fleet")), h("h1", {}, name), body);
  return live(
    body,
    ctx,
    async () => {
      const [info, fleet] = await Promise.all([ctx.rpc.call("node.info", { node: name }), ctx.rpc.call("fleet.nodes", {}).catch(() => ({ nodes: [] }))]);
      const seen = fleet.nodes.find((n) => n.name === info.name || n.node_id === info.node_id) || {};
      const healthy = seen.healthy ?? true;
      const cap = info.capacity || {};
      const warnings = info.harness_warnings || [];
      const pricing = info.pricing || {};
      return [
        h(
          "section",
          { class: "card", id: "node-facts", "data-healthy": healthy ? "yes" : "no" },
          h("dl", {}, h("dt", {}, "Health"), h("dd", { id: "node-health" }, healthy ? "healthy" : "unhealthy", seen.self ? " (this node)" : seen.last_seen ? ` · seen ${ago(seen.last_seen)}` : ""), h("dt", {}, "Version"), h("dd", { id: "node-version" }, info.version), h("dt", {}, "Runtime"), h("dd", { id: "node-runtime" }, info.runtime === "docker" ? "Docker guests" : "local processes (no isolation)"), h("dt", {}, "Endpoint"), h("dd", {}, h("code", {}, info.endpoint)), h("dt", {}, "Started"), h("dd", {}, ago(info.started_at)), h("dt", {}, "Capacity"), h("dd", { id: "node-capacity" }, `${cap.cpus ?? "?"} CPUs · ${cap.memory_mb ? gib(cap.memory_mb) : "?"} · ${cap.guests ?? 0} live`), h("dt", {}, "Prices"), h("dd", { id: "node-pricing" }, `${pricing.source || "?"} table of ${pricing.as_of || "?"}`, pricing.last_error ? ` (last fetch: ${pricing.last_error})` : "")),
        ),
        h("h2", {}, "Harness setup"),
        warnings.length
          ? h(
              "ul",
              { class: "list warn", id: "harness-warnings" },
              warnings.map((w) => h("li", {}, w)),
            )
          : h("p", { class: "muted", id: "harness-warnings" }, "No problem found in its harnesses' settings."),
        info.supervision_defaults ? defaultsPanel(info.supervision_defaults) : null,
        h("p", { class: "muted small" }, "A node's settings change only on its own machine (warren.toml, or ", h("code", {}, "warren config set"), " there)."),
      ];
    },
    ["event.fleet"],
  );
}

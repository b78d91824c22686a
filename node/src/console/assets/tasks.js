// Unattended tasks (seed 001): the list (newest first, a parked task flagged
// as needing you), one task (its goal, state and why, branch and commits,
// the phases as a timeline, each acceptance check with its output's tail,
// the review, its diff, and Stop / Resume automatic messages), and the
// parked tasks the holds view lists. Everything the node says is drawn as
// text (dom.js's `h`), never as markup: a check's output is the agent's.

import { h, put, errorLine, live } from "./dom.js";
import { commit, diffPanel } from "./workspace.js";

/** States a task has ended in (task.stop and task.resume_auto refuse them). */
const ENDED = ["completed", "parked", "failed", "stopped"];

/** A parked task waits for a human: its branch and evidence are kept. */
export function needsYou(task) {
  return task.state === "parked";
}

/** A time of the node's (ms): the time of day, with the date when not today. */
export function when(ms) {
  if (!ms) return "";
  const d = new Date(ms);
  const today = d.toDateString() === new Date().toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

/** How long after the task started: `+0.4 s`, `+12 s`, `+3 min 5 s`. */
function after(ms) {
  const s = Math.max(0, ms) / 1000;
  if (s < 10) return `+${s.toFixed(1)} s`;
  if (s < 60) return `+${Math.round(s)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `+${m} min ${Math.round(s % 60)} s` : `+${Math.floor(m / 60)} h ${m % 60} min`;
}

/** `checks_failed` as `checks failed`. */
function words(v) {
  return String(v ?? "").replaceAll("_", " ");
}

function stateBadge(state, id) {
  return h("span", { class: `badge t-${state}`, id, "data-state": state }, state);
}

function needsBadge() {
  return h("span", { class: "badge needs-you task-needs" }, "needs you");
}

/** The task's address in the console: `ID@NODE` when a member says where it is. */
function taskHref(t) {
  return `#/task/${encodeURIComponent(t.node ? `${t.id}@${t.node}` : t.id)}`;
}

/** `ID@NODE` as the params of a task's calls (`node` routes it there). */
function taskParams(address) {
  const at = address.lastIndexOf("@");
  return at > 0 ? { task: address.slice(0, at), node: address.slice(at + 1) } : { task: address };
}

/** The goal's first line (the list shows no more). */
function firstLine(goal) {
  return String(goal ?? "").split("\n", 1)[0];
}

function taskRow(t) {
  const needs = needsYou(t);
  return h(
    "li",
    { "data-task": t.id, "data-state": t.state, "data-needs": needs ? "yes" : "no", class: needs ? "needs" : "" },
    h(
      "a",
      { href: taskHref(t), class: "row big task-row" },
      h("code", { class: "task-id" }, t.id),
      h("b", { class: "task-agent" }, t.agent),
      t.node ? h("span", { class: "muted small task-node" }, `on ${t.node}`) : null,
      stateBadge(t.state),
      needs ? needsBadge() : null,
      h("span", { class: "task-goal" }, firstLine(t.goal)),
      h("span", { class: "muted small task-meta" }, h("span", { class: "task-repairs", title: "repair rounds used / allowed" }, `repairs ${t.repairs}/${t.max_repairs}`), " · created ", h("time", { class: "task-created" }, when(t.created_at))),
    ),
  );
}

export function tasksView(main, ctx) {
  const body = h("div", { id: "tasks" }, h("p", { class: "muted" }, "loading..."));
  put(main, h("h1", {}, "Tasks"), body);
  return live(
    body,
    ctx,
    async () => {
      // Every member's tasks, each naming its node.
      const r = await ctx.rpc.call("task.list", { fleet: true });
      const tasks = r.tasks.slice().sort((a, b) => b.created_at - a.created_at || a.id.localeCompare(b.id));
      if (!tasks.length) {
        return h("p", { class: "muted", id: "no-tasks" }, "No tasks yet. On the node: ", h("code", {}, "warren task start AGENT GOAL --accept CMD"));
      }
      const parked = tasks.filter(needsYou).length;
      return [
        parked ? h("p", { class: "warn", id: "tasks-parked", role: "status" }, `${parked} parked task${parked === 1 ? "" : "s"} need${parked === 1 ? "s" : ""} you: the worker stopped, its branch and checks are kept.`) : null,
        h("ul", { class: "list tasks", id: "task-list" }, tasks.map(taskRow)),
      ];
    },
    ["event.task"],
  );
}

/** The parked tasks, for the holds view: each links to its task. */
export function parkedSection(ctx) {
  const el = h("section", { id: "parked-tasks", class: "hidden" });
  const stop = live(
    el,
    ctx,
    async () => {
      const r = await ctx.rpc.call("task.list", { state: "parked", fleet: true }).catch(() => ({ tasks: [] }));
      el.classList.toggle("hidden", r.tasks.length === 0);
      if (!r.tasks.length) return [];
      return [
        h("h2", {}, "Parked tasks"),
        h(
          "ul",
          { class: "cards" },
          r.tasks.map((t) =>
            h(
              "li",
              { class: "card parked", "data-task": t.id },
              h("div", { class: "row" }, h("b", {}, t.agent), h("code", {}, t.id), t.node ? h("span", { class: "muted small" }, `on ${t.node}`) : null, needsBadge()),
              h("div", { class: "task-goal-line" }, firstLine(t.goal)),
              t.reason ? h("div", { class: "muted small" }, t.reason) : null,
              h("a", { href: taskHref(t), class: "big open-task" }, "open the task"),
            ),
          ),
        ),
      ];
    },
    ["event.task"],
  );
  return { el, stop };
}

function checkItem(c, i) {
  const killed = c.exit_code == null;
  return h(
    "li",
    { class: `check ${killed || c.exit_code !== 0 ? "failed" : "passed"}`, "data-exit": killed ? "killed" : String(c.exit_code), "data-index": String(i) },
    h(
      "div",
      { class: "row" },
      h("code", { class: "check-command" }, c.command),
      h("span", { class: `badge check-exit ${killed || c.exit_code !== 0 ? "bad" : "good"}` }, killed ? "killed" : `exit ${c.exit_code}`),
      h("span", { class: "muted small check-ms" }, `${c.ms} ms`),
      h("span", { class: "muted small" }, when(c.at)),
    ),
    c.output_tail ? h("pre", { class: "output", tabindex: "0", "aria-label": "output tail" }, c.output_tail) : h("div", { class: "muted small" }, "(no output)"),
  );
}

function reviewCard(r) {
  return h(
    "section",
    { class: "card", id: "task-review" },
    h("h2", {}, "Review"),
    h("div", { class: "row" }, h("b", {}, r.agent), h("span", { class: `badge review-${r.verdict}` }, r.verdict), h("span", { class: "muted small" }, when(r.at))),
    r.notes ? h("pre", { class: "notes" }, r.notes) : null,
  );
}

function taskBody(t) {
  const needs = needsYou(t);
  const d = t.deadline;
  return [
    h(
      "section",
      { class: `card ${needs ? "needs" : ""}`, id: "task-summary", "data-state": t.state },
      h("div", { class: "row" }, stateBadge(t.state, "task-state"), needs ? needsBadge() : null, h("span", { class: "muted small", id: "task-repairs" }, `repairs ${t.repairs}/${t.max_repairs}`)),
      t.reason ? h("p", { id: "task-reason" }, t.reason) : null,
      t.human_takeover ? h("p", { class: "warn", id: "task-takeover" }, "A human took over: automatic messages to the worker wait for Resume.") : null,
      h("pre", { class: "goal", id: "task-goal" }, t.goal),
      h(
        "dl",
        {},
        h("dt", {}, "Agent"),
        h("dd", {}, h("a", { href: `#/agent/${encodeURIComponent(t.agent)}` }, t.agent)),
        h("dt", {}, "Conversation"),
        h("dd", {}, h("a", { href: `#/conv/${encodeURIComponent(t.conversation)}`, id: "task-conversation" }, h("code", {}, t.conversation))),
        h("dt", {}, "Branch"),
        h("dd", {}, h("code", { id: "task-branch" }, t.branch)),
        h("dt", {}, "Baseline"),
        h("dd", {}, commit(t.baseline, "task-baseline")),
        h("dt", {}, "Head"),
        h("dd", {}, commit(t.head, "task-head"), t.head && t.head === t.baseline ? h("span", { class: "muted small" }, " (no commit yet)") : null),
        d ? [h("dt", {}, "Deadline"), h("dd", { id: "task-deadline" }, when(d.at))] : null,
        h("dt", {}, "Created"),
        h("dd", {}, when(t.created_at)),
        t.ended_at ? [h("dt", {}, "Ended"), h("dd", { id: "task-ended" }, when(t.ended_at))] : null,
      ),
    ),
    h("h2", {}, "Timeline"),
    h(
      "ol",
      { class: "timeline", id: "task-phases" },
      t.phases.map((p) =>
        h("li", { "data-phase": p.phase }, h("span", { class: "muted small offset" }, after(p.at - t.created_at)), " ", h("span", { class: "phase" }, words(p.phase)), " ", h("time", { class: "muted small" }, when(p.at))),
      ),
    ),
    h("h2", {}, "Checks ", h("span", { class: "muted small" }, "(the last round's)")),
    t.checks.length ? h("ol", { class: "checks", id: "task-checks" }, t.checks.map(checkItem)) : h("p", { class: "muted", id: "task-checks" }, "No checks have run yet."),
    t.review ? reviewCard(t.review) : null,
  ];
}

export function taskView(main, ctx, address) {
  const params = taskParams(address);
  const id = params.task;
  const body = h("div", { id: "task" }, h("p", { class: "muted" }, "loading..."));
  const controls = h("div", { class: "row actions", id: "task-controls" });
  const status = h("div", { class: "status-line", id: "task-action-status" });
  const changes = h("section", { class: "card hidden", id: "task-changes" });
  put(main, h("p", {}, h("a", { href: "#/tasks" }, "← Tasks")), h("h1", {}, "Task ", h("code", {}, id)), controls, status, body, changes);

  let diff = null;
  let shownControls = null;
  let diffKey = "";
  const ask = async (method, button) => {
    button.disabled = true;
    put(status, "asking the node...");
    try {
      const r = await ctx.rpc.call(method, params);
      put(status, `the task is ${r.task.state}`);
    } catch (e) {
      put(status, errorLine(e));
    } finally {
      button.disabled = false;
    }
  };
  const showControls = (t) => {
    const open = !ENDED.includes(t.state);
    const key = `${open} ${t.human_takeover}`;
    if (key === shownControls) return;
    shownControls = key;
    if (ctx.readOnly || !open) return put(controls);
    const stop = h("button", { type: "button", class: "danger big", id: "task-stop" }, "Stop");
    stop.addEventListener("click", () => ask("task.stop", stop));
    // Resume only means something after a human took over the terminal.
    if (!t.human_takeover) return put(controls, stop);
    const resume = h("button", { type: "button", class: "big", id: "task-resume" }, "Resume automatic messages");
    resume.addEventListener("click", () => ask("task.resume_auto", resume));
    put(controls, stop, resume);
  };
  const showDiff = (t) => {
    if (!diff) {
      diff = diffPanel(ctx, t.conversation, true);
      put(changes, diff.el);
      changes.classList.remove("hidden");
      diffKey = `${t.state} ${t.head}`;
      return;
    }
    // A new head or state may have changed the worktree: fetch it again.
    const key = `${t.state} ${t.head}`;
    if (key !== diffKey) {
      diffKey = key;
      diff.load();
    }
  };
  const stop = live(
    body,
    ctx,
    async () => {
      const t = (await ctx.rpc.call("task.get", params)).task;
      showControls(t);
      showDiff(t);
      return taskBody(t);
    },
    ["event.task"],
  );
  return () => {
    stop();
    if (diff) diff.stop();
  };
}

// A conversation's workspace: where it works (branch, baseline and head
// commits, the worktree's path) and its changes against the baseline,
// loaded with conversation.diff (on demand here, at once in a task's view):
// the files with their +/- counts, and the patch drawn line by line as text
// nodes (the patch is agent-written, so it never becomes markup), cut at
// MAX_BYTES by the node.

import { h, put, errorLine } from "./dom.js";

/** What one diff may carry (the node cuts the patch there and says so). */
const MAX_BYTES = 512 * 1024;

/** A commit as git shows it short; the full hash on hover. */
export function commit(hash, id) {
  return hash ? h("code", { id, title: hash }, hash.slice(0, 10)) : h("span", { id, class: "muted" }, "none yet");
}

/** A patch's lines, consecutive lines of one kind in one span: file
 * headers (from `diff ` to the first hunk) bold, hunk headers muted,
 * added lines green, removed red. */
export function patchLines(patch) {
  const runs = [];
  let header = false;
  for (const line of patch.split("\n")) {
    let kind;
    if (line.startsWith("diff ")) header = true;
    if (line.startsWith("@@")) {
      header = false;
      kind = "hunk";
    } else if (header) kind = "file";
    else if (line.startsWith("+")) kind = "add";
    else if (line.startsWith("-")) kind = "del";
    else if (line.startsWith("\\")) kind = "hunk";
    else kind = "ctx";
    const last = runs[runs.length - 1];
    if (last && last.kind === kind) last.lines.push(line);
    else runs.push({ kind, lines: [line] });
  }
  return runs.map((r) => h("span", { class: r.kind }, r.lines.join("\n"), "\n"));
}

function filesList(files) {
  return h(
    "ul",
    { class: "files", id: "diff-files" },
    files.map((f) =>
      h(
        "li",
        { "data-path": f.path, "data-status": f.status },
        h("span", { class: `st st-${f.status}` }, String(f.status ?? "?").replace("_", " ")),
        h("code", { class: "path" }, f.path),
        h("span", { class: "plus" }, `+${f.additions}`),
        h("span", { class: "minus" }, `-${f.deletions}`),
      ),
    ),
  );
}

/**
 * The "Changes" of conversation `id`: its files with their +/- counts and
 * its patch, fetched with conversation.diff. Folded behind its "Diff"
 * button until opened, or loaded at once with `open`. `load` fetches again
 * (a no-op while a fetch is in flight); `stop` when the view goes.
 */
export function diffPanel(ctx, id, open) {
  let alive = true;
  let loaded = false;
  let loading = false;
  const status = h("div", { class: "status-line", id: "diff-status" });
  const body = h("div", { id: "diff-body", class: open ? "" : "hidden" });
  const refresh = h("button", { type: "button", id: "diff-refresh", class: open ? "" : "hidden" }, "Refresh");
  const toggle = h("button", { type: "button", id: "diff-load", class: "primary", "aria-expanded": String(!!open), "aria-controls": "diff-body" }, "Diff");
  const el = h("div", { class: "changes" }, h("div", { class: "row" }, h("h2", {}, "Changes"), toggle, refresh), status, body);

  const load = async () => {
    if (loading) return;
    loading = true;
    refresh.disabled = true;
    put(status, "loading the diff...");
    try {
      const d = await ctx.rpc.call("conversation.diff", { conversation: id, max_bytes: MAX_BYTES });
      if (!alive) return;
      loaded = true;
      const add = d.files.reduce((n, f) => n + f.additions, 0);
      const del = d.files.reduce((n, f) => n + f.deletions, 0);
      put(status);
      put(
        body,
        h(
          "p",
          { class: "small", id: "diff-totals" },
          `${d.files.length} file${d.files.length === 1 ? "" : "s"} changed `,
          h("span", { class: "plus" }, `+${add}`),
          " ",
          h("span", { class: "minus" }, `-${del}`),
          h("span", { class: "muted" }, " · ", commit(d.baseline), " → ", commit(d.head), ", with uncommitted changes"),
        ),
        d.files.length ? filesList(d.files) : h("p", { class: "muted", id: "diff-files" }, "No changes against the baseline."),
        d.truncated ? h("p", { class: "warn", id: "diff-truncated", role: "status" }, `The patch is cut at ${MAX_BYTES / 1024} KB; the file list is whole.`) : null,
        d.patch ? h("pre", { class: "patch", id: "diff-patch", tabindex: "0", "aria-label": "patch" }, patchLines(d.patch)) : null,
      );
    } catch (e) {
      if (alive) put(status, e.code === "offline" ? "offline: refresh when the node is back" : errorLine(e));
    } finally {
      loading = false;
      refresh.disabled = false;
    }
  };
  toggle.addEventListener("click", () => {
    const opening = body.classList.contains("hidden");
    body.classList.toggle("hidden", !opening);
    refresh.classList.toggle("hidden", !opening);
    toggle.setAttribute("aria-expanded", String(opening));
    if (opening && !loaded) load();
  });
  refresh.addEventListener("click", load);
  if (open) load();
  return {
    el,
    load,
    stop() {
      alive = false;
    },
  };
}

/** The "Workspace" and "Changes" sections of conversation `id`, hidden
 * until `show` gets a workspace; `stop` when the view goes. */
export function workspaceSection(ctx, id) {
  let shown = "";
  const where = h("dl", { id: "workspace-info" });
  const changes = diffPanel(ctx, id);
  const el = h("section", { id: "workspace", class: "card hidden" }, h("h2", {}, "Workspace"), where, changes.el);

  return {
    el,
    /** The conversation's `workspace`: redrawn when it changed. An object
     * without one (a control's answer may omit it) keeps what is shown: a
     * conversation does not lose its workspace. */
    show(ws) {
      if (!ws) return;
      const key = JSON.stringify(ws);
      if (key === shown) return;
      shown = key;
      el.classList.remove("hidden");
      put(
        where,
        h("dt", {}, "Branch"),
        h("dd", {}, h("code", { id: "workspace-branch" }, ws.branch)),
        h("dt", {}, "Baseline"),
        h("dd", {}, commit(ws.baseline, "workspace-baseline")),
        h("dt", {}, "Head"),
        h("dd", {}, commit(ws.head, "workspace-head"), ws.head && ws.head === ws.baseline ? h("span", { class: "muted small" }, " (no commits yet)") : null),
        h("dt", {}, "Path"),
        h("dd", {}, h("code", { id: "workspace-path", class: "path" }, ws.path)),
      );
    },
    stop() {
      changes.stop();
    },
  };
}

// Small DOM helpers: elements are built with text nodes only (no HTML
// strings), so nothing a node or an agent says can become markup; and
// `live`, a view's loader that re-runs on reconnection, events and a timer.

/** `h("a", {href: "#/x", class: "big"}, "text", child)`. */
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid == null || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

/** Replaces the children of `el`. */
export function put(el, ...kids) {
  el.replaceChildren();
  for (const kid of kids.flat(Infinity)) {
    if (kid == null || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

/** "12 s ago", "3 min ago", ... from a time in ms. */
export function ago(ms) {
  if (!ms) return "never";
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}

/** A short line saying what went wrong. */
export function errorLine(e) {
  return h("p", { class: "error", role: "alert" }, e && e.message ? e.message : String(e));
}

/** A button that disables itself while its async action runs. */
export function action(label, run, cls) {
  const b = h("button", { type: "button", class: cls || "" }, label);
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      await run();
    } catch (e) {
      b.after(errorLine(e));
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

/** Loads a view now, after each reconnection, and when `kinds` events come. */
export function live(el, ctx, load, kinds, everyMs, onFirst) {
  let alive = true;
  let last = null;
  const run = async () => {
    if (!alive) return;
    try {
      const kids = await load();
      // Unchanged content is left alone (a tap in progress keeps its target).
      const html = new XMLSerializer().serializeToString(h("div", {}, kids));
      if (alive && html !== last) {
        const first = last === null;
        last = html;
        put(el, kids);
        if (first && onFirst) onFirst();
      }
    } catch (e) {
      if (alive && e.code !== "offline") put(el, errorLine(e));
    }
  };
  run();
  const undo = [ctx.onUp(run), ctx.onEvents((kind) => (!kinds || kinds.some((k) => kind.startsWith(k))) && run())];
  // Conversations' states are not events yet (and a companion gets no
  // events at all): poll as a backstop.
  const timer = setInterval(run, everyMs || (ctx.live ? 5000 : 3000));
  return () => {
    alive = false;
    clearInterval(timer);
    for (const u of undo) u();
  };
}

// The terminal's cells in the page: the node's screen as styled runs
// (conversation.screen {cells: true}) drawn as spans, one per run, coloured
// through the CSSOM (the CSP allows no style attributes), with the cursor
// drawn on its cell. Rows are kept and only changed ones are replaced, so a
// keystroke's echo touches one row. The element's text stays the screen's
// lines joined by newlines.

import { h } from "./dom.js";

/** The sixteen terminal colours are the stylesheet's (`--t0`..`--t15`). */
function paletteColor(i) {
  if (i < 16) return `var(--t${i})`;
  if (i < 232) {
    const n = i - 16;
    const level = (v) => (v === 0 ? 0 : 55 + v * 40);
    return `rgb(${level(Math.floor(n / 36))}, ${level(Math.floor(n / 6) % 6)}, ${level(n % 6)})`;
  }
  const g = 8 + (i - 232) * 10;
  return `rgb(${g}, ${g}, ${g})`;
}

/** A run's colour (a palette index or "#rrggbb") as a CSS value. */
export function cssColor(c) {
  if (c == null) return null;
  if (typeof c === "number") return paletteColor(c);
  return /^#[0-9a-f]{6}$/i.test(c) ? c : null;
}

function runSpan(run, text) {
  const cls = [run.bold ? "b" : "", run.italic ? "i" : "", run.underline ? "u" : ""].filter(Boolean).join(" ");
  const el = h("span", cls ? { class: cls } : {}, text);
  let fg = cssColor(run.fg);
  let bg = cssColor(run.bg);
  if (run.inverse) [fg, bg] = [bg || "var(--term-bg)", fg || "var(--term-fg)"];
  if (fg) el.style.color = fg;
  if (bg) el.style.backgroundColor = bg;
  return el;
}

/** The characters of `text` with the columns each covers (wide: 2). */
function columns(run) {
  const chars = [...run.text];
  // A run's width is its columns; wide characters make it longer than its length.
  const extra = (run.width ?? chars.length) - chars.length;
  return chars.map((ch) => [ch, extra > 0 && isWide(ch) ? 2 : 1]);
}

function isWide(ch) {
  const c = ch.codePointAt(0);
  return (c >= 0x1100 && c <= 0x115f) || (c >= 0x2e80 && c <= 0xa4cf) || (c >= 0xac00 && c <= 0xd7a3) || (c >= 0xf900 && c <= 0xfaff) || (c >= 0xfe30 && c <= 0xfe4f) || (c >= 0xff00 && c <= 0xff60) || (c >= 0xffe0 && c <= 0xffe6) || (c >= 0x1f300 && c <= 0x1faff) || (c >= 0x20000 && c <= 0x3fffd);
}

/** One row's spans; with `cursorCol` (a number) the cursor's cell is marked. */
function rowKids(runs, cursorCol) {
  const kids = [];
  let col = 0;
  let drawn = cursorCol == null;
  for (const run of runs) {
    const end = col + (run.width ?? [...run.text].length);
    if (!drawn && cursorCol >= col && cursorCol < end) {
      // Split the run around the cursor's character.
      let before = "";
      let at = "";
      let after = "";
      let c = col;
      for (const [ch, w] of columns(run)) {
        if (c + w <= cursorCol) before += ch;
        else if (!at) at = ch;
        else after += ch;
        c += w;
      }
      if (before) kids.push(runSpan(run, before));
      const cur = runSpan(run, at || " ");
      cur.classList.add("cursor");
      kids.push(cur);
      if (after) kids.push(runSpan(run, after));
      drawn = true;
    } else {
      kids.push(runSpan(run, run.text));
    }
    col = end;
  }
  if (!drawn) {
    if (cursorCol > col) kids.push(" ".repeat(cursorCol - col));
    kids.push(h("span", { class: "cursor" }, " "));
  }
  return kids;
}

/**
 * Draws `screen` (a conversation.screen answer) into `el`. Rows past the
 * last non-blank one below the cursor are left out (a phone shows more).
 * Returns whether anything changed.
 */
export function drawScreen(el, screen) {
  const cells = screen.cells;
  const rows = cells ? cells.rows : screen.lines.map((l) => (l ? [{ text: l.replace(/ +$/, ""), width: l.replace(/ +$/, "").length }] : []));
  const cursor = cells ? cells.cursor : { row: screen.cursor[0], col: screen.cursor[1], visible: true };
  let n = rows.length;
  while (n > 0 && rows[n - 1].every((r) => !r.text.trim() && r.bg == null && !r.inverse) && n - 1 > cursor.row) n--;
  let changed = false;
  const have = el.children;
  for (let i = 0; i < n; i++) {
    const withCursor = cursor.visible && cursor.row === i ? cursor.col : null;
    const key = JSON.stringify([rows[i], withCursor, i < n - 1]);
    const old = have[i];
    if (old && old.dataset.key === key) continue;
    const row = h("span", { class: "trow" }, rowKids(rows[i], withCursor), i < n - 1 ? "\n" : null);
    row.dataset.key = key;
    row.dataset.row = String(i);
    if (old) old.replaceWith(row);
    else el.append(row);
    changed = true;
  }
  while (el.children.length > n) {
    el.lastElementChild.remove();
    changed = true;
  }
  // Text outside the rows (an earlier plain rendering) goes.
  for (const node of [...el.childNodes]) if (node.nodeType !== Node.ELEMENT_NODE) node.remove();
  el.dataset.cols = String(screen.cols);
  el.dataset.rows = String(screen.rows);
  return changed;
}

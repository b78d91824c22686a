// Usage: the fleet's spend ledgers (spend.history {fleet: true}) per UTC day
// as a bar chart drawn with SVG DOM calls (no library), stacked by model, by
// agent or by node (a series per member), and a table of the same. A model without a price is "unpriced", never $0: its tokens
// are counted and its bars are drawn as a hatched mark, not as dollars.

import { h, put, live } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const DAYS = 14;
/** Series colours (by position); the rest reuse them. */
const SERIES = 8;

/** A UTC day `YYYY-MM-DD`, `back` days before today. */
export function utcDay(back) {
  return new Date(Date.now() - back * 86400000).toISOString().slice(0, 10);
}

function s(tag, attrs, ...kids) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const kid of kids) if (kid != null) el.append(kid instanceof Node ? kid : String(kid));
  return el;
}

export function dollars(usd) {
  return usd >= 100 ? `$${usd.toFixed(0)}` : usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`;
}

function tokens(r) {
  return r.input + r.cache_read + r.cache_write_5m + r.cache_write_1h + r.output;
}

/** Spend of `rows` for a tile: dollars of the priced, "unpriced" named. */
export function spendText(rows) {
  const priced = rows.filter((r) => r.priced).reduce((a, r) => a + (r.usd || 0), 0);
  const unpriced = [...new Set(rows.filter((r) => !r.priced).map((r) => r.model))];
  if (!rows.length) return "no spend";
  const parts = [];
  if (rows.some((r) => r.priced)) parts.push(dollars(priced));
  if (unpriced.length) parts.push(`unpriced (${unpriced.join(", ")})`);
  return parts.join(" + ");
}

/** The chart: one bar per day, stacked by `key` (model or agent). */
function chart(rows, days, key) {
  // Only what has dollars gets a colour; unpriced use is its own mark.
  const series = [...new Set(rows.filter((r) => r.priced).map((r) => r[key]))].sort();
  const perDay = days.map((d) => rows.filter((r) => r.day === d));
  const max = Math.max(0.000001, ...perDay.map((rs) => rs.reduce((a, r) => a + (r.priced ? r.usd || 0 : 0), 0)));
  const W = 700;
  const H = 240;
  const left = 56;
  const bottom = 28;
  const slot = (W - left - 8) / days.length;
  const bar = Math.max(6, slot * 0.7);
  const y = (usd) => H - bottom - (usd / max) * (H - bottom - 12);
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", id: "usage-chart", "aria-label": `spend per day by ${key}` });
  svg.append(s("title", {}, `Spend per day by ${key}, last ${days.length} days`));
  for (const frac of [0, 0.5, 1]) {
    const yy = y(max * frac);
    svg.append(s("line", { x1: left, x2: W - 4, y1: yy, y2: yy, class: "grid" }), s("text", { x: left - 6, y: yy + 4, class: "axis", "text-anchor": "end" }, dollars(max * frac)));
  }
  days.forEach((d, i) => {
    const x = left + i * slot + (slot - bar) / 2;
    let top = H - bottom;
    for (const r of perDay[i].filter((r) => r.priced)) {
      const hgt = H - bottom - y(r.usd || 0);
      top -= hgt;
      const rect = s("rect", { x, y: top, width: bar, height: Math.max(0, hgt), class: `bar s${series.indexOf(r[key]) % SERIES}`, "data-day": d, "data-series": r[key], "data-usd": r.usd });
      rect.append(s("title", {}, `${d} ${r[key]}: ${dollars(r.usd || 0)}`));
      svg.append(rect);
    }
    const unpriced = perDay[i].filter((r) => !r.priced);
    if (unpriced.length) {
      const mark = s("rect", { x, y: top - 8, width: bar, height: 6, class: "bar unpriced", "data-day": d });
      mark.append(s("title", {}, `${d}: unpriced ${[...new Set(unpriced.map((r) => r.model))].join(", ")} (${unpriced.reduce((a, r) => a + tokens(r), 0)} tokens)`));
      svg.append(mark);
    }
    if (i % Math.ceil(days.length / 7) === 0 || i === days.length - 1) svg.append(s("text", { x: x + bar / 2, y: H - 8, class: "axis", "text-anchor": "middle" }, d.slice(5)));
  });
  const legend = h(
    "ul",
    { class: "legend" },
    series.map((name, i) => h("li", {}, h("span", { class: `swatch s${i % SERIES}` }), name)),
    rows.some((r) => !r.priced) ? h("li", {}, h("span", { class: "swatch unpriced" }), "unpriced (tokens, no price)") : null,
  );
  return [svg, legend];
}

/** Totals per `key`: tokens, and dollars or "unpriced". */
function totals(rows, key) {
  const by = new Map();
  for (const r of rows) {
    const t = by.get(r[key]) || { name: r[key], tokens: 0, usd: 0, priced: true, requests: 0 };
    t.tokens += tokens(r);
    t.requests += r.requests || 0;
    if (r.priced) t.usd += r.usd || 0;
    else t.priced = false;
    by.set(r[key], t);
  }
  return h(
    "table",
    { id: "usage-table" },
    h("thead", {}, h("tr", {}, h("th", {}, key), h("th", {}, "tokens"), h("th", {}, "requests"), h("th", {}, "spend"))),
    h(
      "tbody",
      {},
      [...by.values()].map((t) => h("tr", { "data-name": t.name }, h("td", {}, t.name), h("td", {}, t.tokens.toLocaleString()), h("td", {}, String(t.requests)), h("td", { class: t.priced ? "" : "unpriced" }, t.priced ? dollars(t.usd) : t.usd > 0 ? `${dollars(t.usd)} + unpriced` : "unpriced"))),
    ),
  );
}

export function usageView(main, ctx) {
  let key = "model";
  let answer = null;
  const body = h("div", { id: "usage" }, h("p", { class: "muted" }, "loading..."));
  const days = [...Array(DAYS).keys()].reverse().map(utcDay);
  const render = () => {
    if (!answer.days.length) return h("p", { class: "muted", id: "no-usage" }, "No spend recorded in these days.");
    const p = answer.pricing;
    return [
      h("section", { class: "card" }, chart(answer.days, days, key)),
      h("p", { id: "usage-total" }, "Total: ", h("b", {}, spendText(answer.days)), p ? h("span", { class: "muted small" }, ` · prices: ${p.source}${p.as_of ? ` as of ${p.as_of}` : ""}`) : null),
      totals(answer.days, key),
    ];
  };
  const toggle = h(
    "div",
    { class: "row toggle", id: "usage-by" },
    ["model", "agent", "node"].map((k) =>
      h(
        "button",
        {
          type: "button",
          "data-key": k,
          class: k === key ? "active" : "",
          onclick: () => {
            key = k;
            for (const b of toggle.querySelectorAll("button")) b.classList.toggle("active", b.dataset.key === k);
            if (answer) put(body, render());
          },
        },
        `by ${k}`,
      ),
    ),
  );
  put(main, h("h1", {}, "Usage"), h("p", { class: "muted small" }, `Spend per UTC day across the fleet, the last ${DAYS} days, from the CLIs' own session files.`), toggle, body);
  return live(
    body,
    ctx,
    async () => {
      try {
        answer = await ctx.rpc.call("spend.history", { since_day: days[0], fleet: true });
        for (const r of answer.days) r.node = r.node || "this node";
      } catch (e) {
        if (e.code === -32003) return h("p", { class: "muted" }, "This token may not read spend.");
        throw e;
      }
      return render();
    },
    ["event.budget"],
    30000,
  );
}

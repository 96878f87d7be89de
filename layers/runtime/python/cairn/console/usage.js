// The organization's usage by day, agent and model, and this month against its limits.

import { get } from "./api.js";
import { field, h } from "./dom.js";

export async function usagePage(show) {
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const start = h("input", { type: "date", value: params.get("start_date") || "" });
  const end = h("input", { type: "date", value: params.get("end_date") || "" });
  const found = await get("/v1/usage", { start_date: start.value, end_date: end.value });
  start.value = found.start_date;
  end.value = found.end_date;
  const agents = await get("/v1/agents/", { limit: 200, include_relationships: [] }).catch(() => []);
  const names = Object.fromEntries(agents.map((a) => [a.id, a.name]));
  const money = (v) => (v === null || v === undefined ? "no price" : `$${v.toFixed(4)}`);
  const num = (v) => Number(v || 0).toLocaleString();
  const form = h("form", { onsubmit: (e) => {
    e.preventDefault();
    location.hash = `#/usage?start_date=${start.value}&end_date=${end.value}`;
  } }, h("div", { class: "row" }, field("From", start), field("To", end),
    h("div", {}, h("button", { type: "submit" }, "Show"))));
  const heads = ["Day", "Agent", "Model", "Steps", "Model calls", "Input tokens", "Output tokens", "Cached", "Tool calls", "Cost (estimate)"];
  const rows = found.rows.map((r) => h("tr", {},
    h("td", {}, r.day),
    h("td", {}, names[r.agent_id] ? h("a", { href: `#/agents/${r.agent_id}` }, names[r.agent_id]) : r.agent_id),
    h("td", {}, r.model || ""), h("td", {}, num(r.steps)), h("td", {}, num(r.model_calls)),
    h("td", {}, num(r.prompt_tokens)), h("td", {}, num(r.completion_tokens)),
    h("td", {}, num(r.cached_input_tokens)), h("td", {}, num(r.tool_calls)),
    h("td", {}, money(r.estimated_cost))));
  const month = await get("/v1/usage/limits").catch(() => null);
  const t = found.total;
  const table = found.rows.length
    ? h("table", {}, h("caption", { class: "visually-hidden" }, "Usage per day, agent and model"),
      h("thead", {}, h("tr", {}, heads.map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, rows),
      h("tfoot", {}, h("tr", {}, h("th", { scope: "row", colspan: "3" }, "In all"),
        h("td", {}, num(t.steps)), h("td", {}, num(t.model_calls)), h("td", {}, num(t.prompt_tokens)),
        h("td", {}, num(t.completion_tokens)), h("td", {}, num(t.cached_input_tokens)),
        h("td", {}, num(t.tool_calls)), h("td", {}, money(t.estimated_cost)))))
    : h("p", { class: "muted" }, "Nothing used in these days.");
  show("Usage", h("p", { class: "muted" }, `Your organization's steps and tokens, ${found.start_date} to ${found.end_date} (UTC); costs are estimates from the server's price table.`),
    month ? limitsOf(month, num, money) : null,
    form, table,
    found.unpriced_models.length ? h("p", { class: "muted" }, `No price for: ${found.unpriced_models.join(", ")}.`) : null);
}

// This month against the organization's budgets and limits (set by the operator).
function limitsOf(found, num, money) {
  const l = found.limits, m = found.month;
  const of = (used, limit, shown) => (limit ? `${shown(used)} of ${shown(limit)}` : `${shown(used)} (no budget)`);
  const items = [
    ["Tokens this month", of(m.tokens, l.monthly_tokens, num)],
    ["Estimated cost this month", of(m.estimated_cost, l.monthly_cost_usd, money)],
    ["Requests a minute, per API key", l.requests_per_minute ? num(l.requests_per_minute) : "no limit"],
    ["Agents running at once", l.max_runs ? num(l.max_runs) : "the server's share"],
  ];
  return h("section", { "aria-labelledby": "month-title", class: "month" },
    h("h2", { id: "month-title" }, `This month (from ${m.start})`),
    h("dl", {}, items.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
}

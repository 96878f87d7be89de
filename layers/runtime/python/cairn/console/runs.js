// An agent's runs, and one run's steps as a timeline of model, tool and checkpoint time.

import { get } from "./api.js";
import { h, when } from "./dom.js";
import { moreButton, PAGE, tabs } from "./page.js";

export async function runsPage(show, id) {
  const asked = { agent_id: id, limit: PAGE, order: "desc" };
  const [agent, runs] = await Promise.all([
    get(`/v1/agents/${id}`, { include_relationships: [] }),
    get("/v1/runs/", asked),
  ]);
  const row = (r) => h("tr", {},
    h("td", {}, h("a", { href: `#/runs/${r.id}` }, r.id)),
    h("td", { class: `status-${r.status}` }, r.status),
    h("td", {}, r.stop_reason || ""),
    h("td", {}, when(r.created_at)),
    h("td", {}, r.total_duration_ns ? `${(r.total_duration_ns / 1e6).toFixed(0)} ms` : ""));
  const body = h("tbody", {}, runs.map(row));
  let last = runs[runs.length - 1];
  const more = moreButton("Show earlier runs", runs.length === PAGE, async () => {
    const next = await get("/v1/runs/", { ...asked, after: last.id });
    body.append(...next.map(row));
    if (next.length) last = next[next.length - 1];
    return next.length === PAGE;
  });
  show(`Runs of ${agent.name}`, tabs(agent, "runs"), runs.length
    ? h("table", {}, h("caption", { class: "visually-hidden" }, "Runs, newest first"),
      h("thead", {}, h("tr", {}, ["Run", "Status", "Stop reason", "Started", "Took"].map((t) => h("th", { scope: "col" }, t)))), body)
    : h("p", { class: "muted" }, "No runs yet."), h("p", {}, more));
}

export async function runPage(show, runId) {
  const [run, steps] = await Promise.all([get(`/v1/runs/${runId}`), get(`/v1/runs/${runId}/steps`, { order: "asc", limit: 100 })]);
  const details = await Promise.all(steps.map(async (s) => ({
    step: s,
    metrics: await get(`/v1/steps/${s.id}/metrics`).catch(() => null),
    trace: await get(`/v1/steps/${s.id}/trace`).catch(() => null),
  })));
  const longest = Math.max(1, ...details.map((d) => d.metrics?.step_ns || 0));
  const ms = (ns) => `${((ns || 0) / 1e6).toFixed(1)} ms`;
  const rows = details.map(({ step, metrics, trace }, n) => {
    const total = metrics?.step_ns || 0;
    const model = metrics?.llm_request_ns || 0;
    const tool = metrics?.tool_execution_ns || 0;
    const rest = Math.max(0, total - model - tool);
    const pct = (v) => `width: ${(100 * v) / longest}%`;
    return h("li", { class: "panel" },
      h("h3", {}, `Step ${n + 1}`, h("span", { class: "muted" }, ` · ${step.stop_reason || step.status || ""}`)),
      h("div", { class: "timeline", role: "img", "aria-label": `model ${ms(model)}, tools ${ms(tool)}, checkpoint and the rest ${ms(rest)}` },
        h("span", { class: "model", style: pct(model) }), h("span", { class: "tool", style: pct(tool) }),
        h("span", { class: "checkpoint", style: pct(rest) })),
      h("p", {}, `Model ${ms(model)} · tools ${ms(tool)} · checkpoint and the rest ${ms(rest)} · in all ${ms(total)}`),
      h("p", {}, `Tokens: ${step.prompt_tokens ?? 0} in, ${step.completion_tokens ?? 0} out`),
      trace ? h("details", {}, h("summary", {}, "The request this step sent"), h("pre", {}, JSON.stringify(trace.request_json, null, 2)))
        : h("p", { class: "muted" }, "No trace of the request (CAIRN_PROVIDER_TRACES is off)."));
  });
  const agent = await get(`/v1/agents/${run.agent_id}`, { include_relationships: [] }).catch(() => null);
  show(`Run ${run.id}`,
    agent ? tabs(agent, "runs") : null,
    h("p", {}, h("span", { class: `status-${run.status}` }, run.status), run.stop_reason ? ` · stopped: ${run.stop_reason}` : "",
      ` · started ${when(run.created_at)}`, run.total_duration_ns ? ` · took ${ms(run.total_duration_ns)}` : ""),
    run.metadata?.error ? h("pre", { class: "error" }, JSON.stringify(run.metadata.error, null, 2)) : null,
    h("p", {}, h("span", { class: "swatch k-core_memory", "aria-hidden": "true" }), "model ",
      h("span", { class: "swatch k-tools", "aria-hidden": "true" }), "tools ",
      h("span", { class: "swatch", style: "background: var(--muted)", "aria-hidden": "true" }), "checkpoint and the rest"),
    h("ol", { class: "messages", "aria-label": "Steps" }, rows));
}

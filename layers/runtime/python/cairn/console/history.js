// An agent's versions: what each changed, its diff, rewind and fork (docs/history.md).

import { call, get } from "./api.js";
import { announce, h, when } from "./dom.js";
import { moreButton, shell, tabs } from "./page.js";

const KINDS = { create: "Created", step: "Step", update: "Changed", rewind: "Rewound", fork: "Forked", start: "History starts" };

// Versions a page (the API gives at most 100 a call).
const VERSIONS = 50;

export async function historyPage(show, id) {
  const pageOf = (before) => get(`/v1/agents/${id}/history`, { limit: VERSIONS + 1, before });
  const [agent, versions] = await Promise.all([
    get(`/v1/agents/${id}`, { include_relationships: [] }),
    pageOf(),
  ]);
  const list = h("ol", { class: "messages", "aria-label": "Versions" });
  // Each page read one longer than it shows: its last version's changes are against the
  // version before it, the next page's first.
  let shown = [];
  const draw = (page) => {
    shown = page.slice(0, VERSIONS);
    list.append(...shown.map((v, n) => historyRow(agent, v, page[n + 1])));
    return page.length > VERSIONS;
  };
  const more = moreButton("Show earlier versions", draw(versions), async () => draw(await pageOf(shown[shown.length - 1].version)));
  show(`History of ${agent.name}`, tabs(agent, "history"),
    h("p", { class: "muted" }, "Every version the agent went through, newest first. "
      + "Rewinding keeps every message (they are marked, not deleted) and is itself a version you can rewind."),
    versions.length ? list : h("p", { class: "muted" }, "No history yet."), h("p", {}, more));
}

function historyRow(agent, v, previous) {
  const c = v.changes || {};
  const said = [
    ...(c.blocks || []).map((b) => b.to_version === null ? `${b.label} detached`
      : b.from_version === null ? `${b.label} attached` : `${b.label} edited`),
    c.messages_added?.length ? `${c.messages_added.length} message(s) added` : null,
    c.messages_evicted?.length ? `${c.messages_evicted.length} message(s) evicted` : null,
    c.passages_inserted?.length ? `${c.passages_inserted.length} passage(s) archived` : null,
    c.tools_attached?.length ? `${c.tools_attached.length} tool(s) attached` : null,
    c.tools_detached?.length ? `${c.tools_detached.length} tool(s) detached` : null,
    c.config?.length ? `settings: ${c.config.join(", ")}` : null,
    v.detail?.rewound_to ? `back to version ${v.detail.rewound_to}` : null,
    v.detail?.forked_from ? `from ${v.detail.forked_from.agent_id} at version ${v.detail.forked_from.version}` : null,
  ].filter(Boolean);
  const changes = h("div", { "aria-live": "polite" });
  const showChanges = previous ? h("button", { type: "button", class: "secondary",
    "aria-label": `Show the changes of version ${v.version}`,
    onclick: async () => {
      const diff = await get(`/v1/agents/${agent.id}/history/${v.version}/diff`, { against: previous.version });
      changes.replaceChildren(diffView(diff));
    } }, "Show changes") : null;
  const rewind = h("button", { type: "button", "aria-label": `Rewind to version ${v.version}`,
    onclick: async () => {
      if (!confirm(`Rewind ${agent.name} to version ${v.version}? Its memory returns to that point; you can rewind again to undo.`)) return;
      try {
        const done = await call("POST", `/v1/agents/${agent.id}/rewind`, { version: v.version });
        announce(`Rewound to version ${v.version}: now version ${done.version}`);
        shell.render();
      } catch (err) {
        changes.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
      }
    } }, "Rewind to here");
  const fork = h("button", { type: "button", class: "secondary", "aria-label": `Fork from version ${v.version}`,
    onclick: async () => {
      try {
        const made = await call("POST", `/v1/agents/${agent.id}/fork`, { version: v.version });
        announce(`Forked ${made.name}`);
        location.hash = `#/agents/${made.id}`;
      } catch (err) {
        changes.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
      }
    } }, "Fork from here");
  return h("li", { class: "panel version" },
    h("h2", {}, `Version ${v.version}`, h("span", { class: "muted" }, ` · ${KINDS[v.kind] || v.kind} · ${when(v.created_at)}`)),
    h("p", {}, said.length ? said.join(" · ") : "No change to memory."),
    v.run_id ? h("p", { class: "muted" }, h("a", { href: `#/runs/${v.run_id}` }, `Run ${v.run_id}`)) : null,
    h("div", { class: "row" }, showChanges, rewind, fork), changes);
}

function diffView(diff) {
  const parts = [];
  for (const b of diff.blocks) {
    parts.push(h("h3", {}, `Block “${b.label}”`), h("pre", { class: "diff" }, diffLines(b.diff)));
  }
  if (diff.system_prompt) parts.push(h("details", {}, h("summary", {}, "The system prompt's changes"), h("pre", { class: "diff" }, diffLines(diff.system_prompt))));
  if (diff.messages_added.length || diff.messages_evicted.length) {
    parts.push(h("p", {}, `Context window: ${diff.messages_added.length} added, ${diff.messages_evicted.length} evicted.`));
  }
  if (diff.config && Object.keys(diff.config).length) parts.push(h("p", {}, `Settings changed: ${Object.keys(diff.config).join(", ")}`));
  return parts.length ? h("div", { class: "panel" }, parts) : h("p", { class: "muted" }, "Nothing changed.");
}

function diffLines(text) {
  return text.split("\n").map((line) => h("span", {
    class: line.startsWith("+") && !line.startsWith("+++") ? "added"
      : line.startsWith("-") && !line.startsWith("---") ? "removed" : null,
  }, `${line}\n`));
}

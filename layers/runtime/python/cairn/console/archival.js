// Archival memory: search the passages, add one with tags, delete one.

import { call, get } from "./api.js";
import { announce, field, h, submitting, when } from "./dom.js";
import { moreButton, PAGE } from "./page.js";

export function archivalSection(agent) {
  const q = h("input", { type: "search" });
  const results = h("div", { "aria-live": "polite" });
  const remove = async (p) => {
    if (!confirm("Delete this passage from the agent's archival memory?")) return;
    await call("DELETE", `/v1/agents/${agent.id}/archival-memory/${p.id}`);
    announce("Passage deleted");
    await load();
  };
  const item = (p) => h("li", {}, h("div", { class: "content" }, p.text),
    h("div", { class: "muted" }, [when(p.created_at), (p.tags || []).join(", ")].filter(Boolean).join(" · ")),
    h("button", { type: "button", class: "link", "aria-label": `Delete the passage “${p.text.slice(0, 40)}”`, onclick: () => remove(p) }, "Delete"));
  const load = async () => {
    const path = `/v1/agents/${agent.id}/archival-memory`;
    const found = await get(path, { search: q.value, limit: PAGE });
    if (!found.length) {
      results.replaceChildren(h("p", { class: "muted" }, q.value ? "No passage matches." : "No passages yet."));
      return;
    }
    const list = h("ol", { class: "messages passages" }, found.map(item));
    // A search answers the closest passages; the whole list pages on, oldest first.
    let last = found[found.length - 1];
    const more = q.value ? null : moreButton("Show more passages", found.length === PAGE, async () => {
      const next = await get(path, { limit: PAGE, after: last.id });
      list.append(...next.map(item));
      if (next.length) last = next[next.length - 1];
      return next.length === PAGE;
    });
    results.replaceChildren(list, more);
  };
  const form = h("form", { role: "search", onsubmit: (e) => { e.preventDefault(); load(); } },
    h("div", { class: "row" }, field("Search passages", q), h("div", {}, h("button", { type: "submit" }, "Search"))));
  const text = h("textarea", { rows: 3, required: true });
  const tags = h("input", { type: "text" });
  const { problem, onsubmit } = submitting(async () => {
    await call("POST", `/v1/agents/${agent.id}/archival-memory`, {
      text: text.value, tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean),
    });
    text.value = "";
    tags.value = "";
    announce("Passage added");
    await load();
  });
  const add = h("form", { onsubmit }, field("New passage", text), field("Its tags (comma-separated)", tags), problem,
  h("button", { type: "submit" }, "Add passage"));
  load().catch((err) => results.replaceChildren(h("p", { class: "error" }, err.message)));
  return h("section", { "aria-labelledby": "archival" }, h("h2", { id: "archival" }, "Archival memory"), form, results,
    h("details", { class: "panel" }, h("summary", {}, "Add a passage"), add));
}

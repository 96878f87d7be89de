// The agents page: a search kept in the page's address, paged to the end; create one,
// delete one, import an agent file.

import { call, get, upload } from "./api.js";
import { announce, field, h, submitting, when } from "./dom.js";
import { moreButton, PAGE, shell } from "./page.js";

export async function agentsPage(show) {
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const name = h("input", { type: "search", value: params.get("name") || "" });
  const tag = h("input", { type: "text", value: params.get("tag") || "" });
  const asked = { query_text: name.value, tags: tag.value || undefined, include_relationships: [] };
  const agents = await get("/v1/agents/", { ...asked, limit: PAGE });
  const search = h("form", { role: "search", onsubmit: (e) => {
    e.preventDefault();
    // The search is the page's address (it survives a reload, and a link names it); the
    // page reads it back from there. The same search again draws the page again.
    const asked = new URLSearchParams();
    if (name.value) asked.set("name", name.value);
    if (tag.value) asked.set("tag", tag.value);
    const hash = asked.toString() ? `#/?${asked}` : "#/";
    if (location.hash === hash) shell.render();
    else location.hash = hash;
  } }, h("div", { class: "row" }, field("Name contains", name), field("Tag", tag),
    h("div", {}, h("button", { type: "submit" }, "Search"))));
  const row = (a) => h("tr", {},
    h("td", {}, h("a", { href: `#/agents/${a.id}` }, a.name)),
    h("td", {}, a.model || a.llm_config?.model || ""),
    h("td", {}, (a.tags || []).join(", ")),
    h("td", {}, when(a.created_at)),
    h("td", {}, h("button", {
      type: "button", class: "danger", "aria-label": `Delete ${a.name}`,
      onclick: async () => {
        if (!confirm(`Delete the agent ${a.name}? Its memories go with it.`)) return;
        await call("DELETE", `/v1/agents/${a.id}`);
        announce(`Deleted ${a.name}`);
        shell.render();
      },
    }, "Delete")));
  const body = h("tbody", {}, agents.map(row));
  let last = agents[agents.length - 1];
  const more = moreButton("Show more agents", agents.length === PAGE, async () => {
    const next = await get("/v1/agents/", { ...asked, limit: PAGE, after: last.id });
    body.append(...next.map(row));
    if (next.length) last = next[next.length - 1];
    return next.length === PAGE;
  });
  const table = agents.length
    ? h("table", {}, h("caption", { class: "visually-hidden" }, "Agents"),
      h("thead", {}, h("tr", {}, ["Name", "Model", "Tags", "Created", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
      body)
    : h("p", { class: "muted" }, "No agents match.");
  show("Agents", search, table, h("p", {}, more), await createForm(), importForm());
}

async function createForm() {
  const models = await get("/v1/models/").catch(() => []);
  const list = h("datalist", { id: "models" }, models.map((m) => h("option", { value: m.handle })));
  const name = h("input", { type: "text", required: true });
  const model = h("input", { type: "text", list: "models", required: true,
    value: models[0]?.handle || "" });
  const persona = h("textarea", {}, "I am a helpful assistant.");
  const human = h("textarea", {});
  const { problem, onsubmit } = submitting(async () => {
    const made = await call("POST", "/v1/agents/", {
      name: name.value.trim(), model: model.value.trim(),
      memory_blocks: [{ label: "persona", value: persona.value }, { label: "human", value: human.value }],
    });
    announce(`Created ${made.name}`);
    location.hash = `#/agents/${made.id}`;
  });
  const form = h("form", { onsubmit }, h("fieldset", {}, h("legend", {}, "New agent"), list,
    h("div", { class: "row" }, field("Name", name), field("Model", model)),
    field("Persona", persona), field("Human", human), problem,
    h("p", {}, h("button", { type: "submit" }, "Create agent"))));
  return h("section", { "aria-labelledby": "new-agent" }, h("h2", { id: "new-agent" }, "Create an agent"), form);
}

// An agent file (.af, Letta's format) made into a new agent.
function importForm() {
  const file = h("input", { type: "file", accept: ".af,.json,application/json", required: true });
  const { problem, onsubmit } = submitting(async () => {
    if (!file.files[0]) return;
    const made = await upload("/v1/agents/import", file.files[0]);
    const ids = made.agent_ids || [];
    announce(`Imported ${ids.length} agent${ids.length === 1 ? "" : "s"}`);
    location.hash = ids.length === 1 ? `#/agents/${ids[0]}` : "#/";
  });
  const form = h("form", { onsubmit }, field("Agent file", file), problem, h("p", {}, h("button", { type: "submit" }, "Import")));
  return h("section", { "aria-labelledby": "import-agent" }, h("h2", { id: "import-agent" }, "Import an agent file"), form);
}

// Cairn's console: one page per hash route, each drawn from the API with the key of this
// tab's session. Pages: agents, one agent (memory, context window, archival, tools,
// relations), its chat, its runs, one run's steps.

import { ApiError, call, get, session, stream, upload } from "./api.js";
import { announce, field, h, when } from "./dom.js";
import { MessageList } from "./messages.js";

const view = document.getElementById("view");
const signOut = document.getElementById("sign-out");

const routes = [
  [/^#?\/?(\?.*)?$/, "agents", agentsPage],
  [/^#\/agents\/([\w-]+)$/, "agent", agentPage],
  [/^#\/agents\/([\w-]+)\/chat$/, "chat", chatPage],
  [/^#\/agents\/([\w-]+)\/runs$/, "runs", runsPage],
  [/^#\/agents\/([\w-]+)\/history$/, "history", historyPage],
  [/^#\/runs\/([\w-]+)$/, "run", runPage],
  [/^#\/usage(\?.*)?$/, "usage", usagePage],
];

let current = 0; // the latest render: an older one still loading must not draw over it
// How many of a list one page shows; more come a page at a time.
const PAGE = 100;
// What runs when a chat's turn ends (the workspace's memory pane draws itself again).
let afterTurn = null;
// After a change made on the page: the workspace's memory pane, or the whole page, again.
const redraw = () => (afterTurn ? afterTurn() : render());

async function render() {
  const mine = ++current;
  const started = performance.now();
  delete document.body.dataset.page;
  view.classList.remove("wide");
  afterTurn = null;
  signOut.hidden = !session.key;
  if (!session.key) {
    signIn();
    return;
  }
  const found = routes.map(([re, name, page]) => [location.hash.match(re), name, page])
    .find(([m]) => m);
  if (!found) {
    show("Not found", h("p", {}, "No such page. ", h("a", { href: "#/" }, "Back to the agents")));
    return;
  }
  const [match, name, page] = found;
  const draw = (title, ...content) => { if (mine === current) show(title, ...content); };
  try {
    await page(draw, ...match.slice(1));
  } catch (err) {
    if (mine !== current) return;
    if (err instanceof ApiError && err.status === 401) {
      session.key = null;
      signIn("The key was refused. Sign in again.");
      return;
    }
    show("Something went wrong", h("p", { class: "error", role: "alert" }, String(err.message || err)));
  }
  if (mine !== current) return;
  // The time from the route's start to its page drawn, read by the browser tests.
  document.body.dataset.renderMs = (performance.now() - started).toFixed(1);
  document.body.dataset.page = name;
}

function show(title, ...content) {
  const heading = h("h1", { tabindex: "-1" }, title);
  view.replaceChildren(heading, ...content.filter((c) => c !== null && c !== undefined && c !== false));
  document.title = `${title} · Cairn console`;
  heading.focus();
}

function signIn(problem) {
  const key = h("input", { type: "password", autocomplete: "current-password", required: true });
  const form = h("form", {
    onsubmit: async (e) => {
      e.preventDefault();
      session.key = key.value.trim();
      try {
        await get("/v1/agents/", { limit: 1 });
        location.hash = location.hash || "#/";
        render();
      } catch (err) {
        session.key = null;
        signIn(err instanceof ApiError && err.status === 401 ? "That key was refused." : String(err.message));
      }
    },
  },
  field("API key", key, h("p", { class: "muted" },
    "Kept in this tab only: it is gone when the tab closes.")),
  h("p", {}, h("button", { type: "submit" }, "Sign in")));
  show("Sign in", problem ? h("p", { class: "error", role: "alert" }, problem) : null, form);
  document.body.dataset.page = "sign-in";
}

signOut.addEventListener("click", () => {
  session.key = null;
  location.hash = "#/";
  render();
});

// -- agents -------------------------------------------------------------------------------

async function agentsPage(show) {
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
    if (location.hash === hash) render();
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
        render();
      },
    }, "Delete")));
  const body = h("tbody", {}, agents.map(row));
  // Lists go to their end a page at a time (the API's cursor: after the last one shown).
  let last = agents[agents.length - 1];
  const more = h("button", { type: "button", class: "secondary", hidden: agents.length < PAGE || null, onclick: async () => {
    const next = await get("/v1/agents/", { ...asked, limit: PAGE, after: last.id });
    body.append(...next.map(row));
    if (next.length) last = next[next.length - 1];
    more.hidden = next.length < PAGE;
    announce(`${next.length} more agents`);
  } }, "Show more agents");
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
  const problem = h("p", { class: "error", role: "alert" });
  const form = h("form", { onsubmit: async (e) => {
    e.preventDefault();
    problem.textContent = "";
    try {
      const made = await call("POST", "/v1/agents/", {
        name: name.value.trim(), model: model.value.trim(),
        memory_blocks: [{ label: "persona", value: persona.value }, { label: "human", value: human.value }],
      });
      announce(`Created ${made.name}`);
      location.hash = `#/agents/${made.id}`;
    } catch (err) {
      problem.textContent = err.message;
    }
  } }, h("fieldset", {}, h("legend", {}, "New agent"), list,
    h("div", { class: "row" }, field("Name", name), field("Model", model)),
    field("Persona", persona), field("Human", human), problem,
    h("p", {}, h("button", { type: "submit" }, "Create agent"))));
  return h("section", { "aria-labelledby": "new-agent" }, h("h2", { id: "new-agent" }, "Create an agent"), form);
}

// An agent file (.af, Letta's format) made into a new agent.
function importForm() {
  const file = h("input", { type: "file", accept: ".af,.json,application/json", required: true });
  const problem = h("p", { class: "error", role: "alert" });
  const form = h("form", { onsubmit: async (e) => {
    e.preventDefault();
    problem.textContent = "";
    if (!file.files[0]) return;
    const body = new FormData();
    body.append("file", file.files[0]);
    try {
      const made = await upload("/v1/agents/import", body);
      const ids = made.agent_ids || [];
      announce(`Imported ${ids.length} agent${ids.length === 1 ? "" : "s"}`);
      location.hash = ids.length === 1 ? `#/agents/${ids[0]}` : "#/";
    } catch (err) {
      problem.textContent = err.message;
    }
  } }, field("Agent file", file), problem, h("p", {}, h("button", { type: "submit" }, "Import")));
  return h("section", { "aria-labelledby": "import-agent" }, h("h2", { id: "import-agent" }, "Import an agent file"), form);
}

function tabs(agent, current) {
  const link = (href, text, name) => h("a", { href, "aria-current": current === name ? "page" : null }, text);
  return h("nav", { class: "tabs", "aria-label": "Agent" },
    link(`#/agents/${agent.id}`, "Overview", "agent"),
    link(`#/agents/${agent.id}/chat`, "Chat", "chat"),
    link(`#/agents/${agent.id}/runs`, "Runs", "runs"),
    link(`#/agents/${agent.id}/history`, "History", "history"));
}

// -- one agent ----------------------------------------------------------------------------

async function agentPage(show, id) {
  const [agent, context] = await Promise.all([get(`/v1/agents/${id}`), get(`/v1/agents/${id}/context`)]);
  show(agent.name, tabs(agent, "agent"),
    h("p", { class: "muted" }, `${agent.model || agent.llm_config?.model} · ${agent.agent_type} · ${agent.id}`),
    agent.description ? h("p", {}, agent.description) : null,
    agentActions(agent),
    memorySection(agent), contextSection(context), archivalSection(agent),
    toolsSection(agent), schedulesSection(agent), relationsSection(agent));
}

// Export the agent as a file (Letta's agent file), and empty its conversation.
function agentActions(agent) {
  const saved = h("p", { role: "status" });
  const exportIt = async () => {
    const file = await get(`/v1/agents/${agent.id}/export`);
    const link = h("a", { download: `${agent.name}.af`, class: "download",
      href: URL.createObjectURL(new Blob([JSON.stringify(file)], { type: "application/json" })) },
    `Download ${agent.name}.af`);
    saved.replaceChildren(link);
    link.click();
    announce(`Exported ${agent.name}`);
  };
  const reset = async () => {
    if (!confirm(`Reset ${agent.name}'s messages? Its conversation leaves the context window; its memory stays.`)) return;
    await call("PATCH", `/v1/agents/${agent.id}/reset-messages`, {});
    announce("Messages reset");
    render();
  };
  return h("div", { class: "row actions" },
    h("div", {}, h("button", { type: "button", class: "secondary", onclick: exportIt }, "Export agent file")),
    h("div", {}, h("button", { type: "button", class: "danger", onclick: reset }, "Reset messages")), saved);
}

function memorySection(agent) {
  const blocks = (agent.memory?.blocks || agent.blocks || []).filter((b) => !b.hidden);
  return h("section", { "aria-labelledby": "core-memory" }, h("h2", { id: "core-memory" }, "Core memory"),
    blocks.length ? blocks.map((b) => blockEditor(agent.id, b)) : h("p", { class: "muted" }, "No blocks."),
    newBlockForm(agent.id));
}

// A new block, made and attached to the agent.
function newBlockForm(agentId) {
  const label = h("input", { type: "text", required: true, pattern: "[A-Za-z0-9_\\-]+" });
  const value = h("textarea", { rows: 3 });
  const limit = h("input", { type: "number", min: 1, value: 5000 });
  const description = h("input", { type: "text" });
  const readOnly = h("input", { type: "checkbox", id: `ro-new-${agentId}` });
  const problem = h("p", { class: "error", role: "alert" });
  const form = h("form", { onsubmit: async (e) => {
    e.preventDefault();
    problem.textContent = "";
    try {
      const block = await call("POST", "/v1/blocks/", {
        label: label.value.trim(), value: value.value, limit: Number(limit.value),
        description: description.value || undefined, read_only: readOnly.checked,
      });
      await call("PATCH", `/v1/agents/${agentId}/core-memory/blocks/attach/${block.id}`);
      announce(`Added ${block.label}`);
      await redraw();
    } catch (err) {
      problem.textContent = err.message;
    }
  } }, h("div", { class: "row" }, field("Label", label), field("Limit", limit)),
  field("Value", value), field("Description", description),
  h("div", { class: "check" }, readOnly, h("label", { for: readOnly.id }, "Read-only for the agent")),
  problem, h("button", { type: "submit" }, "Add block"));
  return h("details", { class: "panel" }, h("summary", {}, "Add a block"), form);
}

function blockEditor(agentId, block) {
  let loaded = block.value;
  const text = h("textarea", { rows: Math.min(12, Math.max(3, loaded.split("\n").length + 1)),
    "aria-describedby": `count-${block.id}` }, loaded);
  text.value = loaded;
  const counter = h("p", { id: `count-${block.id}`, class: "counter", "aria-live": "polite" });
  const note = h("div", { role: "status" });
  const count = () => {
    counter.textContent = `${text.value.length} of ${block.limit} characters`;
    counter.classList.toggle("over", text.value.length > block.limit);
  };
  text.addEventListener("input", count);
  count();
  const path = `/v1/agents/${agentId}/core-memory/blocks/${encodeURIComponent(block.label)}`;
  const save = async (force) => {
    note.replaceChildren();
    const now = await get(path);
    if (!force && now.value !== loaded) { // someone else edited it since this page read it
      note.replaceChildren(h("div", { class: "panel conflict", role: "alert" },
        h("p", {}, h("strong", {}, "Someone else changed this block after you opened it."),
          " Their version:"), h("pre", {}, now.value),
        h("div", { class: "row" },
          h("button", { type: "button", class: "secondary", onclick: () => {
            loaded = now.value;
            text.value = now.value;
            count();
            note.replaceChildren(h("p", {}, "Showing their version."));
          } }, "Take theirs"),
          h("button", { type: "button", onclick: () => save(true) }, "Save mine over theirs"))));
      return;
    }
    try {
      const saved = await call("PATCH", path, { value: text.value });
      loaded = saved.value;
      note.replaceChildren(h("p", { class: "muted" }, `Saved at ${new Date().toLocaleTimeString()}.`));
      announce(`Saved ${block.label}`);
    } catch (err) {
      note.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
    }
  };
  const detach = async () => {
    if (!confirm(`Detach the block ${block.label} from this agent? The block itself is kept.`)) return;
    await call("PATCH", `/v1/agents/${agentId}/core-memory/blocks/detach/${block.id}`);
    announce(`Detached ${block.label}`);
    await redraw();
  };
  const form = h("form", { class: "panel", onsubmit: (e) => { e.preventDefault(); save(false); } },
    field(`Block “${block.label}”`, text, counter),
    block.description ? h("p", { class: "muted" }, block.description) : null,
    h("div", { class: "row" },
      h("div", {}, h("button", { type: "submit", disabled: block.read_only || null }, block.read_only ? "Read-only" : `Save ${block.label}`)),
      h("div", {}, h("button", { type: "button", class: "secondary", "aria-label": `Detach ${block.label}`, onclick: detach }, "Detach"))),
    blockSettings(block), note);
  return form;
}

// A block's label, limit, description and read-only flag (PATCH /v1/blocks/{id}).
function blockSettings(block) {
  const label = h("input", { type: "text", value: block.label });
  const limit = h("input", { type: "number", min: 1, value: block.limit });
  const description = h("input", { type: "text", value: block.description || "" });
  const readOnly = h("input", { type: "checkbox", id: `ro-${block.id}` });
  readOnly.checked = Boolean(block.read_only);
  const note = h("p", { role: "status" });
  const save = async () => {
    try {
      await call("PATCH", `/v1/blocks/${block.id}`, {
        label: label.value.trim(), limit: Number(limit.value), description: description.value,
        read_only: readOnly.checked,
      });
      announce(`Saved ${label.value}'s settings`);
      await redraw();
    } catch (err) {
      note.replaceChildren(h("span", { class: "error" }, err.message));
    }
  };
  return h("details", {}, h("summary", {}, `Settings of ${block.label}`),
    h("div", { class: "row" }, field(`Label of ${block.label}`, label), field(`Limit of ${block.label}`, limit)),
    field(`Description of ${block.label}`, description),
    h("div", { class: "check" }, readOnly, h("label", { for: readOnly.id }, "Read-only for the agent")),
    h("button", { type: "button", onclick: save }, `Save ${block.label}'s settings`), note);
}

const PARTS = [
  ["system", "System", "num_tokens_system"],
  ["core_memory", "Core memory", "num_tokens_core_memory"],
  ["tools", "Tools", "num_tokens_functions_definitions"],
  ["messages", "Messages", "num_tokens_messages"],
  ["summary", "Summary", "num_tokens_summary_memory"],
];

function contextSection(context) {
  const max = context.context_window_size_max || 1;
  const used = PARTS.reduce((n, [, , key]) => n + (context[key] || 0), 0);
  const bar = h("div", { class: "bar", role: "img",
    "aria-label": `${used} of ${max} tokens: ${PARTS.map(([, label, key]) => `${label} ${context[key] || 0}`).join(", ")}` },
  PARTS.map(([kind, label, key]) => h("span", { class: `k-${kind}`, title: `${label}: ${context[key] || 0} tokens`,
    style: `width: ${Math.min(100, (100 * (context[key] || 0)) / max)}%` })));
  const legend = h("table", {}, h("caption", { class: "visually-hidden" }, "Tokens by part"),
    h("tbody", {}, PARTS.map(([kind, label, key]) => h("tr", {},
      h("th", { scope: "row" }, h("span", { class: `swatch k-${kind}`, "aria-hidden": "true" }), label),
      h("td", {}, `${context[key] || 0} tokens`))),
    h("tr", {}, h("th", { scope: "row" }, "In all"), h("td", {}, `${used} of ${max} tokens`))));
  const messages = context.messages || [];
  const system = messages.length && messages[0].role === "system" ? textOf(messages[0]) : context.system_prompt;
  const list = new MessageList(messages.slice(messages[0]?.role === "system" ? 1 : 0), { raw: true });
  return h("section", { "aria-labelledby": "context" }, h("h2", { id: "context" }, "Context window"),
    bar, legend,
    h("details", {}, h("summary", {}, "The system message as the model sees it"), h("pre", {}, system)),
    h("h3", {}, `In-context messages (${messages.length})`), list.element);
}

function textOf(message) {
  const c = message.content;
  if (typeof c === "string") return c;
  return (c || []).map((p) => p.text || "").join("\n");
}

function archivalSection(agent) {
  const q = h("input", { type: "search" });
  const results = h("div", { "aria-live": "polite" });
  const remove = async (p) => {
    if (!confirm("Delete this passage from the agent's archival memory?")) return;
    await call("DELETE", `/v1/agents/${agent.id}/archival-memory/${p.id}`);
    announce("Passage deleted");
    await load();
  };
  const load = async () => {
    const found = await get(`/v1/agents/${agent.id}/archival-memory`, { search: q.value, limit: 50 });
    results.replaceChildren(found.length
      ? h("ol", { class: "messages passages" }, found.map((p) => h("li", {}, h("div", { class: "content" }, p.text),
        h("div", { class: "muted" }, [when(p.created_at), (p.tags || []).join(", ")].filter(Boolean).join(" · ")),
        h("button", { type: "button", class: "link", "aria-label": `Delete the passage “${p.text.slice(0, 40)}”`, onclick: () => remove(p) }, "Delete"))))
      : h("p", { class: "muted" }, q.value ? "No passage matches." : "No passages yet."));
  };
  const form = h("form", { role: "search", onsubmit: (e) => { e.preventDefault(); load(); } },
    h("div", { class: "row" }, field("Search passages", q), h("div", {}, h("button", { type: "submit" }, "Search"))));
  const text = h("textarea", { rows: 3, required: true });
  const tags = h("input", { type: "text" });
  const problem = h("p", { class: "error", role: "alert" });
  const add = h("form", { onsubmit: async (e) => {
    e.preventDefault();
    problem.textContent = "";
    try {
      await call("POST", `/v1/agents/${agent.id}/archival-memory`, {
        text: text.value, tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean),
      });
      text.value = "";
      tags.value = "";
      announce("Passage added");
      await load();
    } catch (err) {
      problem.textContent = err.message;
    }
  } }, field("New passage", text), field("Its tags (comma-separated)", tags), problem,
  h("button", { type: "submit" }, "Add passage"));
  load().catch((err) => results.replaceChildren(h("p", { class: "error" }, err.message)));
  return h("section", { "aria-labelledby": "archival" }, h("h2", { id: "archival" }, "Archival memory"), form, results,
    h("details", { class: "panel" }, h("summary", {}, "Add a passage"), add));
}

function toolsSection(agent) {
  const tools = agent.tools || [];
  const rules = agent.tool_rules || [];
  const detach = async (t) => {
    await call("PATCH", `/v1/agents/${agent.id}/tools/detach/${t.id}`);
    announce(`Detached ${t.name}`);
    await redraw();
  };
  return h("section", { "aria-labelledby": "tools" }, h("h2", { id: "tools" }, `Tools (${tools.length})`),
    h("table", {}, h("thead", {}, h("tr", {}, ["Name", "Type", "Description", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, tools.map((t) => h("tr", {}, h("td", {}, t.name), h("td", {}, t.tool_type || ""),
        h("td", {}, (t.description || "").split("\n")[0]),
        h("td", {}, h("button", { type: "button", class: "secondary", "aria-label": `Detach ${t.name}`, onclick: () => detach(t) }, "Detach")))))),
    attachTool(agent, tools), toolEditor(agent),
    h("h3", {}, `Tool rules (${rules.length})`),
    rules.length ? h("ul", {}, rules.map((r) => h("li", {}, `${r.type}: ${r.tool_name}`,
      r.children ? ` → ${r.children.join(", ")}` : ""))) : h("p", { class: "muted" }, "None."));
}

// One of the organization's tools, attached (those the agent has are left out).
function attachTool(agent, attached) {
  const have = new Set(attached.map((t) => t.id));
  const choice = h("select", {}, h("option", { value: "" }, "Loading…"));
  get("/v1/tools/", { limit: 500 }).then((all) => choice.replaceChildren(
    h("option", { value: "" }, "Choose a tool"),
    ...all.filter((t) => !have.has(t.id)).map((t) => h("option", { value: t.id }, t.name)),
  )).catch(() => choice.replaceChildren(h("option", { value: "" }, "No tools")));
  const form = h("form", { onsubmit: async (e) => {
    e.preventDefault();
    if (!choice.value) return;
    await call("PATCH", `/v1/agents/${agent.id}/tools/attach/${choice.value}`);
    announce("Tool attached");
    await redraw();
  } }, h("div", { class: "row" }, field("Attach a tool", choice), h("div", {}, h("button", { type: "submit" }, "Attach"))));
  return form;
}

// A tool's source: the schema it derives, a run with arguments, and made and attached.
function toolEditor(agent) {
  const source = h("textarea", { rows: 10, spellcheck: "false" });
  source.value = 'def roll_dice(sides: int) -> str:\n    """Roll a die.\n\n    Args:\n        sides: How many sides the die has.\n    """\n    import random\n    return str(random.randint(1, sides))\n';
  const args = h("textarea", { rows: 3, spellcheck: "false" });
  args.value = "{}";
  const out = h("div", { "aria-live": "polite" });
  const shown = (title, value) => out.replaceChildren(h("h4", {}, title), h("pre", {}, typeof value === "string" ? value : JSON.stringify(value, null, 2)));
  const failed = (err) => out.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
  const schema = async () => {
    try { shown("Schema", await call("POST", "/v1/tools/generate-schema", { code: source.value })); } catch (err) { failed(err); }
  };
  const run = async () => {
    let parsed;
    try { parsed = JSON.parse(args.value || "{}"); } catch { failed(new Error("Arguments: not JSON")); return; }
    try {
      const done = await call("POST", "/v1/tools/run", { source_code: source.value, args: parsed });
      shown(`Returned (${done.status})`, done.tool_return);
    } catch (err) { failed(err); }
  };
  const create = async () => {
    try {
      const tool = await call("POST", "/v1/tools/", { source_code: source.value });
      await call("PATCH", `/v1/agents/${agent.id}/tools/attach/${tool.id}`);
      announce(`Created and attached ${tool.name}`);
      await redraw();
    } catch (err) { failed(err); }
  };
  return h("details", { class: "panel" }, h("summary", {}, "Write a tool"),
    field("Source (Python)", source), field("Arguments (JSON)", args),
    h("div", { class: "row" },
      h("div", {}, h("button", { type: "button", class: "secondary", onclick: schema }, "Show schema")),
      h("div", {}, h("button", { type: "button", class: "secondary", onclick: run }, "Run")),
      h("div", {}, h("button", { type: "button", onclick: create }, "Create and attach"))),
    out);
}

// Messages sent to the agent later: once at a time, or on a cron schedule in a timezone.
function schedulesSection(agent) {
  const list = h("div", { "aria-live": "polite" });
  const load = async () => {
    const found = await get(`/v1/agents/${agent.id}/schedules`, { limit: 100 });
    list.replaceChildren(found.length
      ? h("table", {}, h("caption", { class: "visually-hidden" }, "Scheduled messages"),
        h("thead", {}, h("tr", {}, ["Message", "When", "Next", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, found.map((one) => {
          const said = (one.messages || []).map((m) => (typeof m.content === "string" ? m.content : textOf(m))).join(" ");
          const w = one.schedule;
          return h("tr", {}, h("td", {}, said),
            h("td", {}, w.type === "recurring" ? `${w.cron} (${w.timezone})` : when(w.run_at)),
            h("td", {}, when(one.next_run_at)),
            h("td", {}, h("button", { type: "button", class: "secondary", "aria-label": `Delete the schedule “${said.slice(0, 40)}”`, onclick: async () => {
              await call("DELETE", `/v1/agents/${agent.id}/schedules/${one.id}`);
              announce("Schedule deleted");
              await load();
            } }, "Delete")));
        })))
      : h("p", { class: "muted" }, "None."));
  };
  const message = h("input", { type: "text", required: true });
  const cron = h("input", { type: "text", placeholder: "0 9 * * 1-5" });
  const at = h("input", { type: "datetime-local" });
  const zone = h("input", { type: "text", value: agent.timezone || "UTC" });
  const problem = h("p", { class: "error", role: "alert" });
  const form = h("form", { onsubmit: async (e) => {
    e.preventDefault();
    problem.textContent = "";
    const asked = { input: message.value, timezone: zone.value || "UTC" };
    if (cron.value.trim()) asked.cron = cron.value.trim();
    else if (at.value) asked.run_at = new Date(at.value).toISOString();
    else { problem.textContent = "A cron expression or a time: when to send it"; return; }
    try {
      await call("POST", `/v1/agents/${agent.id}/schedules`, asked);
      message.value = "";
      cron.value = "";
      at.value = "";
      announce("Scheduled");
      await load();
    } catch (err) {
      problem.textContent = err.message;
    }
  } }, field("Message to send", message),
  h("div", { class: "row" }, field("Cron (repeats)", cron), field("Or once, at", at), field("Timezone", zone)),
  problem, h("button", { type: "submit" }, "Schedule"));
  load().catch((err) => list.replaceChildren(h("p", { class: "error" }, err.message)));
  return h("section", { "aria-labelledby": "schedules" }, h("h2", { id: "schedules" }, "Scheduled messages"), list,
    h("details", { class: "panel" }, h("summary", {}, "Schedule a message"), form));
}

// A new identity (a user, an organization...) the agent is tied to.
function identityForm(agent) {
  const key = h("input", { type: "text", required: true });
  const name = h("input", { type: "text", required: true });
  const kind = h("select", {}, ["user", "org", "other"].map((k) => h("option", { value: k }, k)));
  const problem = h("p", { class: "error", role: "alert" });
  const form = h("form", { onsubmit: async (e) => {
    e.preventDefault();
    problem.textContent = "";
    try {
      await call("POST", "/v1/identities/", {
        identifier_key: key.value.trim(), name: name.value.trim(), identity_type: kind.value,
        agent_ids: [agent.id],
      });
      announce(`Added ${name.value}`);
      await redraw();
    } catch (err) {
      problem.textContent = err.message;
    }
  } }, h("div", { class: "row" }, field("Identifier key", key), field("Identity name", name), field("Kind", kind)),
  problem, h("button", { type: "submit" }, "Add identity"));
  return h("details", { class: "panel" }, h("summary", {}, "Add an identity"), form);
}

function relationsSection(agent) {
  const identities = agent.identities || [];
  const groups = h("div", { "aria-live": "polite" }, h("p", { class: "muted" }, "Loading…"));
  // After the page is drawn: the groups are the least looked-at part.
  get(`/v1/agents/${agent.id}/groups`).then((found) => groups.replaceChildren(found.length
    ? h("ul", {}, found.map((g) => h("li", {}, `${g.description || g.id} · ${g.manager_type}`)))
    : h("p", { class: "muted" }, "None."))).catch((err) => groups.replaceChildren(h("p", { class: "error" }, err.message)));
  return h("section", { "aria-labelledby": "relations" }, h("h2", { id: "relations" }, "Identities and groups"),
    h("h3", {}, "Identities"),
    identities.length ? h("ul", {}, identities.map((i) => h("li", {}, `${i.name} (${i.identifier_key}) `,
      h("button", { type: "button", class: "link", "aria-label": `Untie ${i.name}`, onclick: async () => {
        await call("PATCH", `/v1/agents/${agent.id}`, { identity_ids: identities.filter((x) => x.id !== i.id).map((x) => x.id) });
        announce(`Untied ${i.name}`);
        await redraw();
      } }, "Untie"))))
      : h("p", { class: "muted" }, "None."),
    identityForm(agent),
    h("h3", {}, "Groups"), groups);
}

// -- chat ---------------------------------------------------------------------------------

async function chatPage(show, id) {
  const [agent, history] = await Promise.all([
    get(`/v1/agents/${id}`, { include_relationships: [] }),
    get(`/v1/agents/${id}/messages`, { limit: PAGE, order: "desc" }),
  ]);
  // The newest page, which the API (as Letta's) lists oldest first already. The system
  // message is the overview's to show (the context window): not a chat turn.
  const turns = history.filter((m) => m.message_type !== "system_message");
  const log = new MessageList(turns, { onApprove: (call, approve) => answer(call, approve) });
  let first = history[0];
  const earlier = h("button", { type: "button", class: "secondary", hidden: history.length < PAGE || null, onclick: async () => {
    const page = await get(`/v1/agents/${id}/messages`, { limit: PAGE, order: "desc", before: first.id });
    log.prepend(page.filter((m) => m.message_type !== "system_message"));
    if (page.length) first = page[0];
    earlier.hidden = page.length < PAGE;
    announce(`${page.length} earlier messages`);
  } }, "Show earlier messages");
  const state = h("p", { class: "muted", role: "status", "aria-live": "polite" });
  const text = h("textarea", { rows: 3 });
  const image = h("input", { type: "file", accept: "image/png,image/jpeg,image/gif,image/webp" });
  const send = h("button", { type: "submit" }, "Send");

  async function run(body) {
    send.disabled = true;
    state.textContent = "The agent is thinking…";
    try {
      await stream(`/v1/agents/${id}/messages/stream`, { ...body, stream_tokens: true, include_pings: true }, (event) => {
        if (event.message_type === "stop_reason") state.textContent = `Stopped: ${event.stop_reason}`;
        else if (event.message_type === "usage_statistics") state.textContent += ` · ${event.total_tokens} tokens`;
        else if (event.message_type === "error_message" || event.error) state.textContent = `Error: ${event.message || event.detail || JSON.stringify(event.error)}`;
        else if (event.message_type && event.message_type !== "ping") log.take(event);
      });
    } catch (err) {
      state.textContent = `Error: ${err.message}`;
    } finally {
      send.disabled = false;
      log.scroll();
      if (afterTurn) await afterTurn().catch(() => {});
    }
  }

  function answer(toolCall, approve) {
    return run({ messages: [{ type: "approval", approvals: [{ type: "approval", tool_call_id: toolCall.tool_call_id, approve }] }] });
  }

  const form = h("form", { class: "composer", onsubmit: async (e) => {
    e.preventDefault();
    const words = text.value.trim();
    const file = image.files[0];
    if (!words && !file) return;
    const content = [];
    if (words) content.push({ type: "text", text: words });
    if (file) content.push({ type: "image", source: { type: "base64", media_type: file.type, data: await base64(file) } });
    log.take({ id: `local-${Date.now()}`, message_type: "user_message", content });
    text.value = "";
    image.value = "";
    await run({ messages: [{ role: "user", content }] });
  } }, field("Message", text), field("Attach an image", image), h("p", {}, send), state);
  text.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) form.requestSubmit(); });
  // The workspace: the agent's settings, the conversation and its memory side by side (one
  // column on a narrow screen, the conversation first), the memory drawn again after each
  // turn so a builder watches it change while chatting.
  const memory = h("aside", { class: "pane memory", "aria-label": "Memory" });
  const drawMemory = async () => {
    const [now, context] = await Promise.all([get(`/v1/agents/${id}`), get(`/v1/agents/${id}/context`)]);
    // The context window's use first: one line that shows how full it is, whatever the
    // blocks' length below it.
    memory.replaceChildren(contextUse(context), memorySection(now), archivalSection(now));
  };
  afterTurn = drawMemory;
  const conversation = h("section", { class: "pane conversation", "aria-label": "Conversation" }, h("p", {}, earlier), log.element, form);
  show(`Chat with ${agent.name}`, tabs(agent, "chat"),
    h("div", { class: "workspace" }, settingsPane(agent), conversation, memory));
  view.classList.add("wide");
  log.element.classList.add("chat-log");
  log.element.setAttribute("aria-label", "Messages");
  log.element.setAttribute("tabindex", "0");
  log.scroll();
  await drawMemory();
}

// The agent's settings, saved through the API as the ADE does (PATCH /v1/agents/{id}).
function settingsPane(agent) {
  const name = h("input", { type: "text", required: true, value: agent.name });
  const model = h("input", { type: "text", list: "workspace-models", value: agent.model || "" });
  const models = h("datalist", { id: "workspace-models" });
  get("/v1/models/").then((found) => models.replaceChildren(...found.map((m) => h("option", { value: m.handle })))).catch(() => {});
  const description = h("input", { type: "text", value: agent.description || "" });
  const system = h("textarea", { rows: 10 });
  system.value = agent.system || "";
  const note = h("div", { role: "status" });
  const form = h("form", { onsubmit: async (e) => {
    e.preventDefault();
    note.replaceChildren();
    const changes = { name: name.value.trim(), description: description.value, system: system.value };
    if (model.value.trim() && model.value.trim() !== agent.model) changes.model = model.value.trim();
    try {
      const saved = await call("PATCH", `/v1/agents/${agent.id}`, changes);
      Object.assign(agent, saved);
      note.replaceChildren(h("p", { class: "muted" }, `Saved at ${new Date().toLocaleTimeString()}.`));
      announce("Saved the settings");
      if (afterTurn) await afterTurn();
    } catch (err) {
      note.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
    }
  } }, models, field("Name", name), field("Model", model), field("Description", description),
  field("System prompt", system), h("p", {}, h("button", { type: "submit" }, "Save settings")), note);
  return h("aside", { class: "pane settings", "aria-labelledby": "settings-title" },
    h("h2", { id: "settings-title" }, "Settings"), form);
}

// How full the context window is, in a line and a bar (the overview has the details).
function contextUse(context) {
  const max = context.context_window_size_max || 1;
  const used = PARTS.reduce((n, [, , key]) => n + (context[key] || 0), 0);
  const bar = h("div", { class: "bar", role: "img",
    "aria-label": `${used} of ${max} tokens: ${PARTS.map(([, label, key]) => `${label} ${context[key] || 0}`).join(", ")}` },
  PARTS.map(([kind, label, key]) => h("span", { class: `k-${kind}`, title: `${label}: ${context[key] || 0} tokens`,
    style: `width: ${Math.min(100, (100 * (context[key] || 0)) / max)}%` })));
  return h("section", { "aria-labelledby": "context-use" }, h("h2", { id: "context-use" }, "Context window"),
    bar, h("p", { class: "muted", "data-context-used": String(used) }, `${used} of ${max} tokens`));
}

function base64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(",")[1]);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

// -- runs ---------------------------------------------------------------------------------

async function runsPage(show, id) {
  const [agent, runs] = await Promise.all([
    get(`/v1/agents/${id}`, { include_relationships: [] }),
    get("/v1/runs/", { agent_id: id, limit: 100, order: "desc" }),
  ]);
  const rows = runs.map((r) => h("tr", {},
    h("td", {}, h("a", { href: `#/runs/${r.id}` }, r.id)),
    h("td", { class: `status-${r.status}` }, r.status),
    h("td", {}, r.stop_reason || ""),
    h("td", {}, when(r.created_at)),
    h("td", {}, r.total_duration_ns ? `${(r.total_duration_ns / 1e6).toFixed(0)} ms` : "")));
  show(`Runs of ${agent.name}`, tabs(agent, "runs"), runs.length
    ? h("table", {}, h("thead", {}, h("tr", {}, ["Run", "Status", "Stop reason", "Started", "Took"].map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows))
    : h("p", { class: "muted" }, "No runs yet."));
}

async function runPage(show, runId) {
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

// -- history ------------------------------------------------------------------------------

const KINDS = { create: "Created", step: "Step", update: "Changed", rewind: "Rewound", fork: "Forked", start: "History starts" };

async function historyPage(show, id) {
  const [agent, versions] = await Promise.all([
    get(`/v1/agents/${id}`, { include_relationships: [] }),
    get(`/v1/agents/${id}/history`, { limit: 100 }),
  ]);
  const rows = versions.map((v, n) => historyRow(agent, v, versions[n + 1]));
  show(`History of ${agent.name}`, tabs(agent, "history"),
    h("p", { class: "muted" }, "Every version the agent went through, newest first. "
      + "Rewinding keeps every message (they are marked, not deleted) and is itself a version you can rewind."),
    versions.length ? h("ol", { class: "messages", "aria-label": "Versions" }, rows)
      : h("p", { class: "muted" }, "No history yet."));
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
        render();
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

// -- usage --------------------------------------------------------------------------------

async function usagePage(show) {
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

window.addEventListener("hashchange", render);
render();

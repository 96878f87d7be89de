// An agent's tools and their rules: attach and detach, and a source editor that shows the
// schema the source derives and runs it with arguments before making it.

import { call, get } from "./api.js";
import { announce, field, h } from "./dom.js";
import { redraw } from "./page.js";
import { describeRule } from "./tool_rules.js";

export function toolsSection(agent) {
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
    rules.length ? h("ul", {}, rules.map((r) => h("li", {}, describeRule(r)))) : h("p", { class: "muted" }, "None."));
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

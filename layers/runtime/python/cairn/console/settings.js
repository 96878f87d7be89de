// The agent's settings, saved through the API as the ADE does (PATCH /v1/agents/{id}): its
// name, model, description, tags and system prompt, its model settings, its tool rules and
// the secrets its tools get.

import { call, get } from "./api.js";
import { announce, field, h } from "./dom.js";
import { shell } from "./page.js";
import { secretsEditor } from "./secrets.js";
import { toolRulesEditor } from "./tool_rules.js";

export function settingsPane(agent) {
  const name = h("input", { type: "text", required: true, value: agent.name });
  const model = h("input", { type: "text", list: "workspace-models", value: agent.model || "" });
  const models = h("datalist", { id: "workspace-models" });
  get("/v1/models/").then((found) => models.replaceChildren(...found.map((m) => h("option", { value: m.handle })))).catch(() => {});
  const description = h("input", { type: "text", value: agent.description || "" });
  const tags = h("input", { type: "text", value: (agent.tags || []).join(", ") });
  const system = h("textarea", { rows: 10 });
  system.value = agent.system || "";
  const tuning = modelSettings(agent);
  const note = h("div", { role: "status" });
  const form = h("form", { onsubmit: async (e) => {
    e.preventDefault();
    note.replaceChildren();
    const changes = {
      name: name.value.trim(), description: description.value, system: system.value,
      tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean),
    };
    const chosen = model.value.trim();
    // A new model comes with its own settings: those shown belong to the old one.
    if (chosen && chosen !== agent.model) changes.model = chosen;
    else Object.assign(changes, tuning.changes());
    try {
      const saved = await call("PATCH", `/v1/agents/${agent.id}`, changes);
      Object.assign(agent, saved);
      tuning.show(saved);
      note.replaceChildren(h("p", { class: "muted" }, `Saved at ${new Date().toLocaleTimeString()}.`));
      announce("Saved the settings");
      if (shell.afterTurn) await shell.afterTurn();
    } catch (err) {
      note.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
    }
  } }, models, field("Name", name), field("Model", model), field("Description", description),
  field("Tags (comma-separated)", tags), field("System prompt", system), tuning.element,
  h("p", {}, h("button", { type: "submit" }, "Save settings")), note);
  return h("aside", { class: "pane settings", "aria-labelledby": "settings-title" },
    h("h2", { id: "settings-title" }, "Settings"), form, toolRulesEditor(agent), secretsEditor(agent));
}

const EFFORTS = ["minimal", "low", "medium", "high"];

// The model settings Letta shows for the agent's provider (`model_settings`), and the
// context window's size: what the form changed, as a PATCH's fields.
function modelSettings(agent) {
  const temperature = h("input", { type: "number", min: 0, max: 2, step: 0.05 });
  const maxOutput = h("input", { type: "number", min: 1, step: 1 });
  const contextWindow = h("input", { type: "number", min: 1, step: 1 });
  const parallel = h("input", { type: "checkbox", id: `parallel-${agent.id}` });
  const effort = h("select", {}, EFFORTS.map((e) => h("option", { value: e }, e)));
  const effortField = field("Reasoning effort", effort);
  const element = h("fieldset", {}, h("legend", {}, "Model settings"),
    h("div", { class: "row" }, field("Temperature", temperature), field("Max output tokens", maxOutput)),
    field("Context window (tokens)", contextWindow), effortField,
    h("div", { class: "check" }, parallel, h("label", { for: parallel.id }, "Parallel tool calls")));
  const show = (now) => {
    const s = now.model_settings || {};
    temperature.value = s.temperature ?? now.llm_config?.temperature ?? "";
    maxOutput.value = s.max_output_tokens ?? now.llm_config?.max_tokens ?? "";
    contextWindow.value = now.llm_config?.context_window ?? "";
    parallel.checked = Boolean(s.parallel_tool_calls);
    effortField.hidden = !s.reasoning;
    if (s.reasoning) effort.value = s.reasoning.reasoning_effort;
  };
  show(agent);
  const changes = () => {
    const out = {};
    if (contextWindow.value) out.context_window_limit = Number(contextWindow.value);
    if (!agent.model_settings) return out; // a provider Letta has no settings for
    const s = { provider_type: agent.model_settings.provider_type, parallel_tool_calls: parallel.checked };
    if (temperature.value !== "") s.temperature = Number(temperature.value);
    if (maxOutput.value) s.max_output_tokens = Number(maxOutput.value);
    if (agent.model_settings.reasoning) s.reasoning = { reasoning_effort: effort.value };
    out.model_settings = s;
    return out;
  };
  return { element, show, changes };
}

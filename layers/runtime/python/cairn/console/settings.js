// The agent's settings, saved through the API as the ADE does (PATCH /v1/agents/{id}).

import { call, get } from "./api.js";
import { announce, field, h } from "./dom.js";
import { shell } from "./page.js";

export function settingsPane(agent) {
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
      if (shell.afterTurn) await shell.afterTurn();
    } catch (err) {
      note.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
    }
  } }, models, field("Name", name), field("Model", model), field("Description", description),
  field("System prompt", system), h("p", {}, h("button", { type: "submit" }, "Save settings")), note);
  return h("aside", { class: "pane settings", "aria-labelledby": "settings-title" },
    h("h2", { id: "settings-title" }, "Settings"), form);
}

// The organization's own model providers (bring your own key): add one after checking its
// key, see the models it brings (named `<provider>/<model>`), check a stored key again,
// delete one. A key is sealed by the server and never shown again, only its last four.

import { call, get } from "./api.js";
import { announce, field, h } from "./dom.js";
import { shell } from "./page.js";

// The provider types Cairn calls (others are kept, as Letta's server keeps them, unused).
const TYPES = [["openai", "OpenAI (or OpenAI-compatible)"], ["anthropic", "Anthropic"], ["google_ai", "Google AI"]];

export async function providersPage(show) {
  const [providers, models] = await Promise.all([get("/v1/providers/"), get("/v1/models/").catch(() => [])]);
  show("Model providers",
    h("p", { class: "muted" }, "Your organization's own keys: agents pick their models as provider/model."),
    providers.length
      ? h("table", {}, h("caption", { class: "visually-hidden" }, "Providers"),
        h("thead", {}, h("tr", {}, ["Name", "Type", "Key", "Models", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, providers.map((p) => providerRow(p, models))))
      : h("p", { class: "muted" }, "No providers of your own: agents use the server's."),
    addForm());
}

function providerRow(p, models) {
  const mine = models.filter((m) => m.handle?.startsWith(`${p.name}/`)).map((m) => m.handle.slice(p.name.length + 1));
  const state = h("span", { role: "status" });
  const check = async () => {
    state.textContent = "Checking…";
    try {
      await call("POST", `/v1/providers/${p.id}/check`);
      state.textContent = "Key works";
    } catch (err) {
      state.textContent = `Refused: ${err.message}`;
      state.className = "error";
    }
  };
  const remove = async () => {
    if (!confirm(`Delete the provider ${p.name}? Agents on its models can no longer call them.`)) return;
    await call("DELETE", `/v1/providers/${p.id}`);
    announce(`Deleted ${p.name}`);
    shell.render();
  };
  return h("tr", { "data-provider": p.name },
    h("td", {}, p.name, p.base_url ? h("div", { class: "muted" }, p.base_url) : null),
    h("td", {}, p.provider_type), h("td", {}, p.api_key),
    h("td", { class: "models" }, mine.length ? mine.join(", ") : h("span", { class: "muted" }, "none listed")),
    h("td", {},
      h("button", { type: "button", class: "secondary", "aria-label": `Check the key of ${p.name}`, onclick: check }, "Check key"), " ",
      h("button", { type: "button", class: "danger", "aria-label": `Delete ${p.name}`, onclick: remove }, "Delete"), " ",
      state));
}

function addForm() {
  const name = h("input", { type: "text", required: true, pattern: "[^/\\s]+" });
  const kind = h("select", {}, TYPES.map(([v, label]) => h("option", { value: v }, label)));
  const key = h("input", { type: "password", required: true, autocomplete: "new-password" });
  const base = h("input", { type: "url", placeholder: "https://… (optional: an OpenAI-compatible server)" });
  const note = h("p", { role: "status" });
  const body = () => {
    const b = { provider_type: kind.value, api_key: key.value };
    if (base.value.trim()) b.base_url = base.value.trim();
    return b;
  };
  const said = (text, bad) => { note.textContent = text; note.className = bad ? "error" : "muted"; };
  const checkFirst = async () => {
    try {
      await call("POST", "/v1/providers/check", body());
      said("The key works.");
    } catch (err) { said(`Refused: ${err.message}`, true); }
  };
  const form = h("form", { onsubmit: async (e) => {
    e.preventDefault();
    try {
      const made = await call("POST", "/v1/providers/", { name: name.value.trim(), ...body() });
      announce(`Added ${made.name}`);
      shell.render();
    } catch (err) { said(err.message, true); }
  } }, h("div", { class: "row" }, field("Provider name", name), field("Provider type", kind)),
  field("API key", key), field("Base URL", base), note,
  h("div", { class: "row actions" },
    h("div", {}, h("button", { type: "button", class: "secondary", onclick: checkFirst }, "Check the key")),
    h("div", {}, h("button", { type: "submit" }, "Add provider"))));
  return h("section", { "aria-labelledby": "add-provider" }, h("h2", { id: "add-provider" }, "Add a provider"), form);
}

// The secrets an agent's custom tools get as environment variables (docs/tools.md,
// "Secrets"): their names shown, their values never put on the page; one added or changed,
// one removed. The API replaces the whole set on each save, so the page sends every value
// the agent has (its own organization reads them) with the change.

import { call } from "./api.js";
import { announce, field, h, submitting } from "./dom.js";

export function secretsEditor(agent) {
  const element = h("section", { "aria-labelledby": "secrets-title" });
  const held = () => Object.fromEntries((agent.secrets || []).map((s) => [s.key, s.value]));
  const save = async (secrets, said) => {
    const saved = await call("PATCH", `/v1/agents/${agent.id}`, { secrets });
    agent.secrets = saved.secrets;
    announce(said);
    draw();
  };
  const draw = () => {
    const names = Object.keys(held()).sort();
    const name = h("input", { type: "text", required: true, pattern: "[A-Za-z_][A-Za-z0-9_]*", autocomplete: "off" });
    const value = h("input", { type: "password", required: true, autocomplete: "new-password" });
    const { problem, onsubmit } = submitting(() => save({ ...held(), [name.value.trim()]: value.value }, `Saved the secret ${name.value.trim()}`));
    const remove = (key) => {
      const rest = held();
      delete rest[key];
      // Letta's rule: an empty set changes nothing, so the last one stays.
      if (!Object.keys(rest).length) {
        problem.textContent = "The last secret cannot be removed (an empty set leaves the agent's as they are); change its value instead.";
        return;
      }
      save(rest, `Removed the secret ${key}`).catch((err) => { problem.textContent = err.message; });
    };
    element.replaceChildren(
      h("h3", { id: "secrets-title" }, `Tool secrets (${names.length})`),
      names.length
        ? h("ul", { class: "secrets" }, names.map((k) => h("li", {}, h("code", {}, k), " ",
          h("button", { type: "button", class: "link", "aria-label": `Remove the secret ${k}`, onclick: () => remove(k) }, "Remove"))))
        : h("p", { class: "muted" }, "None: its tools get no secrets."),
      h("details", { class: "panel" }, h("summary", {}, "Add or change a secret"),
        h("form", { onsubmit }, field("Secret name", name), field("Secret value", value,
          h("p", { class: "muted" }, "Sealed by the server; this page never shows it.")),
        problem, h("button", { type: "submit" }, "Save secret"))));
  };
  draw();
  return element;
}

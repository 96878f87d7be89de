// The context window: how full it is by part (a bar), and in the overview the numbers, the
// system message as rendered and the in-context messages.

import { h } from "./dom.js";
import { MessageList, textOf } from "./messages.js";

const PARTS = [
  ["system", "System", "num_tokens_system"],
  ["core_memory", "Core memory", "num_tokens_core_memory"],
  ["tools", "Tools", "num_tokens_functions_definitions"],
  ["messages", "Messages", "num_tokens_messages"],
  ["summary", "Summary", "num_tokens_summary_memory"],
];

// The bar of tokens by part against the window's size, and how many are used.
function contextBar(context) {
  const max = context.context_window_size_max || 1;
  const used = PARTS.reduce((n, [, , key]) => n + (context[key] || 0), 0);
  const bar = h("div", { class: "bar", role: "img",
    "aria-label": `${used} of ${max} tokens: ${PARTS.map(([, label, key]) => `${label} ${context[key] || 0}`).join(", ")}` },
  PARTS.map(([kind, label, key]) => h("span", { class: `k-${kind}`, title: `${label}: ${context[key] || 0} tokens`,
    style: `width: ${Math.min(100, (100 * (context[key] || 0)) / max)}%` })));
  return { bar, used, max };
}

export function contextSection(context) {
  const { bar, used, max } = contextBar(context);
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

// How full the context window is, in a line and a bar (the overview has the details).
export function contextUse(context) {
  const { bar, used, max } = contextBar(context);
  return h("section", { "aria-labelledby": "context-use" }, h("h2", { id: "context-use" }, "Context window"),
    bar, h("p", { class: "muted", "data-context-used": String(used) }, `${used} of ${max} tokens`));
}

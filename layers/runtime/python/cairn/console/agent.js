// One agent's overview: its memory, context window, archival memory, tools, folders,
// schedules, Telegram bots, identities and groups, with the builder's actions (export, reset).

import { call, get } from "./api.js";
import { announce, field, h, submitting } from "./dom.js";
import { archivalSection } from "./archival.js";
import { memorySection } from "./blocks.js";
import { contextSection } from "./context.js";
import { foldersSection } from "./folders.js";
import { redraw, shell, tabs } from "./page.js";
import { schedulesSection } from "./schedules.js";
import { telegramSection } from "./telegram.js";
import { toolsSection } from "./tools.js";

export async function agentPage(show, id) {
  const [agent, context] = await Promise.all([get(`/v1/agents/${id}`), get(`/v1/agents/${id}/context`)]);
  show(agent.name, tabs(agent, "agent"),
    h("p", { class: "muted" }, `${agent.model || agent.llm_config?.model} · ${agent.agent_type} · ${agent.id}`),
    agent.description ? h("p", {}, agent.description) : null,
    agentActions(agent),
    memorySection(agent), contextSection(context), archivalSection(agent),
    toolsSection(agent), foldersSection(agent), schedulesSection(agent), telegramSection(agent),
    relationsSection(agent));
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
    shell.render();
  };
  return h("div", { class: "row actions" },
    h("div", {}, h("button", { type: "button", class: "secondary", onclick: exportIt }, "Export agent file")),
    h("div", {}, h("button", { type: "button", class: "danger", onclick: reset }, "Reset messages")), saved);
}

// A new identity (a user, an organization...) the agent is tied to.
function identityForm(agent) {
  const key = h("input", { type: "text", required: true });
  const name = h("input", { type: "text", required: true });
  const kind = h("select", {}, ["user", "org", "other"].map((k) => h("option", { value: k }, k)));
  const { problem, onsubmit } = submitting(async () => {
    await call("POST", "/v1/identities/", {
      identifier_key: key.value.trim(), name: name.value.trim(), identity_type: kind.value,
      agent_ids: [agent.id],
    });
    announce(`Added ${name.value}`);
    await redraw();
  });
  const form = h("form", { onsubmit }, h("div", { class: "row" }, field("Identifier key", key), field("Identity name", name), field("Kind", kind)),
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

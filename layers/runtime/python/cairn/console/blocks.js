// Core-memory blocks: each edited in place (with conflict detection), its settings, a new
// one added, one of the organization's attached (another agent's, to share it), one
// detached.

import { call, get } from "./api.js";
import { announce, field, h, submitting } from "./dom.js";
import { redraw } from "./page.js";

export function memorySection(agent) {
  const blocks = (agent.memory?.blocks || agent.blocks || []).filter((b) => !b.hidden);
  return h("section", { "aria-labelledby": "core-memory" }, h("h2", { id: "core-memory" }, "Core memory"),
    blocks.length ? blocks.map((b) => blockEditor(agent.id, b)) : h("p", { class: "muted" }, "No blocks."),
    newBlockForm(agent.id), attachBlockForm(agent.id, blocks));
}

// One of the organization's blocks found by its label (another agent's, say: both then
// read and write the same memory) and attached.
function attachBlockForm(agentId, attached) {
  const have = new Set(attached.map((b) => b.id));
  const label = h("input", { type: "search" });
  const found = h("div", { "aria-live": "polite" });
  const attach = async (b) => {
    await call("PATCH", `/v1/agents/${agentId}/core-memory/blocks/attach/${b.id}`);
    announce(`Attached ${b.label}`);
    await redraw();
  };
  const form = h("form", { role: "search", onsubmit: async (e) => {
    e.preventDefault();
    try {
      const blocks = (await get("/v1/blocks/", { label_search: label.value.trim(), limit: 50 })).filter((b) => !have.has(b.id));
      found.replaceChildren(blocks.length
        ? h("ul", { class: "found-blocks" }, blocks.map((b) => h("li", {},
          h("strong", {}, b.label), ` · ${b.value.slice(0, 80)}${b.value.length > 80 ? "…" : ""} `,
          h("button", { type: "button", class: "secondary", "aria-label": `Attach the block ${b.label} (${b.id})`, onclick: () => attach(b) }, "Attach"))))
        : h("p", { class: "muted" }, "No other block has such a label."));
    } catch (err) {
      found.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
    }
  } }, h("div", { class: "row" }, field("Block label contains", label), h("div", {}, h("button", { type: "submit" }, "Find blocks"))));
  return h("details", { class: "panel" }, h("summary", {}, "Attach a block"), form, found);
}

// A new block, made and attached to the agent.
function newBlockForm(agentId) {
  const label = h("input", { type: "text", required: true, pattern: "[A-Za-z0-9_\\-]+" });
  const value = h("textarea", { rows: 3 });
  const limit = h("input", { type: "number", min: 1, value: 5000 });
  const description = h("input", { type: "text" });
  const readOnly = h("input", { type: "checkbox", id: `ro-new-${agentId}` });
  const { problem, onsubmit } = submitting(async () => {
    const block = await call("POST", "/v1/blocks/", {
      label: label.value.trim(), value: value.value, limit: Number(limit.value),
      description: description.value || undefined, read_only: readOnly.checked,
    });
    await call("PATCH", `/v1/agents/${agentId}/core-memory/blocks/attach/${block.id}`);
    announce(`Added ${block.label}`);
    await redraw();
  });
  const form = h("form", { onsubmit }, h("div", { class: "row" }, field("Label", label), field("Limit", limit)),
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

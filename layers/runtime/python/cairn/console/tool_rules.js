// An agent's tool rules (Letta's nine types): each shown with a Remove, and a new one made
// from a type, a tool and what that type needs. Every change saves the whole list
// (PATCH /v1/agents/{id} with `tool_rules`), as the ADE does.

import { call } from "./api.js";
import { announce, field, h, submitting } from "./dom.js";

// The types a builder makes here, and what each needs besides the tool (conditional rules,
// which map a tool's outputs to the next tool, are shown and removed but made by the API).
const TYPES = {
  run_first: { label: "Run first", needs: null },
  exit_loop: { label: "Ends the turn", needs: null },
  continue_loop: { label: "Continues the turn", needs: null },
  constrain_child_tools: { label: "Only these tools may follow", needs: "children" },
  parent_last_tool: { label: "Only after this tool may these run", needs: "children" },
  max_count_per_step: { label: "A limit of calls a turn", needs: "count" },
  required_before_exit: { label: "Required before the turn ends", needs: null },
  requires_approval: { label: "Asks for approval", needs: null },
};

export function describeRule(r) {
  if (r.type === "max_count_per_step") return `${r.tool_name} · at most ${r.max_count_limit} calls a turn`;
  const what = TYPES[r.type]?.label || r.type;
  const more = r.children ? `: ${r.children.join(", ")}`
      : r.child_output_mapping ? `: ${Object.entries(r.child_output_mapping).map(([k, v]) => `${k} → ${v}`).join(", ")}` : "";
  return `${r.tool_name} · ${what}${more}`;
}

export function toolRulesEditor(agent) {
  const element = h("section", { "aria-labelledby": "rules-title" });
  const draw = () => element.replaceChildren(
    h("h3", { id: "rules-title" }, `Tool rules (${(agent.tool_rules || []).length})`),
    list(), addForm());
  const save = async (rules, said) => {
    const saved = await call("PATCH", `/v1/agents/${agent.id}`, { tool_rules: rules });
    agent.tool_rules = saved.tool_rules;
    announce(said);
    draw();
  };
  const list = () => {
    const rules = agent.tool_rules || [];
    if (!rules.length) return h("p", { class: "muted" }, "None: the agent may call any tool in any order.");
    return h("ul", { class: "rules" }, rules.map((r, n) => h("li", {}, describeRule(r), " ",
      h("button", { type: "button", class: "link", "aria-label": `Remove the rule ${describeRule(r)}`,
        onclick: () => save(rules.filter((_, i) => i !== n), "Rule removed") }, "Remove"))));
  };
  const addForm = () => {
    const names = (agent.tools || []).map((t) => t.name).sort();
    const kind = h("select", {}, Object.entries(TYPES).map(([v, t]) => h("option", { value: v }, t.label)));
    const tool = h("select", {}, names.map((n) => h("option", { value: n }, n)));
    const children = h("select", { multiple: true, size: Math.min(6, Math.max(2, names.length)) },
      names.map((n) => h("option", { value: n }, n)));
    const count = h("input", { type: "number", min: 1, value: 1 });
    const childrenField = field("Tools it names", children);
    const countField = field("Most calls a turn", count);
    const shown = () => {
      childrenField.hidden = TYPES[kind.value].needs !== "children";
      countField.hidden = TYPES[kind.value].needs !== "count";
    };
    kind.addEventListener("change", shown);
    shown();
    const { problem, onsubmit } = submitting(async () => {
      const rule = { type: kind.value, tool_name: tool.value };
      if (TYPES[kind.value].needs === "children") {
        rule.children = [...children.selectedOptions].map((o) => o.value);
        if (!rule.children.length) throw new Error("Choose the tools it names");
      }
      if (TYPES[kind.value].needs === "count") rule.max_count_limit = Number(count.value);
      await save([...(agent.tool_rules || []), rule], "Rule added");
    });
    const form = h("form", { onsubmit }, h("div", { class: "row" }, field("Rule", kind), field("Tool", tool)), childrenField, countField,
    problem, h("button", { type: "submit", disabled: !names.length || null }, "Add rule"));
    return h("details", { class: "panel" }, h("summary", {}, "Add a tool rule"), form);
  };
  draw();
  return element;
}

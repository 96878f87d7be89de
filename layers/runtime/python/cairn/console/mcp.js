// The organization's MCP servers: add one (streamable HTTP or SSE, with a token), see the
// tools it lists, try one with arguments, list them again, change its token, delete it.
// Its tools are the organization's: an agent's overview attaches them as any other.

import { call, get } from "./api.js";
import { announce, field, h, submitting } from "./dom.js";
import { shell } from "./page.js";

export async function mcpPage(show) {
  const servers = await get("/v1/mcp-servers/");
  show("MCP servers",
    h("p", { class: "muted" }, "Servers whose tools your agents may call. Tokens are kept sealed and never shown whole."),
    servers.length ? h("div", {}, servers.map((s) => serverPanel(s))) : h("p", { class: "muted" }, "No MCP servers yet."),
    addForm());
}

function serverPanel(server) {
  const tools = h("div", { "aria-live": "polite" }, h("p", { class: "muted" }, "Loading…"));
  const note = h("div", { role: "status" });
  const said = (text, bad) => note.replaceChildren(h("p", { class: bad ? "error" : "muted", role: bad ? "alert" : null }, text));
  const load = async () => {
    const found = await get(`/v1/mcp-servers/${server.id}/tools`);
    tools.replaceChildren(found.length ? toolsOf(server, found, said)
      : h("p", { class: "muted" }, "No tools listed (the server could not be reached, or lists none): refresh to try again."));
  };
  const refresh = async () => {
    try {
      const done = await call("PATCH", `/v1/mcp-servers/${server.id}/refresh`);
      const counts = Object.entries(done || {}).map(([k, v]) => `${v.length} ${k}`).join(", ");
      said(`Listed again${counts ? `: ${counts}` : ""}.`);
      announce(`Refreshed ${server.server_name}`);
      await load();
    } catch (err) { said(err.message, true); }
  };
  const remove = async () => {
    if (!confirm(`Delete the MCP server ${server.server_name}? Its tools leave every agent that has them.`)) return;
    await call("DELETE", `/v1/mcp-servers/${server.id}`);
    announce(`Deleted ${server.server_name}`);
    shell.render();
  };
  const token = h("input", { type: "password", autocomplete: "new-password", placeholder: "Bearer …" });
  const retoken = h("form", { onsubmit: async (e) => {
    e.preventDefault();
    try {
      await call("PATCH", `/v1/mcp-servers/${server.id}`, { config: { auth_header: "Authorization", auth_token: token.value } });
      token.value = "";
      said("Token changed: refresh to list the tools with it.");
    } catch (err) { said(err.message, true); }
  } }, h("div", { class: "row" }, field(`New Authorization header of ${server.server_name}`, token),
    h("div", {}, h("button", { type: "submit", class: "secondary" }, "Change token"))));
  load().catch((err) => tools.replaceChildren(h("p", { class: "error" }, err.message)));
  const where = server.mcp_server_type === "stdio" ? `${server.command} ${(server.args || []).join(" ")} (stdio: kept, never started)`
    : server.server_url;
  return h("section", { class: "panel", "aria-labelledby": `mcp-${server.id}` },
    h("h2", { id: `mcp-${server.id}` }, server.server_name),
    h("p", { class: "muted" }, `${server.mcp_server_type} · ${where}`, server.auth_token ? ` · token ${server.auth_token}` : ""),
    tools, note,
    h("div", { class: "row actions" },
      h("div", {}, h("button", { type: "button", class: "secondary", "aria-label": `Refresh ${server.server_name}`, onclick: refresh }, "Refresh tools")),
      h("div", {}, h("button", { type: "button", class: "danger", "aria-label": `Delete ${server.server_name}`, onclick: remove }, "Delete"))),
    server.mcp_server_type === "stdio" ? null : h("details", {}, h("summary", {}, "Change its token"), retoken));
}

// The server's tools, and one tried with arguments (run on the server, as an agent would).
function toolsOf(server, found, said) {
  const choice = h("select", {}, found.map((t) => h("option", { value: t.id }, t.name)));
  const args = h("textarea", { rows: 2, spellcheck: "false" });
  args.value = "{}";
  const out = h("div", { "aria-live": "polite" });
  const run = async (e) => {
    e.preventDefault();
    let parsed;
    try { parsed = JSON.parse(args.value || "{}"); } catch { said("Arguments: not JSON", true); return; }
    try {
      const done = await call("POST", `/v1/mcp-servers/${server.id}/tools/${choice.value}/run`, { args: parsed });
      out.replaceChildren(h("h4", {}, `Returned (${done.status})`), h("pre", { class: "tool-return" }, String(done.func_return ?? "")));
    } catch (err) { said(err.message, true); }
  };
  return h("div", {},
    h("table", {}, h("caption", { class: "visually-hidden" }, `Tools of ${server.server_name}`),
      h("thead", {}, h("tr", {}, ["Tool", "Description", "Arguments"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, found.map((t) => h("tr", {}, h("td", {}, t.name), h("td", {}, (t.description || "").split("\n")[0]),
        h("td", {}, Object.keys(t.json_schema?.parameters?.properties || {}).join(", ")))))),
    h("details", {}, h("summary", {}, `Try a tool of ${server.server_name}`),
      h("form", { onsubmit: run }, h("div", { class: "row" }, field(`Tool of ${server.server_name}`, choice),
        field(`Arguments (JSON) for ${server.server_name}`, args)), h("button", { type: "submit" }, "Run tool"), out)));
}

function addForm() {
  const name = h("input", { type: "text", required: true });
  const kind = h("select", {}, h("option", { value: "streamable_http" }, "Streamable HTTP"), h("option", { value: "sse" }, "SSE"));
  const url = h("input", { type: "url", required: true, placeholder: "https://…/mcp" });
  const token = h("input", { type: "password", autocomplete: "new-password", placeholder: "Bearer …" });
  const { problem, onsubmit } = submitting(async () => {
    const config = { mcp_server_type: kind.value, server_url: url.value.trim() };
    if (token.value) Object.assign(config, { auth_header: "Authorization", auth_token: token.value });
    const made = await call("POST", "/v1/mcp-servers/", { server_name: name.value.trim(), config });
    announce(`Added ${made.server_name}`);
    shell.render();
  });
  const form = h("form", { onsubmit }, h("div", { class: "row" }, field("Server name", name), field("Transport", kind)),
  field("Server URL", url), field("Authorization header (optional)", token), problem,
  h("button", { type: "submit" }, "Add server"));
  return h("section", { "aria-labelledby": "add-mcp" }, h("h2", { id: "add-mcp" }, "Add an MCP server"), form);
}

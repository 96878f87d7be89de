// An agent's folders and their files: attach one of the organization's folders or make a
// new one, upload a file and watch it processed (parsed, embedded: the API's
// `processing_status`), delete a file, detach a folder.

import { call, get, upload } from "./api.js";
import { announce, field, h, submitting } from "./dom.js";
import { redraw } from "./page.js";

const BUSY = new Set(["pending", "parsing", "embedding"]);
// How often a folder with a file still being processed is read again.
const POLL_MS = 1000;

export function foldersSection(agent) {
  const list = h("div", { "aria-live": "polite" }, h("p", { class: "muted" }, "Loading…"));
  const element = h("section", { "aria-labelledby": "folders" }, h("h2", { id: "folders" }, "Folders and files"),
    list, attachFolder(agent), newFolder(agent));
  get(`/v1/agents/${agent.id}/folders`).then((folders) => list.replaceChildren(folders.length
    ? h("div", {}, folders.map((f) => folderPanel(agent, f, element)))
    : h("p", { class: "muted" }, "No folders attached."))).catch((err) => list.replaceChildren(h("p", { class: "error" }, err.message)));
  return element;
}

function folderPanel(agent, folder, section) {
  const files = h("div", {});
  const { problem, onsubmit } = submitting(async () => {
    if (!file.files[0]) return;
    const made = await upload(`/v1/folders/${folder.id}/upload`, file.files[0]);
    file.value = "";
    announce(`Uploaded ${made.file_name}`);
    await load();
  });
  let timer = null;
  const load = async () => {
    clearTimeout(timer);
    const found = await get(`/v1/folders/${folder.id}/files`, { limit: 100 });
    files.replaceChildren(found.length ? fileTable(folder, found, load) : h("p", { class: "muted" }, "No files yet."));
    // Read again while a file is still being processed, as long as the page shows it.
    if (found.some((f) => BUSY.has(f.processing_status)) && section.isConnected) timer = setTimeout(() => load().catch(() => {}), POLL_MS);
  };
  const file = h("input", { type: "file", required: true });
  const form = h("form", { onsubmit }, h("div", { class: "row" }, field(`Upload a file to ${folder.name}`, file),
    h("div", {}, h("button", { type: "submit" }, "Upload"))), problem);
  const detach = async () => {
    await call("PATCH", `/v1/agents/${agent.id}/folders/detach/${folder.id}`);
    announce(`Detached ${folder.name}`);
    await redraw();
  };
  load().catch((err) => files.replaceChildren(h("p", { class: "error" }, err.message)));
  return h("div", { class: "panel folder" },
    h("h3", {}, folder.name, folder.description ? h("span", { class: "muted" }, ` · ${folder.description}`) : null),
    files, form,
    h("button", { type: "button", class: "secondary", "aria-label": `Detach the folder ${folder.name}`, onclick: detach }, "Detach folder"));
}

function fileTable(folder, found, reload) {
  const status = (f) => {
    if (f.processing_status === "error") return `error: ${f.error_message || "unknown"}`;
    if (f.processing_status === "embedding" && f.total_chunks) return `embedding ${f.chunks_embedded || 0} of ${f.total_chunks}`;
    if (f.processing_status === "completed" && f.total_chunks !== null && f.total_chunks !== undefined) return `completed · ${f.total_chunks} chunks`;
    return f.processing_status;
  };
  const remove = async (f) => {
    if (!confirm(`Delete ${f.file_name} from ${folder.name}? Its passages go with it.`)) return;
    await call("DELETE", `/v1/folders/${folder.id}/${f.id}`);
    announce(`Deleted ${f.file_name}`);
    await reload();
  };
  return h("table", {}, h("caption", { class: "visually-hidden" }, `Files of ${folder.name}`),
    h("thead", {}, h("tr", {}, ["File", "Size", "Processing", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, found.map((f) => h("tr", { "data-file": f.file_name },
      h("td", {}, f.file_name), h("td", {}, `${Number(f.file_size || 0).toLocaleString()} bytes`),
      h("td", { class: `processing status-${f.processing_status}` }, status(f)),
      h("td", {}, h("button", { type: "button", class: "link", "aria-label": `Delete ${f.file_name}`, onclick: () => remove(f) }, "Delete"))))));
}

// One of the organization's folders, attached (those the agent has are left out).
function attachFolder(agent) {
  const choice = h("select", {}, h("option", { value: "" }, "Loading…"));
  Promise.all([get("/v1/folders/", { limit: 500 }), get(`/v1/agents/${agent.id}/folders`)]).then(([all, mine]) => {
    const have = new Set(mine.map((f) => f.id));
    choice.replaceChildren(h("option", { value: "" }, "Choose a folder"),
      ...all.filter((f) => !have.has(f.id)).map((f) => h("option", { value: f.id }, f.name)));
  }).catch(() => choice.replaceChildren(h("option", { value: "" }, "No folders")));
  return h("form", { onsubmit: async (e) => {
    e.preventDefault();
    if (!choice.value) return;
    await call("PATCH", `/v1/agents/${agent.id}/folders/attach/${choice.value}`);
    announce("Folder attached");
    await redraw();
  } }, h("div", { class: "row" }, field("Attach a folder", choice), h("div", {}, h("button", { type: "submit" }, "Attach folder"))));
}

// A new folder, made and attached.
function newFolder(agent) {
  const name = h("input", { type: "text", required: true, maxlength: 200 });
  const description = h("input", { type: "text" });
  const { problem, onsubmit } = submitting(async () => {
    const folder = await call("POST", "/v1/folders/", { name: name.value.trim(), description: description.value || undefined });
    await call("PATCH", `/v1/agents/${agent.id}/folders/attach/${folder.id}`);
    announce(`Made and attached ${folder.name}`);
    await redraw();
  });
  const form = h("form", { onsubmit }, h("div", { class: "row" }, field("Folder name", name), field("Folder description", description)),
  problem, h("button", { type: "submit" }, "Make and attach"));
  return h("details", { class: "panel" }, h("summary", {}, "Make a folder"), form);
}

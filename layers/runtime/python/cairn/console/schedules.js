// Messages sent to the agent later: once at a time, or on a cron schedule in a timezone.

import { call, get } from "./api.js";
import { announce, field, h, submitting, when } from "./dom.js";
import { textOf } from "./messages.js";

export function schedulesSection(agent) {
  const list = h("div", { "aria-live": "polite" });
  const load = async () => {
    const found = await get(`/v1/agents/${agent.id}/schedules`, { limit: 100 });
    list.replaceChildren(found.length
      ? h("table", {}, h("caption", { class: "visually-hidden" }, "Scheduled messages"),
        h("thead", {}, h("tr", {}, ["Message", "When", "Next", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, found.map((one) => {
          const said = (one.messages || []).map((m) => textOf(m)).join(" ");
          const w = one.schedule;
          return h("tr", {}, h("td", {}, said),
            h("td", {}, w.type === "recurring" ? `${w.cron} (${w.timezone})` : when(w.run_at)),
            h("td", {}, when(one.next_run_at)),
            h("td", {}, h("button", { type: "button", class: "secondary", "aria-label": `Delete the schedule “${said.slice(0, 40)}”`, onclick: async () => {
              await call("DELETE", `/v1/agents/${agent.id}/schedules/${one.id}`);
              announce("Schedule deleted");
              await load();
            } }, "Delete")));
        })))
      : h("p", { class: "muted" }, "None."));
  };
  const message = h("input", { type: "text", required: true });
  const cron = h("input", { type: "text", placeholder: "0 9 * * 1-5" });
  const at = h("input", { type: "datetime-local" });
  const zone = h("input", { type: "text", value: agent.timezone || "UTC" });
  const { problem, onsubmit } = submitting(async () => {
    const asked = { input: message.value, timezone: zone.value || "UTC" };
    if (cron.value.trim()) asked.cron = cron.value.trim();
    else if (at.value) asked.run_at = new Date(at.value).toISOString();
    else throw new Error("A cron expression or a time: when to send it");
    await call("POST", `/v1/agents/${agent.id}/schedules`, asked);
    message.value = "";
    cron.value = "";
    at.value = "";
    announce("Scheduled");
    await load();
  });
  const form = h("form", { onsubmit }, field("Message to send", message),
  h("div", { class: "row" }, field("Cron (repeats)", cron), field("Or once, at", at), field("Timezone", zone)),
  problem, h("button", { type: "submit" }, "Schedule"));
  load().catch((err) => list.replaceChildren(h("p", { class: "error" }, err.message)));
  return h("section", { "aria-labelledby": "schedules" }, h("h2", { id: "schedules" }, "Scheduled messages"), list,
    h("details", { class: "panel" }, h("summary", {}, "Schedule a message"), form));
}

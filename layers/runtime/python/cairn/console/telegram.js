// An agent's Telegram bots (docs/telegram.md): connect a bot made with @BotFather (its token,
// checked by Telegram, and where Telegram reaches this API), see those connected, disconnect
// one. The token is sealed by the server and shown as its last four characters only.

import { call, get } from "./api.js";
import { announce, field, h, submitting } from "./dom.js";
import { redraw } from "./page.js";

const MODES = [
  ["agent_per_chat", "An agent for each chat (made from this one)"],
  ["identity_per_user", "This agent for every chat, each user an identity"],
];

export function telegramSection(agent) {
  const list = h("div", { "aria-live": "polite" }, h("p", { class: "muted" }, "Loading…"));
  const disconnect = async (bot) => {
    if (!confirm(`Disconnect @${bot.username}? Telegram stops sending its messages here.`)) return;
    await call("DELETE", `/v1/telegram/bots/${bot.id}`);
    announce(`Disconnected @${bot.username}`);
    await redraw();
  };
  get("/v1/telegram/bots").then((bots) => {
    const mine = bots.filter((b) => b.agent_id === agent.id);
    list.replaceChildren(mine.length
      ? h("ul", {}, mine.map((b) => h("li", { "data-bot": b.username },
        `@${b.username} · ${MODES.find(([m]) => m === b.mode)?.[1] || b.mode} · token ${b.token} `,
        h("button", { type: "button", class: "link", "aria-label": `Disconnect @${b.username}`, onclick: () => disconnect(b) }, "Disconnect"))))
      : h("p", { class: "muted" }, "No bot connected."));
  }).catch((err) => list.replaceChildren(h("p", { class: "error" }, err.message)));
  const token = h("input", { type: "password", required: true, autocomplete: "new-password", placeholder: "123456:ABC…" });
  const mode = h("select", {}, MODES.map(([v, label]) => h("option", { value: v }, label)));
  const base = h("input", { type: "url", required: true, value: location.origin });
  const { problem, onsubmit } = submitting(async () => {
    const bot = await call("POST", "/v1/telegram/bots", {
      agent_id: agent.id, token: token.value.trim(), mode: mode.value, webhook_base_url: base.value.trim(),
    });
    announce(`Connected @${bot.username}`);
    await redraw();
  });
  const form = h("form", { onsubmit }, field("Bot token (from @BotFather)", token), field("Chats", mode),
  field("Where Telegram reaches this API", base,
    h("p", { class: "muted" }, "Its public HTTPS address (the ApiUrl output on AWS).")),
  problem, h("button", { type: "submit" }, "Connect bot"));
  return h("section", { "aria-labelledby": "telegram" }, h("h2", { id: "telegram" }, "Telegram"), list,
    h("details", { class: "panel" }, h("summary", {}, "Connect a Telegram bot"), form));
}

// The chat workspace: the agent's settings, the conversation (streamed, approvals answered
// in place, earlier messages paged in) and its memory, side by side.

import { get, stream } from "./api.js";
import { field, h } from "./dom.js";
import { archivalSection } from "./archival.js";
import { memorySection } from "./blocks.js";
import { contextUse } from "./context.js";
import { MessageList } from "./messages.js";
import { moreButton, PAGE, shell, tabs } from "./page.js";
import { settingsPane } from "./settings.js";

export async function chatPage(show, id) {
  const [agent, history] = await Promise.all([
    get(`/v1/agents/${id}`, { include_relationships: [] }),
    get(`/v1/agents/${id}/messages`, { limit: PAGE, order: "desc" }),
  ]);
  // The newest page, which the API (as Letta's) lists oldest first already. The system
  // message is the overview's to show (the context window): not a chat turn.
  const turns = history.filter((m) => m.message_type !== "system_message");
  const log = new MessageList(turns, { onApprove: (call, approve) => answer(call, approve) });
  let first = history[0];
  const earlier = moreButton("Show earlier messages", history.length === PAGE, async () => {
    const page = await get(`/v1/agents/${id}/messages`, { limit: PAGE, order: "desc", before: first.id });
    log.prepend(page.filter((m) => m.message_type !== "system_message"));
    if (page.length) first = page[0];
    return page.length === PAGE;
  });
  const state = h("p", { class: "muted", role: "status", "aria-live": "polite" });
  const text = h("textarea", { rows: 3 });
  const image = h("input", { type: "file", accept: "image/png,image/jpeg,image/gif,image/webp" });
  const send = h("button", { type: "submit" }, "Send");

  async function run(body) {
    send.disabled = true;
    state.textContent = "The agent is thinking…";
    try {
      await stream(`/v1/agents/${id}/messages/stream`, { ...body, stream_tokens: true, include_pings: true }, (event) => {
        if (event.message_type === "stop_reason") state.textContent = `Stopped: ${event.stop_reason}`;
        else if (event.message_type === "usage_statistics") state.textContent += ` · ${event.total_tokens} tokens`;
        else if (event.message_type === "error_message" || event.error) state.textContent = `Error: ${event.message || event.detail || JSON.stringify(event.error)}`;
        else if (event.message_type && event.message_type !== "ping") log.take(event);
      });
    } catch (err) {
      state.textContent = `Error: ${err.message}`;
    } finally {
      send.disabled = false;
      log.scroll();
      if (shell.afterTurn) await shell.afterTurn().catch(() => {});
    }
  }

  function answer(toolCall, approve) {
    return run({ messages: [{ type: "approval", approvals: [{ type: "approval", tool_call_id: toolCall.tool_call_id, approve }] }] });
  }

  const form = h("form", { class: "composer", onsubmit: async (e) => {
    e.preventDefault();
    const words = text.value.trim();
    const file = image.files[0];
    if (!words && !file) return;
    const content = [];
    if (words) content.push({ type: "text", text: words });
    if (file) content.push({ type: "image", source: { type: "base64", media_type: file.type, data: await base64(file) } });
    log.take({ id: `local-${Date.now()}`, message_type: "user_message", content });
    text.value = "";
    image.value = "";
    await run({ messages: [{ role: "user", content }] });
  } }, field("Message", text), field("Attach an image", image), h("p", {}, send), state);
  text.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) form.requestSubmit(); });
  // The workspace: the agent's settings, the conversation and its memory side by side (one
  // column on a narrow screen, the conversation first), the memory drawn again after each
  // turn so a builder watches it change while chatting.
  const memory = h("aside", { class: "pane memory", "aria-label": "Memory" });
  const drawMemory = async () => {
    const [now, context] = await Promise.all([get(`/v1/agents/${id}`), get(`/v1/agents/${id}/context`)]);
    // The context window's use first: one line that shows how full it is, whatever the
    // blocks' length below it.
    memory.replaceChildren(contextUse(context), memorySection(now), archivalSection(now));
  };
  shell.afterTurn = drawMemory;
  const conversation = h("section", { class: "pane conversation", "aria-label": "Conversation" }, h("p", {}, earlier), log.element, form);
  show(`Chat with ${agent.name}`, tabs(agent, "chat"),
    h("div", { class: "workspace" }, settingsPane(agent), conversation, memory));
  view.classList.add("wide");
  log.element.classList.add("chat-log");
  log.element.setAttribute("aria-label", "Messages");
  log.element.setAttribute("tabindex", "0");
  log.scroll();
  await drawMemory();
}

function base64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(",")[1]);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

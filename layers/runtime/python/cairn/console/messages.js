// A list of messages as the console shows them: Letta's messages (message_type) or the
// stored ones of the context window (role), tool calls and returns folded, an approval
// request with its buttons, and a stream's pieces merged into the message they belong to.

import { h } from "./dom.js";

const LABELS = {
  user_message: "User", assistant_message: "Agent", reasoning_message: "Reasoning",
  hidden_reasoning_message: "Reasoning", tool_call_message: "Tool call",
  tool_return_message: "Tool return", system_message: "System",
  approval_request_message: "Approval asked", approval_response_message: "Approval answer",
};

function text(content) {
  if (typeof content === "string") return content;
  return (content || []).filter((p) => p.type === "text").map((p) => p.text).join("\n");
}

// A message's words (a stored message's or one of Letta's).
export const textOf = (message) => text(message.content);

function images(content) {
  if (!Array.isArray(content)) return [];
  return content.filter((p) => p.type === "image" && p.source?.type === "base64")
    .map((p) => h("img", { class: "attached", alt: "An attached image", src: `data:${p.source.media_type};base64,${p.source.data}` }));
}

function calls(message) {
  // A stored message's list, or a streamed piece's one call (an object, as Letta sends it).
  const many = message.tool_calls;
  const list = Array.isArray(many) ? many : many ? [many] : message.tool_call ? [message.tool_call] : [];
  return list.map((c) => c.function ? { name: c.function.name, arguments: c.function.arguments, tool_call_id: c.id } : c);
}

function folded(summary, body) {
  return h("details", {}, h("summary", {}, summary), h("pre", {}, body));
}

// A stored message (the context window's) as Letta's kinds: one entry per part it shows.
function fromStored(m) {
  if (m.role === "tool") return [{ ...m, message_type: "tool_return_message", tool_return: text(m.content), status: "" }];
  if (m.role === "assistant") {
    const out = [];
    const words = text(m.content);
    if (words) out.push({ ...m, message_type: "assistant_message", content: words });
    if (calls(m).length) out.push({ ...m, message_type: "tool_call_message" });
    return out.length ? out : [{ ...m, message_type: "assistant_message", content: "" }];
  }
  if (m.role === "approval") return [{ ...m, message_type: m.tool_calls ? "approval_request_message" : "approval_response_message" }];
  return [{ ...m, message_type: `${m.role}_message` }];
}

export function messageItem(m, onApprove) {
  const kind = m.message_type;
  const li = h("li", { class: kind, "data-id": m.id || "" }, h("div", { class: "role" }, LABELS[kind] || kind));
  fill(li, m, onApprove);
  return li;
}

function fill(li, m, onApprove) {
  const kind = m.message_type;
  const body = [];
  if (kind === "tool_call_message") {
    for (const c of calls(m)) body.push(folded(`${c.name}(…)`, c.arguments || ""));
  } else if (kind === "tool_return_message") {
    body.push(folded(`Returned${m.status ? ` (${m.status})` : ""}`, String(m.tool_return ?? text(m.content))));
  } else if (kind === "reasoning_message" || kind === "hidden_reasoning_message") {
    body.push(folded("Reasoning", m.reasoning || m.hidden_reasoning || ""));
  } else if (kind === "approval_request_message") {
    for (const c of calls(m)) {
      body.push(folded(`${c.name}(…) waits for your approval`, c.arguments || ""));
      if (onApprove) {
        const buttons = h("div", { class: "row" },
          h("button", { type: "button", onclick: () => { buttons.remove(); onApprove(c, true); } }, `Approve ${c.name}`),
          h("button", { type: "button", class: "danger", onclick: () => { buttons.remove(); onApprove(c, false); } }, `Deny ${c.name}`));
        body.push(buttons);
      }
    }
  } else if (kind === "approval_response_message") {
    const decisions = m.approvals || [];
    body.push(h("div", { class: "content" }, decisions.length
      ? decisions.map((d) => `${d.approve ? "Approved" : "Denied"}${d.reason ? `: ${d.reason}` : ""}`).join("; ")
      : m.approve ? "Approved" : "Denied"));
  } else {
    body.push(h("div", { class: "content" }, text(m.content)), ...images(m.content));
  }
  li.append(...body);
}

export class MessageList {
  constructor(messages, { raw = false, onApprove = null } = {}) {
    this.onApprove = onApprove;
    this.element = h("ol", { class: "messages" });
    this.byKey = new Map(); // a streamed message's entry, by its id and kind
    const items = raw ? messages.flatMap(fromStored) : messages;
    const fragment = document.createDocumentFragment();
    // Only the last message's approval buttons are live: earlier requests were answered.
    const lastApproval = items.findLastIndex((m) => m.message_type === "approval_request_message");
    const answered = lastApproval >= 0 && items.slice(lastApproval + 1).some((m) => m.message_type !== "approval_request_message");
    items.forEach((m, n) => {
      const live = n === lastApproval && !answered ? this.onApprove : null;
      fragment.append(messageItem(m, live));
    });
    this.element.append(fragment);
  }

  // An earlier page (oldest first), shown above what is there.
  prepend(messages) {
    const fragment = document.createDocumentFragment();
    messages.forEach((m) => fragment.append(messageItem(m, null)));
    this.element.prepend(fragment);
  }

  // One event of a stream: a new message, or a piece of one already shown.
  take(event) {
    const key = `${event.id}:${event.message_type}`;
    const shown = this.byKey.get(key);
    if (!shown) {
      const entry = { ...event };
      const li = messageItem(entry, this.onApprove);
      this.byKey.set(key, { entry, li });
      this.element.append(li);
      this.scroll();
      return;
    }
    const { entry, li } = shown;
    if (event.message_type === "assistant_message" || event.message_type === "user_message") {
      entry.content = text(entry.content) + text(event.content);
    } else if (event.message_type === "reasoning_message") {
      entry.reasoning = (entry.reasoning || "") + (event.reasoning || "");
    } else if (event.message_type === "tool_call_message" || event.message_type === "approval_request_message") {
      const piece = calls(event)[0];
      const mine = calls(entry)[0];
      if (piece && mine) {
        entry.tool_call = { ...mine, name: mine.name || piece.name, arguments: (mine.arguments || "") + (piece.arguments || "") };
        delete entry.tool_calls;
      }
    } else {
      Object.assign(entry, event);
    }
    li.replaceChildren(li.firstChild);
    fill(li, entry, this.onApprove);
    this.scroll();
  }

  scroll() {
    this.element.scrollTop = this.element.scrollHeight;
  }
}

// What every page shares: how long a list's page is, the tabs of an agent, and how a page
// draws itself again after a change (the shell registers `render`; the chat workspace sets
// `afterTurn` to draw its memory pane alone).

import { announce, h } from "./dom.js";

// How many of a list one page shows; more come a page at a time.
export const PAGE = 100;

export const shell = {
  render: () => {},
  // What runs when a chat's turn ends (the workspace's memory pane draws itself again).
  afterTurn: null,
};

// After a change made on the page: the workspace's memory pane, or the whole page, again.
export const redraw = () => (shell.afterTurn ? shell.afterTurn() : shell.render());

// Lists go to their end a page at a time: a button that asks `next` for the page after the
// last one shown (the API's cursor); `next` draws it and answers whether more may follow (a
// full page); the button goes when none do.
export function moreButton(text, more, next) {
  const button = h("button", { type: "button", class: "secondary", hidden: !more || null, onclick: async () => {
    button.hidden = !(await next());
    announce(button.hidden ? "The list's end" : "More shown");
  } }, text);
  return button;
}

export function tabs(agent, current) {
  const link = (href, text, name) => h("a", { href, "aria-current": current === name ? "page" : null }, text);
  return h("nav", { class: "tabs", "aria-label": "Agent" },
    link(`#/agents/${agent.id}`, "Overview", "agent"),
    link(`#/agents/${agent.id}/chat`, "Chat", "chat"),
    link(`#/agents/${agent.id}/runs`, "Runs", "runs"),
    link(`#/agents/${agent.id}/history`, "History", "history"));
}

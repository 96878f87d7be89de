// Cairn's console: one page per hash route, each drawn from the API with the key of this
// tab's session. This is the shell (routes, sign-in, drawing a page); each page is a module
// of its own.

import { agentPage } from "./agent.js";
import { agentsPage } from "./agents.js";
import { ApiError, get, session } from "./api.js";
import { chatPage } from "./chat.js";
import { field, h } from "./dom.js";
import { historyPage } from "./history.js";
import { mcpPage } from "./mcp.js";
import { providersPage } from "./providers.js";
import { shell } from "./page.js";
import { runPage, runsPage } from "./runs.js";
import { usagePage } from "./usage.js";

const view = document.getElementById("view");
const signOut = document.getElementById("sign-out");

const routes = [
  [/^#?\/?(\?.*)?$/, "agents", agentsPage],
  [/^#\/agents\/([\w-]+)$/, "agent", agentPage],
  [/^#\/agents\/([\w-]+)\/chat$/, "chat", chatPage],
  [/^#\/agents\/([\w-]+)\/runs$/, "runs", runsPage],
  [/^#\/agents\/([\w-]+)\/history$/, "history", historyPage],
  [/^#\/runs\/([\w-]+)$/, "run", runPage],
  [/^#\/usage(\?.*)?$/, "usage", usagePage],
  [/^#\/mcp$/, "mcp", mcpPage],
  [/^#\/providers$/, "providers", providersPage],
];

let current = 0; // the latest render: an older one still loading must not draw over it

async function render() {
  const mine = ++current;
  const started = performance.now();
  delete document.body.dataset.page;
  view.classList.remove("wide");
  shell.afterTurn = null;
  signOut.hidden = !session.key;
  if (!session.key) {
    signIn();
    return;
  }
  const found = routes.map(([re, name, page]) => [location.hash.match(re), name, page])
    .find(([m]) => m);
  if (!found) {
    show("Not found", h("p", {}, "No such page. ", h("a", { href: "#/" }, "Back to the agents")));
    return;
  }
  const [match, name, page] = found;
  const draw = (title, ...content) => { if (mine === current) show(title, ...content); };
  try {
    await page(draw, ...match.slice(1));
  } catch (err) {
    if (mine !== current) return;
    if (err instanceof ApiError && err.status === 401) {
      session.key = null;
      signIn("The key was refused. Sign in again.");
      return;
    }
    show("Something went wrong", h("p", { class: "error", role: "alert" }, String(err.message || err)));
  }
  if (mine !== current) return;
  // The time from the route's start to its page drawn, read by the browser tests.
  document.body.dataset.renderMs = (performance.now() - started).toFixed(1);
  document.body.dataset.page = name;
}

function show(title, ...content) {
  const heading = h("h1", { tabindex: "-1" }, title);
  view.replaceChildren(heading, ...content.filter((c) => c !== null && c !== undefined && c !== false));
  document.title = `${title} · Cairn console`;
  heading.focus();
}

function signIn(problem) {
  const key = h("input", { type: "password", autocomplete: "current-password", required: true });
  const form = h("form", {
    onsubmit: async (e) => {
      e.preventDefault();
      session.key = key.value.trim();
      try {
        await get("/v1/agents/", { limit: 1 });
        location.hash = location.hash || "#/";
        render();
      } catch (err) {
        session.key = null;
        signIn(err instanceof ApiError && err.status === 401 ? "That key was refused." : String(err.message));
      }
    },
  },
  field("API key", key, h("p", { class: "muted" },
    "Kept in this tab only: it is gone when the tab closes.")),
  h("p", {}, h("button", { type: "submit" }, "Sign in")));
  show("Sign in", problem ? h("p", { class: "error", role: "alert" }, problem) : null, form);
  document.body.dataset.page = "sign-in";
}

signOut.addEventListener("click", () => {
  session.key = null;
  location.hash = "#/";
  render();
});

shell.render = render;
window.addEventListener("hashchange", render);
render();

// Building the page: elements from data, text always as text (agents' names, memories and
// messages are anyone's words: nothing they say is ever parsed as HTML).

export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === "value") el.value = value;
    // Through the CSSOM: the policy refuses inline style attributes, not this.
    else if (key === "style") el.style.cssText = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function field(label, input, hint) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  input.id = id;
  return h("div", {}, h("label", { for: id, text: label }), input, hint || null);
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function announce(text) {
  const el = document.getElementById("announce");
  if (el) el.textContent = text;
}

// What a form's submit does: `act`, the page not left, and what it throws said in the form's
// alert line (`problem`, cleared first; the form places it).
export function submitting(act) {
  const problem = h("p", { class: "error", role: "alert" });
  const onsubmit = async (e) => {
    e.preventDefault();
    problem.textContent = "";
    try {
      await act();
    } catch (err) {
      problem.textContent = err.message;
    }
  };
  return { problem, onsubmit };
}

// The API as the console calls it: the key kept in this tab's session only (never on disk),
// JSON in and out, Letta's errors as exceptions, and SSE streams read as they arrive.

const KEY = "cairn.console.key";

export const session = {
  get key() { return sessionStorage.getItem(KEY); },
  set key(value) {
    if (value) sessionStorage.setItem(KEY, value); else sessionStorage.removeItem(KEY);
  },
};

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

function detailOf(status, data) {
  const d = data && (data.detail ?? data.error?.message ?? data.error);
  if (Array.isArray(d)) return d.map((e) => `${(e.loc || []).join(".")}: ${e.msg}`).join("; ");
  if (typeof d === "string") return d;
  return d ? JSON.stringify(d) : `HTTP ${status}`;
}

function headers(json) {
  const h = { Authorization: `Bearer ${session.key}` };
  if (json) h["Content-Type"] = "application/json";
  return h;
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === "") continue;
    for (const one of Array.isArray(v) ? v : [v]) q.append(k, one);
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

export async function call(method, path, body) {
  const res = await fetch(path, {
    method, headers: headers(body !== undefined),
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { detail: text.slice(0, 300) }; }
  if (!res.ok) throw new ApiError(res.status, detailOf(res.status, data));
  return data;
}

export const get = (path, params = {}) => call("GET", path + query(params));

// POST a file (an agent file to import, a folder's document) as a multipart form's `file`.
export async function upload(path, file) {
  const form = new FormData();
  form.append("file", file);
  const res = await fetch(path, { method: "POST", headers: headers(false), body: form });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { detail: text.slice(0, 300) }; }
  if (!res.ok) throw new ApiError(res.status, detailOf(res.status, data));
  return data;
}

// POST a streamed send and hand each event to `onEvent` as it arrives; resolves at [DONE].
export async function stream(path, body, onEvent) {
  const res = await fetch(path, { method: "POST", headers: headers(true), body: JSON.stringify(body) });
  if (!res.ok) {
    const text = await res.text();
    let data = null;
    try { data = JSON.parse(text); } catch { data = { detail: text.slice(0, 300) }; }
    throw new ApiError(res.status, detailOf(res.status, data));
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      for (const line of frame.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") return;
        let event;
        try { event = JSON.parse(data); } catch { continue; } // a frame cut short: skipped
        onEvent(event);
      }
    }
  }
}

// Calls to the control API, relative to the page so the console works
// under any path prefix. The session cookie travels by itself; every
// state-changing call carries the CSRF token GET/POST v1/login gave.
let csrf = "";

export class APIError extends Error {
  constructor(status, body) {
    super((body && body.error) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export async function call(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && csrf) headers["X-CSRF-Token"] = csrf;
  const res = await fetch(path, {
    method, headers, credentials: "same-origin", cache: "no-store",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 204) return null;
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new APIError(res.status, data);
  return data;
}

export async function login(body) {
  const info = await call("POST", "v1/login", body);
  csrf = info.csrf_token || "";
  return info;
}

export async function whoami() {
  const info = await call("GET", "v1/login");
  csrf = info.csrf_token || "";
  return info;
}

export const logout = () => call("POST", "v1/logout");
export const sessions = () => call("GET", "v1/sessions");
export const permissions = () => call("GET", "v1/permissions");
export const held = () => call("GET", "v1/held");
export const send = (to, text) => call("POST", "v1/messages", { to, body: text });
export const answer = (id, a) => call("POST", `v1/permissions/${encodeURIComponent(id)}`, a);
export const decide = (id, action, reason) =>
  call("POST", `v1/held/${encodeURIComponent(id)}`, reason ? { action, reason } : { action });
export const control = (address, kind, mode) => call("POST", "v1/control", { address, kind, mode });
export const away = () => call("GET", "v1/away");
export const setAway = (on) => call("PUT", "v1/away", { away: on });
export const startSession = (spec) => call("POST", "v1/local/sessions", spec);
export const stopSession = (name) => call("DELETE", `v1/local/sessions/${encodeURIComponent(name)}`);

// The console: sign-in, then the lists (prompts, held messages, sessions)
// refreshed whenever the event stream says they changed, and the stream
// itself, resumed from the last event id after any drop.
import * as api from "./api.js";
import { renderPrompt, answeredText } from "./prompts.js";
import { el, clear } from "./dom.js";
import { renderSessions, hostedEvent } from "./sessions.js";
import { setupStart, showStart } from "./start.js";

const $ = (id) => document.getElementById(id);
const EVENT_TYPES = ["message", "receipt", "idle", "held", "drop", "session", "remote_event",
  "permission_request", "remote_link", "gap", "error"];
const MAX_EVENTS = 200;
const MAX_OUTPUT = 20;
const MAX_ANSWERED = 10;

let scopes = new Set();
let awayOn = false;
let lastEventID = null;
let source = null;
const output = new Map(); // address -> {message_id, text}
const titles = new Map(); // address -> the session's title or name, from the last listing

function showError(err) {
  $("error").textContent = err ? String(err.message || err) : "";
}

function act(fn) {
  return async (ev) => {
    if (ev) ev.preventDefault();
    const btn = ev && ev.currentTarget;
    if (btn) btn.disabled = true;
    try {
      showError(null);
      await fn();
    } catch (err) {
      showError(err);
      if (err.status === 401) signedOut();
    } finally {
      if (btn) btn.disabled = false;
    }
  };
}

async function start() {
  $("login-form").addEventListener("submit", act(async () => {
    try {
      await signedIn(await api.login({ token: $("token").value.trim() }));
      $("token").value = "";
    } catch (err) {
      $("login-error").textContent = err.message;
    }
  }));
  $("logout").addEventListener("click", act(async () => { await api.logout(); signedOut(); }));
  $("away-toggle").addEventListener("click", act(async () => showAway(await api.setAway(!awayOn))));
  setupStart(act, () => refreshSessions());
  const pair = new URLSearchParams(location.hash.slice(1)).get("pair");
  if (pair) {
    // Drop the code from the address bar and history before using it.
    history.replaceState(null, "", location.pathname + location.search);
    try {
      await signedIn(await api.login({ pairing: pair }));
    } catch (err) {
      signedOut();
      $("login-error").textContent = err.message;
    }
    return;
  }
  try {
    await signedIn(await api.whoami());
  } catch {
    signedOut();
  }
}

function signedOut() {
  if (source) source.close();
  source = null;
  $("app").hidden = true;
  $("logout").hidden = true;
  $("login").hidden = false;
  $("who").textContent = "";
  setLink(false);
}

async function signedIn(info) {
  scopes = new Set(info.scopes.split(","));
  $("who").textContent = `${info.label} · ${info.scopes}${scopes.has("approve") ? "" : " (read only)"}`;
  $("login").hidden = true;
  $("login-error").textContent = "";
  $("app").hidden = false;
  $("logout").hidden = false;
  showStart(scopes.has("send"));
  connect();
  await refreshAll();
}

function setLink(live) {
  $("link").textContent = live ? "live" : "offline";
  $("link").classList.toggle("live", live);
}

// connect opens the event stream. The browser resumes a dropped stream by
// itself with Last-Event-ID; when it gives up (the stream closed), this
// opens a new one from the last id seen, so nothing is lost either way.
function connect() {
  if (source) source.close();
  const url = lastEventID === null ? "v1/events" : `v1/events?last_event_id=${lastEventID}`;
  source = new EventSource(url);
  const me = source;
  source.onopen = () => { setLink(true); refreshAll().catch(showError); };
  source.onerror = () => {
    setLink(false);
    if (me.readyState === EventSource.CLOSED && source === me) {
      setTimeout(() => { if (source === me) connect(); }, 1000);
    }
  };
  for (const t of EVENT_TYPES) source.addEventListener(t, onEvent);
}

function onEvent(e) {
  if (e.lastEventId) lastEventID = e.lastEventId;
  let ev;
  try { ev = JSON.parse(e.data); } catch { return; }
  logEvent(ev);
  switch (ev.type) {
    // No event says the away switch moved; a prompt is when it matters.
    case "permission_request": refreshPrompts().catch(showError); refreshAway().catch(showError); break;
    case "held": case "drop": refreshHeld().catch(showError); break;
    case "session": refreshSessions().catch(showError); break;
    case "message": refreshHeld().catch(showError); break;
    case "remote_event":
      if (ev.leg === "hosted") { if (hostedEvent(ev.remote)) soonSessions(); } else remoteOutput(ev.remote);
      break;
  }
}

function summary(ev) {
  const m = ev.message, r = ev.receipt, p = ev.permission, rem = ev.remote;
  switch (ev.type) {
    case "message": return `${m.from_name || m.from} → ${m.to}: ${m.body}`;
    case "receipt": return `${r.msg_id} ${r.status || ""}${r.reason ? ": " + r.reason : ""}`;
    case "held": return `held from ${ev.held.message.from_name || ev.held.message.from}: ${ev.held.reason}`;
    case "permission_request": return `prompt ${p.id} ${p.tool_name} ${p.state}`;
    case "remote_event": return `${rem.address} ${rem.kind}${rem.text ? ": " + rem.text.slice(0, 120) : ""}`;
    case "session": return `${ev.session.address} ${ev.session.status || ""}`;
    case "idle": return `${ev.idle.peer || ""} idle`;
    default: return ev.error || "";
  }
}

function logEvent(ev) {
  const list = $("events");
  const li = el("li", { "data-id": String(ev.id ?? "") }, `#${ev.id ?? "-"} ${ev.type} ${summary(ev)}`);
  list.prepend(li);
  while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
}

function remoteOutput(rem) {
  if (!rem || !rem.text || (rem.kind !== "assistant" && rem.kind !== "result")) return;
  output.set(rem.address, { kind: rem.kind, text: rem.text, final: rem.final });
  while (output.size > MAX_OUTPUT) output.delete(output.keys().next().value);
  const box = clear($("output"));
  for (const [addr, o] of output) {
    const title = titles.get(addr);
    box.append(el("div", { class: "card", "data-address": addr },
      el("h3", {}, title || addr), title ? el("p", { class: "muted" }, addr) : null,
      el("pre", {}, o.text), el("span", { class: "muted" }, o.final ? "done" : "streaming…")));
  }
}

// The sessions come first: their titles name the prompts' cards.
async function refreshAll() {
  await refreshSessions();
  await Promise.all([refreshPrompts(), refreshHeld(), refreshAway()]);
}

async function refreshAway() {
  showAway(await api.away());
}

// showAway shows the away switch: while on, a local session's prompt waits
// for an answer from here (or elsewhere) instead of going back to its
// terminal. Only an approve sign-in may flip it.
function showAway(st) {
  awayOn = Boolean(st && st.away);
  const b = $("away-toggle");
  b.textContent = awayOn ? "Away: on" : "Away: off";
  b.setAttribute("aria-pressed", String(awayOn));
  b.classList.toggle("on", awayOn);
  b.hidden = !scopes.has("approve");
  const since = st && st.since ? ` (since ${new Date(st.since).toLocaleString()})` : "";
  $("away-state").textContent = (awayOn
    ? "Away: local sessions' prompts wait here for an answer"
    : "Here: a local session's prompt goes back to its terminal if nobody answers soon") + since +
    (scopes.has("approve") ? "" : "; this sign-in cannot switch it");
}

async function refreshPrompts() {
  const ps = await api.permissions();
  const box = clear($("prompts"));
  $("prompt-count").textContent = ps.length ? `(${ps.length})` : "";
  if (!ps.length) box.append(el("p", { class: "muted" }, "Nothing waits for an answer."));
  for (const p of ps) box.append(promptCard(p));
}

// promptCard renders one prompt; one the console cannot show is a card
// saying so, never a reason to hide the prompts after it.
function promptCard(p) {
  try {
    return renderPrompt(named(p), scopes.has("approve"), act, (settled) => showAnswered(named(settled)));
  } catch (e) {
    return el("div", { class: "card prompt", "data-id": String(p && p.id) },
      el("h3", {}, `${p && p.tool_name} · ${p && p.address}`),
      el("p", { class: "muted" }, `This prompt cannot be shown here (${e.message}); answer or deny it with gateway answer, allow or deny.`));
  }
}

// named gives a prompt without a name its session's title, so its card is
// not titled with a raw address.
function named(p) {
  return p && !p.name && titles.get(p.address) ? { ...p, name: titles.get(p.address) } : p;
}

// showAnswered keeps a line per answer given here (the newest first): what
// was sent, and who the gateway says answered.
function showAnswered(p) {
  const list = $("answered");
  list.prepend(el("li", { class: "answered", "data-id": p.id }, answeredText(p)));
  while (list.children.length > MAX_ANSWERED) list.lastElementChild.remove();
}

async function refreshHeld() {
  const hs = await api.held();
  const box = clear($("held"));
  $("held-count").textContent = hs.length ? `(${hs.length})` : "";
  if (!hs.length) box.append(el("p", { class: "muted" }, "No held messages."));
  for (const h of hs) {
    const m = h.message;
    const reason = el("input", { type: "text", placeholder: "reason (deny)", "aria-label": "reason" });
    const card = el("div", { class: "card held", "data-id": m.id },
      el("h3", {}, `from ${m.from_name || m.from}`),
      el("span", { class: "muted" }, h.reason), el("pre", {}, m.body));
    if (scopes.has("approve")) {
      const release = el("button", { class: "primary" }, "Release");
      const deny = el("button", { class: "danger" }, "Deny");
      release.addEventListener("click", act(async () => { await api.decide(m.id, "release"); await refreshHeld(); }));
      deny.addEventListener("click", act(async () => { await api.decide(m.id, "deny", reason.value); await refreshHeld(); }));
      card.append(el("div", { class: "row" }, reason, release, deny));
    }
    box.append(card);
  }
}

async function refreshSessions() {
  const ss = await api.sessions();
  titles.clear();
  for (const s of ss) if (s.title || s.name) titles.set(s.address, s.title || s.name);
  renderSessions($("sessions"), ss, { canSend: scopes.has("send"), act, refresh: refreshSessions });
}

// soonSessions lists the sessions again shortly: a hosted session's state
// changes with its output, which comes in bursts.
let sessionsTimer = null;
function soonSessions() {
  if (sessionsTimer) return;
  sessionsTimer = setTimeout(() => { sessionsTimer = null; refreshSessions().catch(showError); }, 250);
}

start();

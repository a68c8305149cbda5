// The session cards. Every session gets a send box for a send sign-in; a
// hosted one (a CLI the gateway started, leg/hosted) also shows its agent,
// directory and state, its output as it arrives, and a Stop button.
import * as api from "./api.js";
import { el, clear } from "./dom.js";

const MAX_LINES = 50; // kept per hosted session
const MAX_KEPT = 32; // hosted sessions whose output is kept
const transcripts = new Map(); // address -> [{kind, id, text}]

// hostedEvent keeps one remote_event of a hosted session (its user turns
// and the assistant's text) and shows it in the session's card. It says
// whether the session's state may have changed, so the caller can list
// the sessions again.
export function hostedEvent(rem) {
  if (!rem || !rem.address) return false;
  const kind = rem.kind;
  if ((kind === "user" || kind === "assistant" || kind === "result") && rem.text) {
    const lines = transcripts.get(rem.address) || [];
    transcripts.delete(rem.address); // re-insert: the most recently heard is kept longest
    transcripts.set(rem.address, lines);
    const id = kind === "user" ? rem.uuid : rem.message_id;
    const last = lines[lines.length - 1];
    if (id && last && last.kind === kind && last.id === id) {
      last.text = rem.text;
    } else if (!(kind === "result" && last && last.kind === "assistant" && last.text === rem.text)) {
      lines.push({ kind: kind === "result" ? "assistant" : kind, id, text: rem.text });
    }
    while (lines.length > MAX_LINES) lines.shift();
    while (transcripts.size > MAX_KEPT) transcripts.delete(transcripts.keys().next().value);
    const box = document.querySelector(`.session[data-address="${CSS.escape(rem.address)}"] .transcript`);
    if (box) fill(box, lines);
  }
  return kind === "system" || kind === "user" || kind === "result";
}

function fill(box, lines) {
  clear(box);
  if (!lines || !lines.length) {
    box.append(el("p", { class: "muted" }, "No output yet."));
    return;
  }
  for (const l of lines) box.append(el("pre", { class: `line ${l.kind}` }, l.kind === "user" ? `› ${l.text}` : l.text));
  box.scrollTop = box.scrollHeight;
}

// renderSessions lists ss in box. What was typed in a send box survives
// the new listing.
export function renderSessions(box, ss, { canSend, act, refresh }) {
  const typed = new Map();
  for (const i of box.querySelectorAll("input[data-for]")) if (i.value) typed.set(i.dataset.for, i.value);
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.for : undefined;
  clear(box);
  if (!ss.length) box.append(el("p", { class: "muted" }, "No sessions."));
  for (const s of ss) {
    const hosted = s.protocol === "hosted";
    const card = el("div", { class: hosted ? "card session hosted" : "card session", "data-address": s.address },
      el("h3", {}, s.title || s.name || s.address));
    if (hosted) {
      const state = s.status || "unknown";
      card.append(el("div", { class: "row meta" },
        el("span", { class: "badge agent" }, s.kind || "agent"),
        el("span", { class: `badge state state-${state}`, "data-state": state }, state),
        el("span", { class: "muted cwd" }, s.cwd || "")));
      card.append(el("span", { class: "muted" }, s.address));
      const out = el("div", { class: "transcript", "aria-label": `output of ${s.address}` });
      fill(out, transcripts.get(s.address));
      card.append(out);
    } else {
      card.append(el("span", { class: "muted" }, `${s.address} · ${s.protocol} · ${s.status || (s.reachable ? "reachable" : "unreachable")}`));
    }
    if (canSend) {
      const text = el("input", { type: "text", placeholder: "message", "aria-label": `message to ${s.address}`, "data-for": s.address });
      text.value = typed.get(s.address) || "";
      const send = el("button", { class: "primary" }, "Send");
      // A message does not resolve a hosted address (hosted:NAME), nor
      // the ref the hosted leg lists; the session's name it does.
      const to = hosted && s.name ? `name:${s.name}` : s.address;
      send.addEventListener("click", act(async () => {
        if (!text.value.trim()) return;
        await api.send(to, text.value);
        text.value = "";
      }));
      const row = el("div", { class: "row" }, text, send);
      if (hosted) {
        const stop = el("button", { class: "danger stop" }, "Stop");
        stop.addEventListener("click", act(async () => {
          await api.stopSession(s.name);
          transcripts.delete(s.address);
          await refresh();
        }));
        row.append(stop);
      }
      card.append(row);
      if (focused === s.address) queueMicrotask(() => text.focus());
    }
    box.append(card);
  }
}

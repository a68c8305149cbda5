// One pending permission prompt with the controls its kind needs: a
// question's options as buttons, a plan shown with a mode to continue in,
// or a tool's allow / always allow / deny with a reason.
import * as api from "./api.js";
import { el } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

// The gateway's kinds: tool_use, question, plan_approval, other.
export function kindOf(p) {
  if (p.kind === "plan_approval") return "plan";
  if (p.kind === "question") return "question";
  if (p.kind) return "tool";
  if (p.questions && p.questions.length) return "question";
  if (p.tool_name === "ExitPlanMode") return "plan";
  return "tool";
}

// rulesOf turns a suggestion into the answer's rules: Claude's addRules
// suggestions carry toolName / ruleContent.
function rulesOf(s) {
  const rules = (s && s.rules) || [];
  return rules.map((r) => ({ tool_name: r.toolName || r.tool_name, rule_content: r.ruleContent || r.rule_content }))
    .filter((r) => r.tool_name);
}

function suggestionLabel(s) {
  const rules = rulesOf(s);
  if (rules.length) return "Always allow " + rules.map((r) => r.rule_content ? `${r.tool_name}(${r.rule_content})` : r.tool_name).join(", ");
  if (s.type === "setMode") return "Allow, and switch to " + s.mode;
  if (s.directories && s.directories.length) return (s.type === "removeDirectories" ? "Allow, and remove " : "Allow, and add ") + s.directories.join(", ");
  return "Always allow (" + (s.type || "suggestion") + ")";
}

// sourceOf says where a prompt came from: a claude.ai remote session (an
// empty source is one), a local session's hook or channel, or a session
// the gateway started (hosted).
export function sourceOf(p) {
  return ["hook", "channel", "hosted"].includes(p.source) ? p.source : "remote";
}

function sourceBadge(p) {
  const src = sourceOf(p);
  const label = src === "remote" ? "remote" : `local · ${src}`;
  const title = src === "hook" ? "a local Claude Code session's PermissionRequest hook waits for this answer"
    : src === "channel" ? "a local session's channel waits for this answer"
    : src === "hosted" ? "a session the gateway started (its CLI run headless) waits for this answer" : "a claude.ai remote session";
  return el("span", { class: `badge source source-${src}`, title }, label);
}

// answeredText says what the gateway sent for a settled prompt and who
// answered, from the prompt as the gateway settled it.
export function answeredText(p) {
  const a = p.answer || {};
  const parts = [a.behavior || p.state || "answered"];
  for (const n of a.suggestions || []) {
    const s = (p.suggestions || [])[n - 1];
    parts.push(s ? suggestionLabel(s) : `suggestion ${n}`);
  }
  const rules = rulesOf({ rules: a.rules });
  if (rules.length) parts.push(suggestionLabel({ rules: a.rules }));
  if (a.mode) parts.push("mode " + a.mode);
  for (const [q, labels] of Object.entries(a.answers || {})) parts.push(`${q} ${labels.join(", ")}`);
  if (a.message) parts.push(`"${a.message}"`);
  return `${p.tool_name} · ${p.name || p.address || p.session_id}: sent ${parts.join("; ")} · by ${p.answered_by || "unknown"}`;
}

// renderPrompt renders p; answered(settled) is called with the prompt as
// the gateway settled it.
export function renderPrompt(p, canAnswer, act, answered = () => {}) {
  const kind = kindOf(p);
  const card = el("div", { class: `card prompt prompt-${kind}`, "data-id": p.id, "data-source": sourceOf(p) },
    el("h3", {}, `${p.tool_name} · ${p.name || p.address || p.session_id} `, sourceBadge(p)));
  if (p.name && p.address) card.append(el("p", { class: "muted" }, p.address + (p.host ? ` on ${p.host}` : "")));
  if (p.description) card.append(el("p", {}, p.description));
  const done = async (a) => { const settled = await api.answer(p.id, a); card.remove(); answered(settled || p); };
  if (kind === "question") {
    renderQuestions(card, p, canAnswer, act, done);
  } else if (kind === "plan") {
    const plan = p.input && typeof p.input.plan === "string" ? renderMarkdown(p.input.plan) : el("pre", {}, JSON.stringify(p.input, null, 2));
    plan.classList.add("plan");
    card.append(plan);
    if (canAnswer) {
      const mode = el("select", { "aria-label": "mode after the plan" },
        el("option", { value: "default" }, "then ask before edits"),
        el("option", { value: "acceptEdits" }, "then accept edits"));
      const approve = el("button", { class: "primary" }, "Approve plan");
      // The mode switch goes in the same answer (a setMode update).
      approve.addEventListener("click", act(() => done(mode.value !== "default" ? { behavior: "allow", mode: mode.value } : { behavior: "allow" })));
      card.append(el("div", { class: "row" }, mode, approve), denyRow(p, act, done));
    }
  } else {
    card.append(el("pre", {}, JSON.stringify(p.input, null, 2)));
    if (canAnswer) {
      const allow = el("button", { class: "primary" }, "Allow");
      allow.addEventListener("click", act(() => done({ behavior: "allow" })));
      const row = el("div", { class: "row" }, allow);
      // Only the session's own suggestions, back by number as offered: a
      // rule it did not offer is not the console's to invent.
      (p.suggestions || []).forEach((s, i) => {
        const b = el("button", { class: "always", "data-suggestion": String(i) }, suggestionLabel(s));
        b.addEventListener("click", act(() => done({ behavior: "allow", suggestions: [i + 1] })));
        row.append(b);
      });
      card.append(row, denyRow(p, act, done));
    }
  }
  if (!canAnswer) card.append(el("p", { class: "muted" }, "Read only: this sign-in cannot answer."));
  return card;
}

function denyRow(p, act, done) {
  const reason = el("input", { type: "text", placeholder: "reason for the model", "aria-label": "deny reason" });
  const deny = el("button", { class: "danger" }, "Deny");
  deny.addEventListener("click", act(() => done(reason.value ? { behavior: "deny", message: reason.value } : { behavior: "deny" })));
  return el("div", { class: "row" }, reason, deny);
}

function renderQuestions(card, p, canAnswer, act, done) {
  const picked = new Map(); // question -> Set of labels
  for (const q of p.questions || []) {
    picked.set(q.question, new Set());
    const row = el("div", { class: "row question", role: q.multi_select ? "group" : "radiogroup" });
    for (const label of q.options || []) {
      const b = el("button", { class: "option", "aria-pressed": "false", type: "button" }, label);
      b.disabled = !canAnswer;
      b.addEventListener("click", () => {
        const set = picked.get(q.question);
        if (q.multi_select) {
          set.has(label) ? set.delete(label) : set.add(label);
        } else {
          set.clear();
          set.add(label);
        }
        for (const o of row.querySelectorAll("button.option")) o.setAttribute("aria-pressed", String(set.has(o.textContent)));
        submit.disabled = ![...picked.values()].every((s) => s.size > 0);
      });
      row.append(b);
    }
    card.append(el("p", {}, (q.header ? q.header + ": " : "") + q.question + (q.multi_select ? " (pick any)" : "")), row);
  }
  const submit = el("button", { class: "primary submit" }, "Send answer");
  submit.disabled = true;
  submit.addEventListener("click", act(() => {
    const answers = {};
    for (const [q, set] of picked) answers[q] = [...set];
    return done({ behavior: "allow", answers });
  }));
  if (canAnswer) card.append(el("div", { class: "row" }, submit), denyRow(p, act, done));
}

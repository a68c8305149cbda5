// The "Start a session" form: POST v1/local/sessions starts Claude Code or
// Qwen Code headless, run by the gateway in a directory of its user's. A
// failure is shown under the form as the gateway said it.
import * as api from "./api.js";

const $ = (id) => document.getElementById(id);

export function setupStart(act, started) {
  $("start-form").addEventListener("submit", act(async () => {
    $("start-error").textContent = "";
    $("start-done").textContent = "";
    const spec = {
      agent: $("start-agent").value,
      cwd: $("start-cwd").value.trim(),
      name: $("start-name").value.trim(),
      prompt: $("start-prompt").value,
      permission_mode: $("start-mode").value,
      model: $("start-model").value.trim(),
    };
    for (const k of Object.keys(spec)) if (!spec[k]) delete spec[k];
    let s;
    try {
      s = await api.startSession(spec);
    } catch (err) {
      $("start-error").textContent = err.message;
      if (err.status === 401) throw err;
      return;
    }
    $("start-name").value = "";
    $("start-prompt").value = "";
    $("start-done").textContent = `Started ${s.address}.`;
    await started(s);
  }));
}

// showStart shows the form to a sign-in that may start sessions (scope send).
export function showStart(canSend) {
  $("start").hidden = !canSend;
}

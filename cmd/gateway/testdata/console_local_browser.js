// Drives the web console in headless Chromium for
// TestTheConsoleAnswersALocalSessionsHookPrompt: the Go test is the
// director, running a local session's PermissionRequest hook for each step
// and checking what the hook printed. Any console error or failed request
// fails the run.
"use strict";
const { chromium } = require(process.env.PLAYWRIGHT_CORE);
const path = require("path");

const director = process.env.DIRECTOR;
const shots = process.env.SCREENSHOTS;

async function step(name, args = {}) {
  const res = await fetch(director, { method: "POST", body: JSON.stringify({ step: name, args }) });
  const text = await res.text();
  if (!res.ok) throw new Error(`step ${name}: ${res.status} ${text}`);
  return text.trim() ? JSON.parse(text) : null;
}

function log(...a) { console.log(new Date().toISOString(), ...a); }

async function run(browser, width, height) {
  const size = `${width}x${height}`;
  const ctx = await browser.newContext({ viewport: { width, height }, hasTouch: width < 600, isMobile: width < 600 });
  const page = await ctx.newPage();
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error") problems.push(`console error: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure() && r.failure().errorText}`));
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.request().method()} ${r.url()}`);
  });
  const shot = async (view) => {
    const noScroll = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    if (!noScroll) throw new Error(`${size} ${view}: the page scrolls horizontally`);
    await page.screenshot({ path: path.join(shots, `${size}-${view}.png`), fullPage: true });
  };
  const tap = async (locator) => (width < 600 ? locator.tap() : locator.click());

  const { url } = await step("pair");
  await page.goto(url);
  await page.locator("#link.live").waitFor();
  await page.locator("#who", { hasText: "approve" }).waitFor();

  // The away toggle shows the switch, and flips it.
  const toggle = page.locator("#away-toggle");
  await page.locator('#away-toggle[aria-pressed="false"]', { hasText: "Away: off" }).waitFor();
  await tap(toggle);
  await page.locator('#away-toggle[aria-pressed="true"]', { hasText: "Away: on" }).waitFor();
  await page.locator("#away-state", { hasText: "wait here" }).waitFor();
  await step("check-away", { want: "on" });
  await shot("local-away");
  log(size, "away on");

  // A local session's hook asks; the prompt shows as the session's, from
  // its hook, and Allow is the hook's decision.
  const allowCmd = `make deploy ${size}`;
  await step("hook", { command: allowCmd });
  const p = page.locator('.prompt[data-source="hook"]', { hasText: allowCmd });
  await p.waitFor();
  await p.locator("h3", { hasText: "Bash · deploy-box" }).waitFor();
  await p.locator(".badge.source-hook", { hasText: "local · hook" }).waitFor();
  await p.locator("button.always", { hasText: `Always allow Bash(${allowCmd})` }).waitFor();
  await shot("local-prompt");
  await tap(p.getByRole("button", { name: "Allow", exact: true }));
  await p.waitFor({ state: "detached" });
  await step("check-hook", { command: allowCmd, decision: '{"behavior":"allow"}' });
  log(size, "allowed: the hook printed the allow");

  // The session's suggestion, as an "always allow" choice.
  const alwaysCmd = `make test ${size}`;
  await step("hook", { command: alwaysCmd });
  const a = page.locator('.prompt[data-source="hook"]', { hasText: alwaysCmd });
  await tap(a.locator("button.always"));
  await a.waitFor({ state: "detached" });
  await step("check-hook", {
    command: alwaysCmd,
    decision: `{"behavior":"allow","updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"${alwaysCmd}"}],"behavior":"allow","destination":"localSettings"}]}`,
  });
  log(size, "always allowed: the hook printed the rule");

  // A deny, with a reason for the model.
  const denyCmd = `rm -rf build ${size}`;
  await step("hook", { command: denyCmd });
  const d = page.locator('.prompt[data-source="hook"]', { hasText: denyCmd });
  await d.getByRole("textbox", { name: "deny reason" }).fill("not on a Friday");
  await tap(d.getByRole("button", { name: "Deny" }));
  await d.waitFor({ state: "detached" });
  await step("check-hook", { command: denyCmd, decision: '{"behavior":"deny","message":"not on a Friday"}' });
  log(size, "denied: the hook printed the deny and its reason");

  await tap(toggle);
  await page.locator('#away-toggle[aria-pressed="false"]', { hasText: "Away: off" }).waitFor();
  await step("check-away", { want: "off" });
  await shot("local-here");
  log(size, "away off");

  if (problems.length) throw new Error(`${size}:\n  ${problems.join("\n  ")}`);
  await ctx.close();
}

(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });
  try {
    await run(browser, 360, 740);
    await run(browser, 1280, 800);
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});

// Drives the web console in headless Chromium for
// TestTheConsoleStartsDrivesAndStopsAHostedSession: the Go test is the
// director, pairing sign-ins, making directories and checking what the API
// lists. Any console error or failed request fails the run, but the one
// start the test means to fail.
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

const opened = []; // every page, so a failure can say what each showed

async function open(browser, width, height, scope) {
  const ctx = await browser.newContext({ viewport: { width, height }, hasTouch: width < 600, isMobile: width < 600 });
  const page = await ctx.newPage();
  const problems = [];
  let allowed = 0, logged = 0; // failed starts the run asks for, and Chromium's line for each
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    if (logged > 0 && /status of 400/.test(m.text())) logged--;
    else problems.push(`console error: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure() && r.failure().errorText}`));
  page.on("response", (r) => {
    if (r.status() < 400) return;
    if (allowed > 0 && r.status() === 400 && r.request().method() === "POST" && r.url().endsWith("/v1/local/sessions")) {
      allowed--;
      return;
    }
    problems.push(`HTTP ${r.status()} for ${r.request().method()} ${r.url()}`);
  });
  const { url } = await step("pair", { scope });
  await page.goto(url);
  await page.locator("#link.live").waitFor();
  opened.push({ page, problems });
  return { ctx, page, problems, expectFailure: () => { allowed++; logged++; } };
}

async function run(browser, width, height) {
  const size = `${width}x${height}`;
  const tapOn = (page) => async (locator) => (width < 600 ? locator.tap() : locator.click());
  const shot = async (page, view) => {
    const noScroll = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    if (!noScroll) throw new Error(`${size} ${view}: the page scrolls horizontally`);
    await page.screenshot({ path: path.join(shots, `${size}-${view}.png`), fullPage: true });
  };
  const name = `echo-${width}`;
  const { dir } = await step("dir");

  // A send sign-in starts a session from the form.
  const s = await open(browser, width, height, "approve,send");
  const page = s.page, tap = tapOn(page);
  await page.locator("#who", { hasText: "send" }).waitFor();
  const form = page.locator("#start-form");
  await form.waitFor();

  // A directory that does not exist: the gateway's error, under the form.
  s.expectFailure();
  await form.getByRole("textbox", { name: "directory" }).fill(dir + "/nope");
  await form.getByRole("textbox", { name: "name" }).fill(name);
  await tap(form.getByRole("button", { name: "Start" }));
  await page.locator("#start-error", { hasText: "is not a directory" }).waitFor();
  await shot(page, "hosted-start-error");
  log(size, "a bad directory: the gateway's error shown");

  await form.getByRole("combobox", { name: "agent" }).selectOption("claude");
  await form.getByRole("textbox", { name: "directory" }).fill(dir);
  await form.getByRole("combobox", { name: "permission mode" }).selectOption("plan");
  await form.getByRole("textbox", { name: "model" }).fill("fake-model");
  await form.getByRole("textbox", { name: "first prompt" }).fill("hello there");
  await tap(form.getByRole("button", { name: "Start" }));
  await page.locator("#start-done", { hasText: `Started hosted:${name}` }).waitFor();
  if (await page.locator("#start-error").textContent()) throw new Error("the start error stayed");

  const card = page.locator(`.session.hosted[data-address="hosted:${name}"]`);
  await card.locator(".badge.agent", { hasText: "claude" }).waitFor();
  await card.locator(".cwd", { hasText: dir }).waitFor();
  await card.locator(".transcript pre.user", { hasText: "› hello there" }).waitFor();
  await card.locator(".transcript pre.assistant", { hasText: "echo: hello there" }).waitFor();
  await card.locator('.badge.state[data-state="idle"]').waitFor();
  await step("check-started", { name, dir, mode: "plan", model: "fake-model" });
  log(size, "started: the card shows the agent, directory, state and the echo");

  // The card's send box is the session's next turn.
  await card.getByRole("textbox", { name: `message to hosted:${name}` }).fill("second turn");
  await tap(card.getByRole("button", { name: "Send" }));
  await card.locator(".transcript pre.assistant", { hasText: "echo: second turn" }).waitFor();
  await card.locator('.badge.state[data-state="idle"]').waitFor();
  await shot(page, "hosted-session");
  log(size, "a message from the card: its echo shown");

  // A read-only sign-in sees the session but cannot start, send or stop.
  const r = await open(browser, width, height, "");
  await r.page.locator("#who", { hasText: "read only" }).waitFor();
  const roCard = r.page.locator(`.session.hosted[data-address="hosted:${name}"]`);
  await roCard.locator('.badge.state[data-state="idle"]').waitFor();
  for (const [what, n] of [["the start form", r.page.locator("#start-form:visible")], ["a Stop button", roCard.locator("button.stop")],
    ["a send box", roCard.getByRole("textbox")]]) {
    if (await n.count()) throw new Error(`${size}: a read-only sign-in sees ${what}`);
  }
  await shot(r.page, "hosted-read-only");
  if (r.problems.length) throw new Error(`${size} read-only:\n  ${r.problems.join("\n  ")}`);
  await r.ctx.close();
  log(size, "read only: no form, no send box, no Stop");

  await tap(card.getByRole("button", { name: "Stop" }));
  await card.waitFor({ state: "detached" });
  await step("check-gone", { name });
  log(size, "stopped: the card is gone, and the API lists it no more");

  if (s.problems.length) throw new Error(`${size}:\n  ${s.problems.join("\n  ")}`);
  await s.ctx.close();
}

(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });
  try {
    await run(browser, 360, 740);
    await run(browser, 1280, 800);
  } catch (e) {
    for (const { page, problems } of opened) {
      if (page.isClosed()) continue;
      log("a page showed the error:", await page.locator("#error").textContent(), "problems:", problems);
    }
    throw e;
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});

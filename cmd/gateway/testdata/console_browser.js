// Drives the web console in headless Chromium for TestTheConsoleInAHeadlessBrowser:
// the Go test is the director, answering each step (raise a prompt, hold a
// message, cut the connection) and checking what the fakes received. Any
// console error or failed request fails the run, except the event stream's
// own failures while the test has cut the connection on purpose.
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

// answeredShown checks the console says what it sent for request rid and
// who answered, as the gateway recorded it: this sign-in's pairing.
async function answeredShown(page, rid, sent) {
  const { id, answered_by: by } = await step("answered", { rid });
  if (!/^console:pair_\w+$/.test(by)) throw new Error(`the gateway recorded the answer as by ${by}, want this pairing`);
  const li = page.locator(`#answered li[data-id="${id}"]`);
  await li.waitFor();
  const text = await li.textContent();
  if (!text.includes(sent) || !text.endsWith(`by ${by}`)) throw new Error(`the answer shows as "${text}", want "${sent}" and "by ${by}"`);
}

async function run(browser, width, height) {
  const size = `${width}x${height}`;
  const ctx = await browser.newContext({ viewport: { width, height }, hasTouch: width < 600, isMobile: width < 600 });
  const page = await ctx.newPage();
  const problems = [];
  let cutting = false;
  page.on("console", (m) => {
    if (m.type() === "error" && !cutting) problems.push(`console error: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => {
    const streamCut = cutting && r.url().includes("v1/events");
    if (!streamCut) problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure() && r.failure().errorText}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.request().method()} ${r.url()}`);
  });
  const shot = async (view) => {
    const noScroll = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    if (!noScroll) throw new Error(`${size} ${view}: the page scrolls horizontally`);
    await page.screenshot({ path: path.join(shots, `${size}-${view}.png`), fullPage: true });
  };
  const tap = async (locator) => (width < 600 ? locator.tap() : locator.click());

  // Pair with the printed link.
  const { url } = await step("pair");
  await page.goto(url);
  await page.locator("#link.live").waitFor();
  await page.locator("#who", { hasText: "read,send,approve" }).waitFor();
  if (page.url().includes("#pair=")) throw new Error("the pairing code stayed in the address bar");
  await page.locator(".session", { hasText: "fix the flaky test" }).waitFor();
  await shot("signed-in");
  log(size, "signed in");

  // A hostile question (no options) comes first: it must not hide the
  // prompts after it.
  await step("hostile-question");
  const hostile = page.locator(".prompt", { hasText: "Pick from nothing?" });
  await hostile.waitFor();

  // A question from the fake cloud appears live; answer it by tapping options.
  const { rid: qid, tool_use_id: quid } = await step("question");
  const q = page.locator(".prompt-question", { hasText: "Which approach?" });
  await q.waitFor();
  await tap(q.getByRole("button", { name: "Option B", exact: true }));
  await tap(q.getByRole("button", { name: "Logging", exact: true }));
  await tap(q.getByRole("button", { name: "Metrics", exact: true }));
  await shot("question");
  await tap(q.getByRole("button", { name: "Send answer" }));
  await q.waitFor({ state: "detached" });
  await step("check-question", { rid: qid, tool_use_id: quid });
  await answeredShown(page, qid, "sent allow; Which approach? Option B; Which features? Logging, Metrics ·");
  log(size, "question answered");
  await tap(hostile.getByRole("button", { name: "Deny" }));
  await hostile.waitFor({ state: "detached" });
  log(size, "hostile question denied");

  // A tool prompt offering no suggestion: nothing to "always allow".
  const { rid: bid } = await step("bash");
  const b = page.locator(".prompt-tool", { hasText: "make test" });
  await b.waitFor();
  await shot("tool");
  const title = await b.locator("h3").textContent();
  if (!title.startsWith("Bash · fix the flaky test")) throw new Error(`the prompt's card is titled "${title}", not with its session's title`);
  const always = await b.locator("button.always").count() + await b.getByRole("button", { name: /always/i }).count();
  if (always !== 0) throw new Error(`a prompt without suggestions offers ${always} "always allow" buttons`);
  await tap(b.getByRole("button", { name: "Allow", exact: true }));
  await b.waitFor({ state: "detached" });
  await step("check-bash", { rid: bid });
  await answeredShown(page, bid, "Bash · fix the flaky test: sent allow ·");
  log(size, "tool allowed, nothing invented");

  // One offering a suggestion shows exactly it, and it goes back as offered.
  const { rid: sbid } = await step("bash-suggested");
  const sb = page.locator(".prompt-tool", { hasText: "npm test" });
  await sb.waitFor();
  const labels = await sb.locator("button.always").allTextContents();
  if (labels.length !== 1 || labels[0] !== "Always allow Bash(npm test)") throw new Error(`the offered suggestion shows as ${JSON.stringify(labels)}`);
  await tap(sb.locator("button.always"));
  await sb.waitFor({ state: "detached" });
  await step("check-bash-suggested", { rid: sbid });
  await answeredShown(page, sbid, "sent allow; Always allow Bash(npm test) ·");
  log(size, "tool allowed always, as offered");

  // A plan, shown, approved with a mode to continue in.
  const { rid: pid } = await step("plan");
  const pl = page.locator(".prompt-plan");
  // The plan is rendered: a heading and a numbered list, markup in it shown as text.
  await pl.locator(".plan ol li", { hasText: "fix the race" }).locator("strong").waitFor();
  await pl.locator(".plan h5", { hasText: "Plan" }).waitFor();
  await pl.locator(".plan p", { hasText: "<script>alert(1)</script>" }).waitFor();
  if ((await pl.locator(".plan script").count()) !== 0) throw new Error("markup in a plan became a script element");
  await pl.locator("select").selectOption("acceptEdits");
  await shot("plan");
  await tap(pl.getByRole("button", { name: "Approve plan" }));
  await pl.waitFor({ state: "detached" });
  await step("check-plan", { rid: pid });
  await answeredShown(page, pid, "sent allow; mode acceptEdits ·");
  log(size, "plan approved");

  // A message from the remote session's send box; its echo streams back.
  const text = `hello from ${size}`;
  const card = page.locator(".session", { hasText: "fix the flaky test" });
  await card.locator("input").fill(text);
  await tap(card.getByRole("button", { name: "Send" }));
  await step("check-sent", { text });
  await page.locator("#output pre", { hasText: text }).waitFor();
  const outTitle = await page.locator("#output .card", { hasText: text }).locator("h3").textContent();
  if (outTitle !== "fix the flaky test") throw new Error(`the output's card is titled "${outTitle}", not with its session's title`);
  await shot("sent");
  log(size, "sent, and the reply streamed");

  // A held message from a local peer, released.
  const { id: hid } = await step("hold");
  const h = page.locator(`.held[data-id="${hid}"]`);
  await h.waitFor();
  await shot("held");
  await tap(h.getByRole("button", { name: "Release" }));
  await h.waitFor({ state: "detached" });
  await step("check-held", { id: hid });
  log(size, "held message released");

  // Drop the event stream; what happens meanwhile still shows once it is back.
  const marker = `while you were away ${size}`;
  cutting = true;
  await step("cut");
  await page.locator("#link:not(.live)").waitFor();
  await step("turn", { text: marker });
  await step("heal");
  await page.locator("#link.live").waitFor({ timeout: 30000 });
  await page.locator("#events li", { hasText: marker }).first().waitFor();
  await page.locator("#output pre", { hasText: marker }).waitFor();
  cutting = false;
  const ids = await page.locator("#events li").evaluateAll((lis) => lis.map((li) => li.dataset.id).filter(Boolean));
  if (new Set(ids).size !== ids.length) throw new Error(`an event was shown twice: ${ids}`);
  await shot("resumed");
  log(size, "the stream resumed without a loss");

  if (problems.length) throw new Error(`${size}:\n  ${problems.join("\n  ")}`);
  await ctx.close();
}

// A read-only pairing, through a proxy serving the gateway under /gw/,
// shows a prompt and offers nothing to answer it with.
async function readOnly(browser) {
  const ctx = await browser.newContext({ viewport: { width: 360, height: 740 }, hasTouch: true, isMobile: true });
  const page = await ctx.newPage();
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error") problems.push(m.text()); });
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()}`));
  const { url } = await step("pair", { read_only: "1" });
  if (!url.includes("/gw/#pair=")) throw new Error(`not under the prefix: ${url}`);
  page.on("response", (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()} ${r.url()}`); });
  await page.goto(url);
  await page.locator("#link.live").waitFor();
  await page.locator("#who", { hasText: "(read only)" }).waitFor();
  await step("bash");
  const b = page.locator(".prompt-tool", { hasText: "Bash" }).first();
  await b.locator("text=Read only: this sign-in cannot answer.").waitFor();
  if ((await b.locator("button").count()) !== 0) throw new Error("a read-only sign-in offers answer buttons");
  if ((await page.locator(".session input").count()) !== 0) throw new Error("a read-only sign-in offers send boxes");
  await page.locator("#away-state", { hasText: "cannot switch it" }).waitFor();
  if (await page.locator("#away-toggle").isVisible()) throw new Error("a read-only sign-in offers the away toggle");
  await page.screenshot({ path: path.join(shots, "360x740-read-only.png"), fullPage: true });
  if (problems.length) throw new Error(`read only:\n  ${problems.join("\n  ")}`);
  await ctx.close();
  log("read only: shown, not answerable");
}

(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });
  try {
    await run(browser, 360, 740);
    await run(browser, 1280, 800);
    await readOnly(browser);
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});

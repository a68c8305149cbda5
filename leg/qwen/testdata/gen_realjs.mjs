// Generates realjs_*.json from @qwen-code/sdk's own peer functions (the SDK
// and Qwen Code 0.24.4 ship the same parser). Run with Node 20+:
//
//   node gen_realjs.mjs /path/to/node_modules/@qwen-code/sdk/dist/peer/index.js
//
// It only calls the package's exported functions; none of its code is here.
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const peer = await import(pathToFileURL(process.argv[2]).href);
const { parsePeerFrame, parsePeerAuthLine, isPeerMsgId, canonicalizeMsgId, flattenPeerLabel, peerRef } = peer;

// A small deterministic PRNG, so the vectors are reproducible.
let seed = 0x2545f491;
const rnd = () => { seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return (seed >>> 0) / 4294967296; };
const pick = (xs) => xs[Math.floor(rnd() * xs.length)];

const ABSENT = Symbol("absent");
const raw = (text) => ({ raw: text });
const enc = (v) => (v && typeof v === "object" && "raw" in v ? v.raw : JSON.stringify(v));

const ids = ["5f1d0c9e-3b2a-4e8f-9c7d-1a2b3c4d5e6f", "a", "A_b-C", "all", "A-L-L", "al-l", "_a", "-a", "a".repeat(64),
  "a".repeat(65), "", "a b", "é", "0", "x\n", 7, null, ["a"]];
const versions = [1, 0, -1, 0.5, 2, 1.0000001, "1", null, true, raw("1e400"), raw("-1e400"), raw("1e0"), raw("-0")];
const strs = ["/run/user/1000/qwen-socks/1.sock", "", "n", "x".repeat(3), 5, null, false, {}, ["s"]];
const modes = ["bypass", "prompting", "yolo", "", "Bypass", 1, null];
const prios = ["now", "next", "later", "", "NOW", 1, null];
const msgs = [{ role: "user", content: "hi" }, { role: "user", content: "" }, { role: "assistant", content: "hi" },
  { content: "hi" }, { role: "user" }, { role: "user", content: 5 }, "hi", null, ["x"], { role: "user", content: "<cross_session_message>\u2028" },
  { role: "user", content: "hi", extra: 1 }];
const statuses = ["held", "delivered", "denied", "refused", "expired", "misaddressed", "dropped", "dropped", "dropped", "queued", "", 3, null];
const reasons = ["rate-limited", "duplicate", "queue-full", "hop-loop", "", 1, null];
const dropped = [["a", "b-c"], ["a", 5, "all", "", "ok_1", null, "x y"], [], "a", 7, null, Array.from({ length: 300 }, (_, i) => `id${i}`)];
const types = ["user", "control", "auth", "User", "", 1, null];
const actions = ["delivery_status", "peer_message_status", "", null];

function object(fields) {
  const parts = [];
  for (const [k, v] of fields) if (v !== ABSENT) parts.push(`${JSON.stringify(k)}:${enc(v)}`);
  return `{${parts.join(",")}}`;
}
const maybe = (xs, p = 0.3) => (rnd() < p ? ABSENT : pick(xs));
// Mostly the good value, sometimes a bad one, so that about half the lines
// parse.
const mostly = (good, bad, pBad = 0.08) => (rnd() < pBad ? (rnd() < 0.2 ? ABSENT : pick(bad)) : good);

function userLine() {
  return object([["msgV", mostly(1, versions)], ["msgId", mostly(pick(ids.slice(0, 3)), ids)], ["type", mostly("user", types, 0.05)],
    ["from", maybe(strs)], ["replyToken", maybe(strs)], ["fromName", maybe(strs)], ["fromMode", maybe(modes)],
    ["toSessionId", maybe(strs)], ["priority", maybe(prios)], ["message", mostly(msgs[0], msgs, 0.3)]]);
}
function controlLine() {
  return object([["msgV", mostly(1, versions)], ["msgId", mostly(pick(ids.slice(0, 3)), ids)], ["type", mostly("control", types, 0.05)],
    ["action", mostly("delivery_status", actions, 0.05)], ["status", mostly(pick(statuses.slice(0, 9)), statuses)],
    ["origMsgId", mostly(pick(ids.slice(0, 5)), ids)], ["from", maybe(strs)], ["reason", maybe(strs)],
    ["dropReason", maybe(reasons)], ["droppedMsgIds", maybe(dropped)]]);
}
function authLine() {
  return object([["msgV", mostly(1, versions, 0.2)], ["type", mostly("auth", types)], ["token", mostly("t0k", ["", 5, null, "qpc_" + "a".repeat(64)], 0.2)],
    ["msgId", maybe(ids, 0.7)]]);
}

const lines = [
  '{"msgV":1,"type":"auth","token":"abc"}',
  ' {"msgV":1,"type":"auth","token":"abc"} ',
  '{"msgV":1,"type":"auth","token":"abc"} x',
  '[1]', '"x"', '', '   ', 'null', '{', '{"msgV":1,"type":"auth","token":"a","token":"b"}',
  '{"msgV":1,"msgId":"m1","type":"user","message":{"role":"user","content":"a","content":"b"}}',
  '{"MsgV":1,"msgId":"m1","type":"user","message":{"role":"user","content":"a"}}',
  '{"msgV":1,"msgId":"m1","type":"user","message":{"role":"user","content":"a"},"toSessionId":""}',
];
for (let i = 0; i < 700; i++) lines.push(userLine());
for (let i = 0; i < 700; i++) lines.push(controlLine());
for (let i = 0; i < 200; i++) lines.push(authLine());

const frames = lines.map((line) => ({ line, frame: parsePeerFrame(line), auth: parsePeerAuthLine(line) }));

const idInputs = [...ids.filter((x) => typeof x === "string"), "ALL", "all_", "a-ll-", "Ab-Cd", "ﬀ", "A".repeat(63) + "-"];
const msgIds = idInputs.map((s) => [s, isPeerMsgId(s), canonicalizeMsgId(s)]);

const alphabet = ["a", "Z", " ", "\t", "\n", "\r", "\u000b", "\u0085", "\u00a0", "\u00ad", "\u200b", "\u200e", "\ufeff", "\u2028",
  "\u2029", "\u3000", "\u0007", "\u001f", "\u007f", "\u0601", "é", "e\u0301", "日", "😀", "\u{e0001}", "-", "…"];
const labels = [];
for (let i = 0; i < 600; i++) {
  const n = Math.floor(rnd() * (rnd() < 0.1 ? 260 : 12));
  let s = "";
  for (let j = 0; j < n; j++) s += pick(alphabet);
  labels.push([s, flattenPeerLabel(s)]);
}
const refs = ["", "8e016be8-5b48-4c13-ad22-1f5326ae64ac", "é"].map((s) => [s, peerRef(s)]);

// Every code point (surrogates excluded) that flattening turns into a
// space, and every one that trim removes, as ranges.
function ranges(test) {
  const out = [];
  let start = -1;
  for (let cp = 0; cp <= 0x110000; cp++) {
    const hit = cp < 0x110000 && !(cp >= 0xd800 && cp <= 0xdfff) && test(String.fromCodePoint(cp));
    if (hit && start < 0) start = cp;
    if (!hit && start >= 0) { out.push([start, cp - 1]); start = -1; }
  }
  return out;
}
const invisible = ranges((c) => flattenPeerLabel("a" + c + "b") === "a b");
const trimmed = ranges((c) => flattenPeerLabel(c + "a") === "a" && flattenPeerLabel("a" + c + "b") !== "a b");

writeFileSync("realjs_frames.json", JSON.stringify(frames));
writeFileSync("realjs_text.json", JSON.stringify({ msgIds, labels, refs, invisible, trimmed }));
console.log(`${frames.length} lines, ${labels.length} labels, ${invisible.length} invisible ranges, ${trimmed.length} trim ranges`);

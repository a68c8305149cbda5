// A small Markdown renderer for plans: headings, lists, code blocks,
// paragraphs, inline code and bold. It builds DOM nodes from text, so
// nothing in a plan can become markup or script.
import { el } from "./dom.js";

function inline(text) {
  const out = [];
  const re = /(`[^`]+`|\*\*[^*]+\*\*)/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const t = m[0];
    out.push(t.startsWith("`") ? el("code", {}, t.slice(1, -1)) : el("strong", {}, t.slice(2, -2)));
    last = m.index + t.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export function renderMarkdown(src) {
  const root = el("div", { class: "markdown" });
  const lines = String(src).split("\n");
  let list = null;
  let para = [];
  const flush = () => {
    if (para.length) root.append(el("p", {}, ...inline(para.join(" "))));
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith("```")) {
      flush();
      list = null;
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith("```"); i++) code.push(lines[i]);
      root.append(el("pre", {}, el("code", {}, code.join("\n"))));
      continue;
    }
    const h = line.match(/^(#{1,6})\s+(.*)$/);
    const item = line.match(/^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/);
    if (h) {
      flush();
      list = null;
      root.append(el(`h${Math.min(h[1].length + 3, 6)}`, {}, ...inline(h[2])));
    } else if (item) {
      flush();
      const tag = item[1] ? "ol" : "ul";
      if (!list || list.tagName.toLowerCase() !== tag) {
        list = el(tag, item[1] ? { start: item[1] } : {});
        root.append(list);
      }
      list.append(el("li", {}, ...inline(item[2])));
    } else if (line.trim() === "") {
      flush();
      list = null;
    } else {
      list = null;
      para.push(line.trim());
    }
  }
  flush();
  return root;
}

// Small DOM helpers: text goes in as text, never as markup.
export function el(tag, attrs = {}, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v !== undefined && v !== null && v !== false) n.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    n.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return n;
}

export function clear(n) {
  n.replaceChildren();
  return n;
}

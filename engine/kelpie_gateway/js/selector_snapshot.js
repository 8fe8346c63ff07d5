// Kelpie selector snapshot (contract §9): the same value-free reader projected to
// {url, title, text, truncated, elements:[{selector, tag, role, label}]}, with no registry.
// Each selector is verified to match exactly its node in this document; elements in frames or shadow
// trees (no single-document CSS selector reaches them) and selectors over 2,000 characters get null.
const SELECTOR_MAX = 2000;

function matchesOnly(sel, el) {
  try {
    const all = document.querySelectorAll(sel);
    return all.length === 1 && all[0] === el;
  } catch (e) {
    return false;
  }
}
function uniqueId(e) {
  if (!e.id) return null;
  const sel = "#" + CSS.escape(e.id);
  try {
    return document.querySelectorAll(sel).length === 1 ? sel : null;
  } catch (err) {
    return null;
  }
}
function selectorFor(el) {
  if (el.ownerDocument !== document || rootOf(el) !== document) return null;
  const own = uniqueId(el);
  if (own && matchesOnly(own, el)) return own;
  const parts = [];
  for (let e = el; e; e = e.parentElement) {
    if (e !== el) {
      const anchor = uniqueId(e);
      if (anchor) { parts.unshift(anchor); break; }
    }
    if (e === document.documentElement) { parts.unshift(":root"); break; }
    let i = 1;
    for (let s = e.previousElementSibling; s; s = s.previousElementSibling) i += 1;
    parts.unshift(CSS.escape(e.localName) + ":nth-child(" + i + ")");
  }
  const sel = parts.join(" > ");
  if (sel.length > SELECTOR_MAX) return null;
  return matchesOnly(sel, el) ? sel : null;
}

async function main(P) {
  return frozen(() => { // no page code runs in a read (core.js `frozen`)
    const rec = readRecord(null, P.maxChars, { lazyShown: true });
    const page = pageOf(rec, 0, 0, P.maxChars, P.maxElements);
    const flags = { truncated: page.truncated };
    const elements = page.picked.map((info) => {
      const d = describe(info, flags);
      return { selector: selectorFor(info.el), tag: d.tag, role: d.role, label: d.label };
    });
    return { url: rec.url, title: rec.title, text: page.text, truncated: flags.truncated, elements };
  });
}

// Kelpie fixed reader: `tab.snapshot` entry (contract §9). Value-free snapshot; records every returned
// element in the registry and answers {url, title, text, truncated, elements:[{handle, tag, role,
// label, …}], rest?}. `rest: {snapshot, textAt, elementAt}` (present while something is left) is what the
// engine hands back, as P.cursor, to read the next page of the same snapshot; the engine keeps it
// private and gives the client an opaque `next` cursor instead (§3, §9 v1.1).
//
// P: {key, maxChars, maxElements, scope?: handle, cursor?: {snapshot, textAt, elementAt}} from the engine;
// a host that reads frames adds `part: true` (answer as a part of a composite) or sends `frames:
// [[frame, outcome], …]` (the answers for what the last answer wanted): core/80-frames.js, docs/reader.md
// "Frames". A read that meets frames the host reads in their own worlds answers {kelpieFrames: wants}
// until the host has given it what it needs.
// An observer's read is {observe: true, maxChars, maxElements} instead (no registry, below).
// A new snapshot (with or without scope) replaces the registry's nodes and the kept read; a
// continuation adds its nodes (earlier pages' handles stay valid) and is refused STALE_SNAPSHOT when
// the kept read is not the cursor's or the document changed since (a MutationObserver on every tree
// the read looked into: the document, open shadow roots, same-origin frame documents read inline).

function watch(snap) {
  const obs = new MutationObserver(() => {
    snap.changed = true;
    obs.disconnect();
  });
  for (const root of snap.rec.roots) {
    try {
      obs.observe(root, { subtree: true, childList: true, attributes: true, characterData: true });
    } catch (e) {
      snap.changed = true; // a tree we cannot watch cannot promise an unchanged document
    }
  }
  snap.observer = obs;
}

function answer(reg, snap, textAt, elementAt, P) {
  const page = pageOf(snap.rec, textAt, elementAt, P.maxChars, P.maxElements);
  const flags = { truncated: page.truncated };
  const elements = page.picked.map((info) => {
    reg.counter += 1;
    const handle = reg.nonce + "-" + reg.counter.toString(36);
    reg.nodes.set(handle, info.el);
    return Object.assign({ handle }, describe(info, flags));
  });
  const out = { url: snap.rec.url, title: snap.rec.title, text: page.text, truncated: flags.truncated, elements };
  if (page.rest) out.rest = { snapshot: snap.token, textAt: page.rest.textAt, elementAt: page.rest.elementAt };
  return out;
}

function continuation(reg, P) {
  const at = P.cursor;
  const snap = reg.snap;
  if (!snap || snap.token !== at.snapshot) {
    return fail("STALE_SNAPSHOT", "the page was reloaded or read again since this snapshot; take a new tab.snapshot", false);
  }
  if (!snap.changed && snap.observer && snap.observer.takeRecords().length) snap.changed = true;
  if (snap.changed) {
    return fail("STALE_SNAPSHOT", "the document changed since this snapshot; take a new tab.snapshot", false);
  }
  if (snap.frames) return continueFrames(reg, snap, P);
  if (!(at.textAt >= 0 && at.textAt <= snap.rec.text.length && at.elementAt >= 0 && at.elementAt <= snap.rec.order.length)) {
    return fail("RENDERER_FAILED", "the continuation position is outside this snapshot", false);
  }
  return answer(reg, snap, at.textAt, at.elementAt, P);
}

// ---------------------------------------------------------------- warm-up (docs/reader.md "Warm-up")
// P = {warm: true, doc, part}: run by the host's new-document script (reader.WARM_UP) once per document,
// right after `load`, so that the first real snapshot finds this world's reader compiled, its inline
// caches warm and the world's interface objects of the usual element kinds made. It reads a small inert
// document of its own (document.implementation.createHTMLDocument: no browsing context, so no scripts,
// loads, events or observers, and nothing the page can reach), never the page's; it leaves no registry,
// no kept read and no observer. One call reads one part of that document (`part`, from 0; `doc` null
// on the first call, which builds it) and answers {warmed: <elements described>, doc, more}, so the
// warm-up runs as a few short tasks and a snapshot that arrives meanwhile waits for one part at most.
// [tag, display, children (strings are text), attributes]
const WARM_TREE = ["main", "block", [
  ["div", "block", [
    ["nav", "block", [["ul", "block", [
      ["li", "list-item", [["a", "inline", ["Home"], { href: "#home" }]]],
      ["li", "list-item", [["a", "inline", ["About"], { href: "/about" }]]],
    ]]]],
    ["h1", "block", ["Heading"]],
    ["p", "block", ["Some ", ["strong", "inline", ["text"]], " and a ", ["a", "inline", ["link"], { href: "https://example.invalid/" }], "."]],
  ]],
  ["form", "block", [
    ["label", "inline", ["Name ", ["input", "inline-block", [], { type: "text", name: "n" }]]],
    ["label", "inline", ["Mail ", ["input", "inline-block", [], { type: "email", required: "" }]]],
    ["input", "inline-block", [], { type: "search", "aria-label": "Search" }],
    ["textarea", "inline-block", [], { "aria-labelledby": "kelpie-warm-notes" }],
    ["span", "inline", ["Notes"], { id: "kelpie-warm-notes" }],
  ]],
  ["form", "block", [
    ["select", "inline-block", [["option", "block", ["One"]], ["option", "block", ["Two"], { selected: "" }]]],
    ["label", "inline", [["input", "inline-block", [], { type: "checkbox", checked: "" }], " Check"]],
    ["input", "inline-block", [], { type: "radio", name: "r", id: "kelpie-warm-radio" }],
    ["label", "inline", ["Choice"], { for: "kelpie-warm-radio" }],
  ]],
  ["div", "block", [
    ["button", "inline-block", ["Send"], { type: "button" }],
    ["button", "inline-block", [["img", "inline", [], { alt: "Clear" }]], { type: "reset", disabled: "" }],
    ["div", "block", ["Open"], { role: "button", tabindex: "0", "aria-expanded": "false" }],
    ["details", "block", [["summary", "list-item", ["More"]], ["p", "block", ["Inside."]]], { open: "" }],
  ]],
]];

function warmNode(doc, spec) {
  if (typeof spec === "string") return doc.createTextNode(spec);
  const [tag, display, children, attributes] = spec;
  const el = doc.createElement(tag);
  for (const name in attributes || {}) el.setAttribute(name, attributes[name]);
  el.style.display = display; // CSSOM, not a style attribute: no policy applies and nothing is parsed
  el.style.visibility = "visible";
  for (const child of children) el.appendChild(warmNode(doc, child));
  return el;
}

const MAX_WARM_ELEMENTS = 50;
function warmUp(P) {
  let doc = P.doc;
  if (!doc) {
    doc = document.implementation.createHTMLDocument("");
    doc.body.appendChild(warmNode(doc, WARM_TREE));
  }
  const parts = doc.body.firstElementChild.children;
  const at = Number.isInteger(P.part) && P.part >= 0 ? P.part : 0;
  if (at >= parts.length) return { warmed: 0, doc, more: false };
  WARM_DOC = doc;
  try {
    const rec = readRecord(parts[at], 1000);
    const page = pageOf(rec, 0, 0, 1000, MAX_WARM_ELEMENTS);
    const flags = { truncated: page.truncated };
    for (const info of page.picked) describe(info, flags);
    return { warmed: page.picked.length, doc, more: at + 1 < parts.length };
  } finally {
    WARM_DOC = null;
  }
}

// A snapshot runs no page code from its start to its answer: all of it is `frozen` (core.js), so the facts
// that cannot change meanwhile are read once.
async function main(P) {
  return frozen(() => (P.warm === true ? warmUp(P) : P.observe === true ? observe(P) : P.frames ? composeFrames(P) : read(P)));
}

// ---------------------------------------------------------------- observer mode (contract §9 v1.2)
// P = {observe: true, maxChars, maxElements}: a one-shot read of the whole document by the same reader,
// for a gateway configured `observer: true`. It never touches the registry (no registry is made, none
// is read, no node is kept) and installs nothing: no pagehide/popstate/hashchange listener, no
// MutationObserver, no kept read. One page only (no `rest`): {url, title, text, truncated, elements:
// [{tag, role, label, …}]} — the elements carry no handle, so nothing of the answer can name a node.
function observe(P) {
  const rec = readRecord(null, P.maxChars);
  const page = pageOf(rec, 0, 0, P.maxChars, P.maxElements);
  const flags = { truncated: page.truncated };
  const elements = page.picked.map((info) => describe(info, flags));
  return { url: rec.url, title: rec.title, text: page.text, truncated: flags.truncated, elements };
}

function read(P) {
  const reg = registry(true);
  if (P.cursor) return continuation(reg, P);
  let start = null;
  if (P.scope) {
    start = lookup(P.scope);
    if (!start) return fail("NODE_REPLACED", "the scope element was replaced or removed since the snapshot; take a new snapshot", false);
  }
  const rec = readRecord(start, P.maxChars, true);
  if (reg.snap && reg.snap.observer) reg.snap.observer.disconnect();
  reg.nodes.clear();
  reg.snaps = (reg.snaps || 0) + 1;
  const snap = { token: reg.nonce + "-" + reg.snaps.toString(36), rec, changed: false, observer: null };
  reg.snap = snap;
  watch(snap);
  if (rec.slots.length || P.part === true) return startFrames(reg, snap, P);
  return answer(reg, snap, 0, 0, P);
}

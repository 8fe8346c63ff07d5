// Kelpie fixed reader: `tab.snapshot` entry (contract §9). Value-free snapshot; records every returned
// element in the registry and answers {url, title, text, truncated, elements:[{handle, tag, role,
// label, …}], token, removed?, rest?, since?}. `rest: {snapshot, textAt, elementAt}` (present while
// something is left) is what the engine hands back, as P.cursor, to read the next page of the same
// snapshot; the engine keeps it private and gives the client an opaque `next` cursor instead (§3, §9
// v1.1). `token` names this read (the engine passes it back as P.since).
//
// P: {key, maxChars, maxElements, scope?: handle, cursor?: {snapshot, textAt, elementAt},
//     include?: "controls", find?: {role?, name?, text?}, since?: token} from the engine; a host that
// reads frames adds `part: true` (answer as a part of a composite) or sends `frames: [[frame, outcome],
// …]` (the answers for what the last answer wanted): core/80-frames.js, docs/reader.md "Frames". A plain
// read that meets frames the host reads in their own worlds answers {kelpieFrames: wants} until the host
// has given it what it needs; `include`, `find` and `since` reads never compose frames: a hosted frame is
// its element's placeholder (unreadable "unavailable") there (docs/reader.md "Frames and v1.2 reads").
// An observer's read is {observe: true, maxChars, maxElements} instead (no registry, below).
// A new snapshot (with or without scope) replaces the registry's nodes and the kept read; a
// continuation adds its nodes (earlier pages' handles stay valid) and reads the kept read's captured
// order (§9 v1.2): elements removed since are skipped and counted (`removed`), elements added since are
// not in it, its text resumes where the previous page stopped. It is refused STALE_SNAPSHOT when the
// kept read is not the cursor's (a newer snapshot, a history traversal clearing the registry, a new
// document: the engine refuses invalidated refs and new generations before that) and — for a composite
// (a read with hosted frames, or a part) — when the document changed at all since: a composite's text
// positions and its parts' ranks hold only for an unchanged document.

// Elements added to the trees the read looked into after it (not moved ones: a node removed and put back
// was there before) are not part of the snapshot: a MutationObserver on every root remembers them.
function watch(snap) {
  const fresh = new WeakSet();
  const known = new WeakSet();
  const note = (records) => {
    for (const r of records) {
      for (const n of r.removedNodes) if (!fresh.has(n)) known.add(n);
      for (const n of r.addedNodes) if (n.nodeType === 1 && !known.has(n)) fresh.add(n);
    }
  };
  // A composite (`snap.strict`) notes any change at all: its continuation is refused after one.
  const watched = (records) => {
    if (snap.strict && records.length) snap.changed = true;
    note(records);
  };
  const obs = new MutationObserver(watched);
  const what = snap.strict ? { subtree: true, childList: true, attributes: true, characterData: true }
    : { subtree: true, childList: true };
  for (const root of snap.rec.roots) {
    try {
      obs.observe(root, what);
    } catch (e) {
      // a tree that cannot be watched: what is added there is read as if it had been there
      if (snap.strict) snap.changed = true; // and a composite cannot promise an unchanged document
    }
  }
  snap.observer = obs;
  snap.fresh = (el) => {
    watched(obs.takeRecords());
    return fresh.has(el);
  };
  snap.stale = () => {
    watched(obs.takeRecords());
    return snap.changed;
  };
}

// What `since` compares later: one element's public facts that can change (label, states, value).
function factsKey(d) {
  return JSON.stringify([d.label, d.states || [], d.value || null]);
}

function register(reg, info, flags) {
  reg.counter += 1;
  const handle = reg.nonce + "-" + reg.counter.toString(36);
  reg.nodes.set(handle, info.el);
  const d = describe(info, flags);
  return { handle, d };
}

function answer(reg, snap, textAt, elementAt, P, continuing) {
  const page = pageOf(snap.rec, textAt, elementAt, P.maxChars, P.maxElements, continuing,
    continuing ? snap.fresh : null);
  if (page === null) return fail("RENDERER_FAILED", "the continuation position is outside this snapshot", false);
  const flags = { truncated: page.truncated };
  const elements = page.picked.map((info) => {
    const { handle, d } = register(reg, info, flags);
    snap.seen.set(info.el, { handle, key: factsKey(d) });
    return Object.assign({ handle }, d);
  });
  if (snap.baseGrows) { // a plain snapshot compares with the text it delivered
    snap.baseText += page.text;
    snap.baseComplete = !page.textLeft;
  }
  const out = { url: snap.rec.url, title: snap.rec.title, text: page.text, truncated: flags.truncated, elements,
    token: snap.token };
  if (page.removed) out.removed = page.removed;
  if (page.rest) out.rest = { snapshot: snap.token, textAt: page.rest.textAt, elementAt: page.rest.elementAt };
  return out;
}

function continuation(reg, P) {
  const at = P.cursor;
  const snap = reg.snap;
  if (!snap || snap.token !== at.snapshot) {
    return fail("STALE_SNAPSHOT", "the page was reloaded or read again since this snapshot; take a new tab.snapshot", false);
  }
  if (snap.frames) {
    if (snap.stale()) {
      return fail("STALE_SNAPSHOT", "the document changed since this snapshot; take a new tab.snapshot", false);
    }
    return continueFrames(reg, snap, P);
  }
  if (!(at.textAt >= 0 && at.elementAt >= 0 && at.elementAt <= snap.rec.order.length)) {
    return fail("RENDERER_FAILED", "the continuation position is outside this snapshot", false);
  }
  return answer(reg, snap, at.textAt, at.elementAt, P, true);
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
    const rec = readRecord(parts[at], 1000, { lazyShown: true });
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
  const rec = readRecord(null, P.maxChars, { lazyShown: true });
  const page = pageOf(rec, 0, 0, P.maxChars, P.maxElements);
  const flags = { truncated: page.truncated };
  const elements = page.picked.map((info) => describe(info, flags));
  return { url: rec.url, title: rec.title, text: page.text, truncated: flags.truncated, elements };
}

// The kept read that replaces the registry's: a new token, its record, and what `since` compares with.
// `strict`: a composite (core/80-frames.js), whose continuation needs an unchanged document.
function keep(reg, rec, baseText, strict) {
  if (reg.snap && reg.snap.observer) reg.snap.observer.disconnect();
  reg.nodes.clear();
  reg.snaps = (reg.snaps || 0) + 1;
  const snap = { token: reg.nonce + "-" + reg.snaps.toString(36), rec, observer: null, fresh: null,
    seen: new Map(), captured: rec.all || rec.order, baseText, baseComplete: false, baseGrows: false,
    strict: !!strict, changed: false, stale: null };
  reg.snap = snap;
  watch(snap);
  return snap;
}

// The record a new snapshot reads, by its params: controls only (no text), a find (the whole text, its
// matches and the lines around them), or everything. `base`: the text a later `since` compares with
// ({text, complete}; null for none; for a plain snapshot, what its pages deliver).
function readFor(start, P, flags) {
  if (P.part === true) return { rec: readRecord(start, P.maxChars, { frames: true }), base: "grows" };
  if (P.include === "controls" && !P.find) {
    const rec = readRecord(start, 0, { text: false, lazyShown: true });
    rec.all = rec.order;
    rec.order = rec.order.filter((info) => info.cls < CONTROL_CLASSES);
    return { rec, base: null };
  }
  if (P.find) {
    const rec = readRecord(start, TEXT_STORE_MAX, { positions: true });
    const f = finder(rec, P.find, flags);
    const controls = P.include === "controls";
    rec.all = rec.order;
    rec.order = rec.order.filter((info) => (!controls || info.cls < CONTROL_CLASSES) && f.matches(info));
    const base = { text: rec.text, complete: rec.textComplete };
    rec.text = controls ? "" : f.textLines();
    rec.textComplete = true;
    rec.mode = controls ? "none" : "fixed";
    return { rec, base };
  }
  return { rec: readRecord(start, P.maxChars, { frames: true, lazyShown: true }), base: "grows" };
}

function read(P) {
  const reg = registry(true);
  if (P.cursor) return continuation(reg, P);
  if (P.since) return sinceRead(reg, P);
  let start = null;
  if (P.scope) {
    start = lookup(P.scope);
    if (!start) return fail("NODE_REPLACED", "the scope element was replaced or removed since the snapshot; take a new snapshot", false);
  }
  const flags = { truncated: false };
  const { rec, base } = readFor(start, P, flags);
  const composite = rec.frames && (rec.slots.length > 0 || P.part === true);
  const snap = keep(reg, rec, base === null ? null : base === "grows" ? "" : base.text, composite);
  snap.baseGrows = base === "grows" && !composite; // a composite's `since` compares its own text (rec.text)
  if (base !== null && base !== "grows") snap.baseComplete = base.complete;
  if (composite) return startFrames(reg, snap, P);
  const out = answer(reg, snap, 0, 0, P, false);
  if (flags.truncated && !out.error) out.truncated = true;
  return out;
}

// `since` (§9 v1.2): a new read of the same tree as the kept read `P.since` names, compared with what that
// snapshot saw: elements added (not in its captured order), removed (ones it delivered that are no longer
// listed), changed (ones it delivered whose label, states or value differ), and the text lines added and
// removed (within what it read). The answer's elements are the changed ones, then the added ones (at most
// maxElements, with new handles); `since: {added: n, changed: [{was}], removed: [handles], textAdded,
// textRemoved}` says which is which. The new read becomes the kept read (no continuation: a diff too long
// for one answer is cut, `truncated`).
function sinceRead(reg, P) {
  const old = reg.snap;
  if (!old || old.token !== P.since) {
    return fail("STALE_SNAPSHOT", "that snapshot's document is gone or it was read again since; take a new tab.snapshot", false);
  }
  const start = old.rec.start;
  if (start && !isLive(start)) {
    return fail("STALE_SNAPSHOT", "the element that snapshot was scoped to is gone; take a new tab.snapshot", false);
  }
  const controls = P.include === "controls";
  // A composite compares this document's own text as it read it (a hosted frame's text is not compared).
  const baseText = old.frames ? old.rec.text : old.baseText;
  const baseComplete = old.frames ? old.rec.textComplete : old.baseComplete;
  const withText = !controls && baseText !== null;
  const bound = withText ? Math.min(TEXT_STORE_MAX, baseText.length + P.maxChars) : 0;
  const rec = readRecord(start, bound, withText ? { positions: !!P.find } : { text: false });
  const flags = { truncated: false };
  const f = P.find ? finder(rec, P.find, flags) : null;
  const keepIt = (info) => (!controls || info.cls < CONTROL_CLASSES) && (!f || f.matches(info));
  // what the earlier read captured and did not find hidden (a lazy read decides that page by page)
  const captured = new Set(old.captured.filter((info) => info.shown !== false).map((info) => info.el));
  const now = new Set(rec.order.map((info) => info.el));
  const removed = [];
  for (const [el, seen] of old.seen) if (seen.handle && !now.has(el)) removed.push(seen.handle);
  const changed = [];
  const added = [];
  const carried = new Map();
  for (const info of rec.order) {
    const before = old.seen.get(info.el);
    if (before) {
      const d = describe(info, { truncated: false });
      const key = factsKey(d);
      carried.set(info.el, { handle: null, key });
      if (key !== before.key && keepIt(info)) changed.push({ info, was: before.handle });
    } else if (!captured.has(info.el) && keepIt(info)) {
      added.push(info);
    }
  }
  const snap = keep(reg, rec, withText ? rec.text : null);
  snap.baseComplete = rec.textComplete;
  snap.seen = carried;
  const room = P.maxElements;
  if (changed.length + added.length > room) flags.truncated = true;
  const picked = changed.slice(0, room);
  const addedPicked = added.slice(0, Math.max(0, room - picked.length));
  const elements = [];
  const was = [];
  for (const c of picked) {
    const { handle, d } = register(reg, c.info, flags);
    snap.seen.set(c.info.el, { handle, key: factsKey(d) });
    elements.push(Object.assign({ handle }, d));
    was.push(c.was || null);
  }
  for (const info of addedPicked) {
    const { handle, d } = register(reg, info, flags);
    snap.seen.set(info.el, { handle, key: factsKey(d) });
    elements.push(Object.assign({ handle }, d));
  }
  let lines = { added: [], removed: [] };
  if (withText) {
    lines = textChanges(baseText, baseComplete, rec.text, rec.textComplete);
    if (P.find && typeof P.find.text === "string") {
      const needle = norm(P.find.text);
      lines = { added: lines.added.filter((l) => norm(l).includes(needle)),
        removed: lines.removed.filter((l) => norm(l).includes(needle)) };
    }
  }
  const textAdded = boundedLines(lines.added, P.maxChars, flags);
  const textRemoved = boundedLines(lines.removed, P.maxChars, flags);
  if (rec.walkCut || rec.headCut || (withText && !rec.textComplete && rec.text.length >= TEXT_STORE_MAX)) flags.truncated = true;
  return {
    url: rec.url, title: rec.title, text: "", truncated: flags.truncated, elements, token: snap.token,
    since: { changed: was, added: addedPicked.length, removed, textAdded, textRemoved },
  };
}

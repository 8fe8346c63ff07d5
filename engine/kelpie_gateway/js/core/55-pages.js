// ---------------------------------------------------------------- the read, its order and its pages
// One read walks the document (or one subtree) once and fixes the snapshot's order: every listed element
// in priority order (§9 v1.2 "continuation over a captured order"). Pages are cut from that order; a later
// page skips (and counts) the elements removed since, and describes the others as they are now. Text is
// read on demand: the first read reads the first page's text; each later page resumes the walk where the
// previous page's text stopped (a position: makeTextSink), reading the captured nodes as they are now
// and not the elements added since (`skip`), up to TEXT_STORE_MAX units in all.
const TEXT_STORE_MAX = 4 * 1024 * 1024; // UTF-16 units of text one snapshot can page through
// Priority classes when a limit cuts the element list (§9 v1.1): text entry, buttons and toggles, the
// options of native selects, links, other interactive elements and unreadable placeholders, then
// headings and named images. Within a class, page order. `include: "controls"` keeps the first five.
const TEXT_ENTRY_ROLES = new Set(["textbox", "searchbox", "combobox", "listbox", "spinbutton"]);
const TOGGLE_ROLES = new Set(["button", "checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"]);
const CLASS_COUNT = 6;
const CONTROL_CLASSES = 5;
function priorityClass(info) {
  if (info.notable) return 5;
  if (info.unreadable) return 4;
  if (info.option) return 2;
  const tag = info.tag;
  const role = info.role;
  if (TEXT_ENTRY_ROLES.has(role) || tag === "textarea" || tag === "select" || isEditingHost(info.el)) return 0;
  if (TOGGLE_ROLES.has(role)) return 1;
  if (role === "link") return 3;
  return 4;
}

// Read `start` (an element or shadow root; null = the whole document), its text up to `textBound` units.
// `opts`: {text: false} reads no text (mode "none"); {positions: true} gives every element the offsets of
// its subtree's text (`textStart`, `textEnd`); {lazyShown: true} leaves whether a candidate is shown to a
// person (70-offscreen.js `notShown`) to the page that gets to it (`shownInfo`: a read lists at most a few
// hundred of a big page's thousands of candidates, and the test reads a box and styles up its ancestors;
// only reads whose every use of `order` goes through pageOf or asks shownInfo may set it); {frames: true} records a slot where a frame the host reads
// in its own world goes (the snapshot's composite reads, core/80-frames.js) — without it such a frame is
// its element's placeholder (unreadable "unavailable") and is never entered. Returns {url, title, headCut,
// start, root, text, textComplete, walkCut, order:[info], roots, slots, frames, sink, mode: "live"|"none",
// positions: Map} where `order` lists every candidate element in priority order (info.cls: its class),
// `roots` are the trees the read looked into (the document, open shadow roots, same-origin frame
// documents) and `slots` the hosted frames (none without `frames`).
function readRecord(start, textBound, opts) {
  const doc = document;
  const noText = !!(opts && opts.text === false);
  const positions = !!(opts && opts.positions);
  const frames = !!(opts && opts.frames);
  const lazyShown = !!(opts && opts.lazyShown);
  const sink = makeTextSink(noText ? 0 : textBound);
  const classes = [];
  for (let i = 0; i < CLASS_COUNT; i++) classes.push([]);
  const roots = [doc];
  const slots = [];
  let order = 0;
  const cb = Object.assign(sinkCallbacks(sink), {
    root: (r) => roots.push(r),
    element: (el, info) => {
      info.el = el;
      info.order = order++;
      info.cls = priorityClass(info);
      if (positions) info.textStart = sink.length();
      classes[info.cls].push(info);
    },
    frame: frames ? (el, inner) => slots.push(frameSlot(el, inner, sink, order)) : placeFrame(sink),
  });
  if (positions) cb.elementEnd = (info) => { info.textEnd = sink.length(); };
  if (lazyShown) cb.lazyShown = true;
  const walkCut = walkDocument(doc, cb, start, true, noText ? { text: false } : null);
  // A read with hosted frames becomes a composite, whose counts need every candidate and whose frames may
  // go away while the host reads them: decided now, as the walk saw the document.
  if (lazyShown && slots.length) for (const list of classes) for (const info of list) shownInfo(info);
  const t = sink.raw();
  const url = cutUnits(wellFormed(String(doc.location ? doc.location.href : doc.URL)), URL_MAX);
  const title = cutUnits(wellFormed(flat(doc.title || "")), TITLE_MAX);
  return {
    url: url.text, title: title.text, headCut: url.cut || title.cut, start, root: start || doc.documentElement,
    text: t.text, textComplete: !t.cut, walkCut, order: [].concat(...classes), roots, slots, frames, sink,
    mode: noText ? "none" : "live", positions: new Map(),
  };
}

// A frame the host reads in its own world, met by a read that does not compose frames (include, find,
// since, a continuation's text): its element is a placeholder and its text is not read, but the text
// keeps the block boundaries a slot makes, so every read of a document cuts the same text.
function placeFrame(sink) {
  return (el, inner) => {
    if (inner.text) sink.mark();
  };
}

// Make a composite's `rec.text` reach past unit `upto` (or be complete): the first read collects only the
// first page's text; a continuation that needs more walks the text again — the same text, since a
// composite's continuation is refused once the document changed — with a doubled bound.
function ensureText(rec, upto) {
  if (rec.textComplete || rec.text.length > upto || rec.text.length >= TEXT_STORE_MAX) return;
  const bound = Math.min(TEXT_STORE_MAX, Math.max(upto, rec.text.length * 2));
  const sink = makeTextSink(bound);
  walkDocument(document, {
    text: (d, pre) => sink.text(d, pre),
    block: () => sink.block(),
    space: () => sink.space(),
    full: () => sink.full(),
    newline: () => sink.newline(),
    frame: rec.frames ? frameTextHook(rec, sink) : placeFrame(sink),
  }, rec.start, false);
  const t = sink.raw();
  rec.text = t.text;
  rec.textComplete = !t.cut;
}

// The text of a page from unit `textAt` of the snapshot's text, at most `maxChars` units: `rec.mode`
// "none" has none, "fixed" pages through `rec.text` (a find's lines), "live" cuts the first page from
// the first read and resumes the walk for later ones (`rec.positions`: text offset -> position).
// Returns {text, left (more text after it), capped (TEXT_STORE_MAX reached)} or null for an unknown
// position.
function textPage(rec, textAt, maxChars, skip) {
  if (rec.mode === "none") return { text: "", left: false, capped: false };
  const room = TEXT_STORE_MAX - textAt;
  if (room <= 0) return { text: "", left: false, capped: true };
  const bound = Math.min(maxChars, room);
  if (rec.mode === "fixed") {
    if (textAt > rec.text.length) return null;
    const cut = cutUnits(rec.text.slice(textAt), bound);
    return { text: cut.text, left: textAt + cut.text.length < rec.text.length, capped: false };
  }
  let text;
  let position;
  if (textAt === 0) {
    const cut = cutUnits(rec.text, bound);
    text = cut.text;
    const left = cut.cut || !rec.textComplete;
    position = left ? rec.sink.position(text.length) : null;
  } else {
    if (!rec.positions.has(textAt)) return null;
    const from = resumeFrom(rec.positions.get(textAt), rec.root);
    if (from === null) {
      text = "";
      position = null;
    } else {
      const sink = makeTextSink(bound, from);
      const cb = Object.assign(sinkCallbacks(sink), { frame: placeFrame(sink) });
      walkDocument(document, cb, rec.start, false, { seek: from.path, skip });
      const t = sink.raw();
      const cut = cutUnits(wellFormed(t.text), bound);
      text = cut.text;
      position = t.cut || cut.cut ? sink.position(text.length) : null;
    }
  }
  const next = textAt + text.length;
  rec.positions.set(next, position);
  for (const k of rec.positions.keys()) if (k < textAt && rec.positions.size > 4) rec.positions.delete(k);
  return { text, left: position !== null && next < TEXT_STORE_MAX, capped: position !== null && next >= TEXT_STORE_MAX };
}

// One page of a record: text from UTF-16 unit `textAt` (textPage), the elements `elementAt …` of its
// order (at most maxElements, listed in page order). On a later page (`continuing`) an element that is no
// longer in the document is skipped and counted (`removed`), also right after the page, so no page is
// empty only for elements that are gone. Returns {text, picked, removed, truncated, rest: {textAt,
// elementAt} | null, textLeft}, or null for a text position this record never gave.
// Whether a candidate of the read is shown to a person (§9 v1.2, 70-offscreen.js `notShown`), decided the
// first time a page gets to it and kept for the snapshot (an option: where its select is shown).
function shownInfo(info) {
  if (info.shown === undefined) {
    info.shown = !(info.owner && !shownInfo(info.owner)) && !notShown(info.el, info.tag);
  }
  return info.shown;
}
function pageOf(rec, textAt, elementAt, maxChars, maxElements, continuing, skip) {
  const tp = textPage(rec, textAt, maxChars, skip);
  if (tp === null) return null;
  const order = rec.order;
  const picked = [];
  let removed = 0;
  let i = elementAt;
  for (; i < order.length; i++) {
    const info = order[i];
    if (continuing && !isLive(info.el)) { removed += 1; continue; }
    if (!shownInfo(info)) continue; // never listed: also right after the page, as if it were not there
    if (picked.length >= maxElements) break;
    picked.push(info);
  }
  picked.sort((a, b) => a.order - b.order);
  const more = tp.left || i < order.length;
  return {
    text: tp.text,
    textLeft: tp.left || tp.capped,
    picked,
    removed,
    truncated: more || tp.capped || rec.walkCut || rec.headCut,
    rest: more ? { textAt: textAt + tp.text.length, elementAt: i } : null,
  };
}

// ---------------------------------------------------------------- find (§9 v1.2)
// Text compared case-insensitively with white space collapsed.
function norm(s) {
  return flat(String(s)).toLowerCase();
}
// Start offsets of the lines of `text` (split at "\n").
function lineStarts(text) {
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return starts;
}
function lineAt(starts, offset) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
// The lines of one element: from the line where its text starts to the line where it ends; null when the
// read has no text position for it.
function elementLines(info, starts) {
  if (info.textStart === undefined || info.textEnd === undefined) return null;
  const first = lineAt(starts, info.textStart);
  const last = lineAt(starts, Math.max(info.textStart, info.textEnd - 1));
  return [first, last];
}
// What `find` matches (§9 v1.2): every criterion given must hold (docs/contract-notes.md) — `role` equal to
// the element's reported role, `name` contained in its label (or, without one, its visible text), `text`
// contained in its nearby text: its own line(s) and the lines just before and after. Returns the element
// matcher and, for the result's text, the line ranges around every match (an element's, and every line
// that contains `text`).
function finder(rec, find, flags) {
  const starts = lineStarts(rec.text);
  const lineText = (i) => rec.text.slice(starts[i], i + 1 < starts.length ? starts[i + 1] - 1 : rec.text.length);
  const role = typeof find.role === "string" ? find.role.trim().toLowerCase() : null;
  const name = typeof find.name === "string" ? norm(find.name) : null;
  const text = typeof find.text === "string" ? norm(find.text) : null;
  const windows = [];
  const around = (first, last) => [Math.max(0, first - 1), Math.min(starts.length - 1, last + 1)];
  const near = (range) => {
    const parts = [];
    for (let i = range[0]; i <= range[1]; i++) parts.push(lineText(i));
    return norm(parts.join(" "));
  };
  const label = (info) => {
    const d = cutUnits(wellFormed(accessibleName(info.el)), LABEL_MAX).text;
    return d || (info.interactive ? visibleText(info.el, flags) : "");
  };
  const matches = (info) => {
    const reported = info.role === "generic" ? "" : info.role || "";
    if (role !== null && reported !== role && !(role === "generic" && reported === "")) return false;
    if (name !== null && !norm(label(info)).includes(name)) return false;
    const own = elementLines(info, starts);
    const range = own ? around(own[0], own[1]) : null;
    if (text !== null) {
      const hay = range ? near(range) : norm(label(info));
      if (!hay.includes(text)) return false;
    }
    if (range) windows.push(range);
    return true;
  };
  const textLines = () => {
    if (text !== null) {
      for (let i = 0; i < starts.length; i++) if (norm(lineText(i)).includes(text)) windows.push(around(i, i));
    }
    windows.sort((a, b) => a[0] - b[0]);
    const out = [];
    let last = -1;
    for (const [a, b] of windows) {
      if (b <= last) continue;
      if (last >= 0 && a > last + 1) out.push("\u2026");
      for (let i = Math.max(a, last + 1); i <= b; i++) out.push(lineText(i));
      last = b;
    }
    return out.join("\n");
  };
  return { matches, textLines };
}

// ---------------------------------------------------------------- since (§9 v1.2)
// The lines of a snapshot's text for a comparison (trimmed, empty ones left out); the last line of a text
// that was cut is left out too (it may be cut mid-line).
function diffLines(text, complete) {
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => l);
  if (!complete && lines.length) lines.pop();
  return lines;
}
// The lines added and removed between an earlier text and the current one (as multisets). When the
// earlier text was only a prefix of the page (its snapshot was cut), the current text is compared up to
// where it reaches the earlier one's last lines, so what lies beyond what the earlier snapshot read is
// not reported as added.
function textChanges(before, beforeComplete, after, afterComplete) {
  const old = diffLines(before, beforeComplete);
  let now = diffLines(after, afterComplete);
  if (!beforeComplete && old.length) {
    let end = -1;
    for (let k = old.length - 1; k >= Math.max(0, old.length - 10) && end < 0; k--) end = now.lastIndexOf(old[k]);
    if (end >= 0) now = now.slice(0, end + 1);
  }
  const counts = new Map();
  for (const l of old) counts.set(l, (counts.get(l) || 0) + 1);
  const added = [];
  for (const l of now) {
    const c = counts.get(l) || 0;
    if (c > 0) counts.set(l, c - 1);
    else added.push(l);
  }
  const removed = [];
  for (const l of old) {
    const c = counts.get(l) || 0;
    if (c > 0) {
      removed.push(l);
      counts.set(l, c - 1);
    }
  }
  return { added, removed };
}
// Lines kept while their total stays within `max` UTF-16 units (a line longer than what is left is cut);
// `flags.truncated` when any was cut or dropped.
function boundedLines(lines, max, flags) {
  const out = [];
  let used = 0;
  for (const l of lines) {
    const line = wellFormed(l);
    if (used + line.length > max) {
      const cut = cutUnits(line, Math.max(0, max - used)).text;
      if (cut) out.push(cut);
      flags.truncated = true;
      break;
    }
    out.push(line);
    used += line.length;
  }
  return out;
}

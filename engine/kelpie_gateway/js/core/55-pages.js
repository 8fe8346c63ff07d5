// ---------------------------------------------------------------- the read, its order and its pages
// One read walks the document (or one subtree) once and keeps what a continuation needs: every listed
// element in priority order and the text read so far (more is read on demand, up to TEXT_STORE_MAX
// units). Pages are cut from that record (§9 v1.1: `next`/`cursor` continue the same snapshot, nothing
// repeated or skipped while the document is unchanged).
const TEXT_STORE_MAX = 4 * 1024 * 1024; // UTF-16 units of text one snapshot can page through
// Priority classes when a limit cuts the element list (§9 v1.1): text entry, buttons and toggles, the
// options of native selects, links, other interactive elements and unreadable placeholders, then
// headings and named images. Within a class, page order.
const TEXT_ENTRY_ROLES = new Set(["textbox", "searchbox", "combobox", "listbox", "spinbutton"]);
const TOGGLE_ROLES = new Set(["button", "checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"]);
const CLASS_COUNT = 6;
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

// Read `start` (an element or shadow root; null = the whole document), its text up to `textBound`
// units. Returns {url, title, headCut, start, text, textComplete, walkCut, order:[info], roots, slots}
// where `order` lists every candidate element in priority order (each info with its class `cls`),
// `roots` are the trees the read looked into (the document, open shadow roots, same-origin frame
// documents) and `slots` the frames the host reads in their own worlds (`frames` true: the snapshot's
// reads; core/80-frames.js), else none.
function readRecord(start, textBound, frames) {
  const doc = document;
  const sink = makeTextSink(textBound);
  const classes = [];
  for (let i = 0; i < CLASS_COUNT; i++) classes.push([]);
  const roots = [doc];
  const slots = [];
  let order = 0;
  const walkCut = walkDocument(doc, {
    text: (d, pre) => sink.text(d, pre),
    block: () => sink.block(),
    space: () => sink.space(),
    full: () => sink.full(),
    newline: () => sink.newline(),
    root: (r) => roots.push(r),
    element: (el, info) => {
      info.el = el;
      info.order = order++;
      classes[(info.cls = priorityClass(info))].push(info);
    },
    frame: frames ? (el, inner) => slots.push(frameSlot(el, inner, sink, order)) : undefined,
  }, start, true);
  const t = sink.raw();
  const url = cutUnits(wellFormed(String(doc.location ? doc.location.href : doc.URL)), URL_MAX);
  const title = cutUnits(wellFormed(flat(doc.title || "")), TITLE_MAX);
  return {
    url: url.text, title: title.text, headCut: url.cut || title.cut, start, text: t.text, textComplete: !t.cut,
    walkCut, order: [].concat(...classes), roots, slots, frames: !!frames,
  };
}

// Make `rec.text` reach past unit `upto` (or be complete): the first read collects only the first
// page's text (so a snapshot costs what it did before pages existed); a continuation that needs more
// walks the text again — the same text while the document is unchanged — with a doubled bound.
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
    frame: rec.frames ? frameTextHook(rec, sink) : undefined,
  }, rec.start, false);
  const t = sink.raw();
  rec.text = t.text;
  rec.textComplete = !t.cut;
}

// One page of a record: text from UTF-16 unit `textAt` (at most maxChars, never splitting a pair),
// the elements `elementAt …` of the priority order (at most maxElements, listed in page order).
// Returns {text, picked, truncated, rest: {textAt, elementAt} | null}.
function pageOf(rec, textAt, elementAt, maxChars, maxElements) {
  ensureText(rec, textAt + maxChars);
  const cut = cutUnits(rec.text.slice(textAt), maxChars);
  const picked = rec.order.slice(elementAt, elementAt + maxElements);
  picked.sort((a, b) => a.order - b.order);
  const nextText = Math.min(textAt + cut.text.length, TEXT_STORE_MAX);
  const nextElement = elementAt + picked.length;
  const textLeft = nextText < rec.text.length && nextText < TEXT_STORE_MAX;
  const more = textLeft || nextElement < rec.order.length;
  return {
    text: cut.text,
    picked,
    truncated: more || !(rec.textComplete && !textLeft) || rec.walkCut || rec.headCut,
    rest: more ? { textAt: nextText, elementAt: nextElement } : null,
  };
}


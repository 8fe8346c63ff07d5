// ---------------------------------------------------------------- DOM basics (cached per run)
// styleOf(el) answers a record whose properties are read at most once per element per run and only
// when asked (computed-style getters dominate the reader's cost on large pages):
// {display, visibility, pre (white space preserved), secured (-webkit-text-security), cursor, raw}.
class StyleRecord {
  constructor(raw) {
    this.raw = raw;
    this._display = this._visibility = this._pre = this._secured = this._cursor = undefined;
  }
  get cursor() {
    if (this._cursor === undefined) this._cursor = this.raw.cursor || "";
    return this._cursor;
  }
  get display() {
    if (this._display === undefined) this._display = this.raw.display;
    return this._display;
  }
  get visibility() {
    if (this._visibility === undefined) this._visibility = this.raw.visibility;
    return this._visibility;
  }
  get pre() {
    if (this._pre === undefined) {
      const ws = this.raw.whiteSpaceCollapse || this.raw.whiteSpace || "";
      this._pre = ws === "preserve" || ws === "break-spaces" || ws === "preserve-breaks" || /^pre/.test(ws);
    }
    return this._pre;
  }
  get secured() {
    if (this._secured === undefined) {
      const sec = this.raw.webkitTextSecurity || "";
      this._secured = !!sec && sec !== "none";
    }
    return this._secured;
  }
}
// The warm-up (snapshot.js `warmUp`) reads a small inert document of its own, which has no computed style
// and no boxes: for the elements of that one document, and only during that run, their inline style
// stands in for the computed style and every element counts as rendered, so the code a real read runs is
// what gets compiled. A real read never sets WARM_DOC, and no page can reach the warm-up's document.
let WARM_DOC = null;
function warming(el) {
  return WARM_DOC !== null && el.ownerDocument === WARM_DOC;
}
// Facts that cannot change while no page code runs, kept only for that long: `frozen(fn)` runs `fn`
// (a walk, or a snapshot's whole read and answer: nothing in them yields to the page or runs its code)
// with FROZEN = {editable: element -> isContentEditable, view: document -> defaultView, up: element ->
// its ancestors' aria-hidden/aria-disabled/inert facts}; outside it FROZEN is null and every fact is
// read afresh (an action after focus runs the page's handlers in between).
let FROZEN = null;
function frozen(fn) {
  if (FROZEN !== null) return fn();
  FROZEN = { editable: new Map(), view: new Map(), up: new Map() };
  try {
    return fn();
  } finally {
    FROZEN = null;
  }
}
function viewOf(doc) {
  if (!doc) return null;
  if (FROZEN === null) return doc.defaultView;
  const cache = FROZEN.view;
  let v = cache.get(doc);
  if (v === undefined) cache.set(doc, (v = doc.defaultView));
  return v;
}
const styleCache = new Map();
function styleOf(el, pseudo) {
  const view = viewOf(el.ownerDocument);
  if (pseudo) return view ? view.getComputedStyle(el, pseudo) : null;
  let st = styleCache.get(el);
  if (st === undefined) {
    const raw = view ? view.getComputedStyle(el) : warming(el) ? el.style : null;
    st = raw ? new StyleRecord(raw) : null;
    styleCache.set(el, st);
  }
  return st;
}
function isElement(n) {
  return !!n && n.nodeType === 1;
}
function tagOf(el) {
  const name = el.localName; // an element's is a non-empty string
  return name ? name.toLowerCase() : String(el.nodeName || "").toLowerCase();
}
function isHTML(el) {
  return el.namespaceURI === "http://www.w3.org/1999/xhtml";
}
// Parent in the flat tree: the slot a node is assigned to, its parent element, the host of its shadow
// root, or the frame element of its document.
function flatParent(n) {
  if (n.assignedSlot) return n.assignedSlot;
  if (n.parentElement) return n.parentElement;
  const p = n.parentNode;
  if (p && p.nodeType === 11 && p.host) return p.host;
  if (p && p.nodeType === 9) {
    try {
      const v = p.defaultView;
      return v && v.frameElement ? v.frameElement : null;
    } catch (e) {
      return null;
    }
  }
  return null;
}

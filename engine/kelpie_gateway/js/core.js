// Kelpie fixed reader: shared core (contract §8-§9). Committed source; the runnable scripts are assembled
// by kelpie_gateway.reader (tools/gen_reader.py writes the same bundles to build/generated/js/).
//
// This file is the body of `async function kelpieReader(P) { … }`; P holds JSON-decoded parameters.
// Nothing here may throw out of the bundle: every entry point is wrapped by `guard` in the prelude.
// Value-free: no code path reads `.value` of a text field, select or contenteditable content.

const LABEL_MAX = 500; // UTF-16 units per element label; longer labels are cut (and truncated:true)
const TAG_MAX = 128; // a page can make element names arbitrarily long (custom elements); cut (truncated:true)
const TITLE_MAX = 2000;
const URL_MAX = 8192;
const DEPTH_MAX = 1500; // deeper trees are cut (and truncated:true) instead of overflowing the stack
const ASCII_WS = /[\t\n\f\r ]+/g;

// ---------------------------------------------------------------- strings
function wellFormed(s) {
  s = String(s);
  if (typeof s.toWellFormed === "function") return s.toWellFormed();
  return s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}
function flat(s) {
  // wpt's rule: runs of ASCII whitespace become one space, then the ends are trimmed. U+00A0 is kept.
  return String(s).replace(ASCII_WS, " ").replace(/^ /, "").replace(/ $/, "");
}
// Cut `s` (well-formed) to at most n UTF-16 units without splitting a surrogate pair.
function cutUnits(s, n) {
  if (s.length <= n) return { text: s, cut: false };
  let end = n;
  if (end > 0) {
    const c = s.charCodeAt(end - 1);
    if (c >= 0xd800 && c <= 0xdbff) end -= 1;
  }
  return { text: s.slice(0, end), cut: true };
}
function codePoints(s) {
  let n = 0;
  for (const _ of s) n += 1;
  return n;
}

// ---------------------------------------------------------------- DOM basics (cached per run)
// styleOf(el) answers a record whose properties are read at most once per element per run and only
// when asked (computed-style getters dominate the reader's cost on large pages):
// {display, visibility, pre (white space preserved), secured (-webkit-text-security), raw}.
class StyleRecord {
  constructor(raw) {
    this.raw = raw;
    this._display = this._visibility = this._pre = this._secured = undefined;
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
const NOT_RENDERED_TAGS = new Set(["script", "style", "template", "noscript", "head", "meta", "link", "title", "base"]);

// Rendered = has a box or is display:contents inside a rendered parent (visibility is separate).
const renderedCache = new Map();
function isRendered(el) {
  let r = renderedCache.get(el);
  if (r !== undefined) return r;
  const st = styleOf(el);
  const tag = tagOf(el);
  if (!st || st.display === "none" || NOT_RENDERED_TAGS.has(tag)) r = false;
  else if (st.display === "contents") {
    const p = flatParent(el);
    r = p ? isRendered(p) : true;
  } else if ((tag === "option" || tag === "optgroup") && el.closest("select")) {
    r = isRendered(el.closest("select")); // options of a drop-down have no box of their own
  } else if (tag === "area") {
    const map = el.closest("map");
    r = !!map && (styleOf(map) || {}).display !== "none";
  } else if (typeof el.checkVisibility === "function") r = el.checkVisibility() || warming(el);
  else r = true;
  renderedCache.set(el, r);
  return r;
}
// What `el` and its flat-tree ancestors (across frames) say, as one record: {hidden: aria-hidden="true"
// on one of them, off: aria-disabled="true" or `inert` on one of them, docs: Map document -> whether one
// of them in that document is its open modal dialog}. The elements a read describes share most of their
// ancestors: while FROZEN each element's record is made once from its parent's (a few attribute reads
// per element instead of per element and ancestor); otherwise it is made afresh for every call.
const NO_ANCESTOR = { hidden: false, off: false, docs: new Map() };
function upFacts(el) {
  const cache = FROZEN === null ? new Map() : FROZEN.up;
  const path = [];
  let known = NO_ANCESTOR;
  for (let e = el; e; e = flatParent(e)) {
    const k = cache.get(e);
    if (k !== undefined) { known = k; break; }
    path.push(e);
  }
  for (let i = path.length - 1; i >= 0; i--) {
    const e = path[i];
    const doc = e.ownerDocument;
    const modal = e === openModal(doc);
    let docs = known.docs;
    if (!docs.has(doc) || (modal && !docs.get(doc))) {
      docs = new Map(docs);
      docs.set(doc, modal || docs.get(doc) || false);
    }
    known = {
      hidden: known.hidden || (e.getAttribute("aria-hidden") || "").toLowerCase() === "true", // not trimmed
      off: known.off || ariaToken(e, "aria-disabled") === "true" || e.hasAttribute("inert"),
      docs,
    };
    cache.set(e, known);
  }
  return known;
}
function ariaHiddenTree(el) {
  return upFacts(el).hidden;
}
// Hidden for accessibility (accname step 2A): not rendered, visibility hidden/collapse, or aria-hidden.
const hiddenCache = new Map();
function isHiddenForAria(el) {
  let r = hiddenCache.get(el);
  if (r !== undefined) return r;
  const st = styleOf(el);
  r = !st || !isRendered(el) || (st.display !== "contents" && st.visibility !== "visible") || ariaHiddenTree(el);
  hiddenCache.set(el, r);
  return r;
}
// Editability is asked up to five times per element that a walk tests in full (its role, its
// interactivity, its priority class, the descent), and each `isContentEditable` is a style-checked DOM
// call. While no page code can run (`frozen`: a walk, or a whole snapshot read and its answer) it is
// read once per element; outside — an action after focus, where the page's handlers may have changed
// it — it is always read afresh.
function isEditable(el) {
  if (FROZEN === null) return !!el.isContentEditable;
  const cache = FROZEN.editable;
  let r = cache.get(el);
  if (r === undefined) cache.set(el, (r = !!el.isContentEditable));
  return r;
}
function isEditingHost(el) {
  if (!isEditable(el)) return false;
  const p = el.parentElement;
  return !p || !isEditable(p);
}
function textSecured(el) {
  const st = styleOf(el);
  return !!st && st.secured;
}

// ---------------------------------------------------------------- roles
const VALID_ROLES = new Set(("alert alertdialog application article associationlist associationlistitemkey " +
  "associationlistitemvalue banner blockquote button caption cell checkbox comment sectionfooter sectionheader " +
  "code columnheader combobox complementary contentinfo definition deletion dialog directory document emphasis " +
  "feed figure form generic grid gridcell group heading img image insertion link list listbox listitem log main " +
  "mark marquee math menu menubar menuitem menuitemcheckbox menuitemradio meter navigation none note option " +
  "paragraph presentation progressbar radio radiogroup region row rowgroup rowheader scrollbar search searchbox " +
  "separator slider spinbutton status strong subscript superscript switch tab table tablist tabpanel term " +
  "textbox time timer toolbar tooltip tree treegrid treeitem").split(" "));
const GLOBAL_ARIA = ["aria-label", "aria-labelledby", "aria-describedby", "aria-details", "aria-owns",
  "aria-controls", "aria-live", "aria-keyshortcuts", "aria-roledescription", "aria-errormessage"];
const INPUT_ROLES = { button: "button", image: "button", reset: "button", submit: "button", checkbox: "checkbox",
  radio: "radio", range: "slider", number: "spinbutton", file: "button", color: "button" };
const TEXT_INPUT_TYPES = new Set(["", "text", "search", "url", "tel", "email", "password"]);

function inputType(el) {
  return String(el.type || "text").toLowerCase(); // the IDL attribute: unknown types read as "text"
}
function isFocusable(el) {
  if (el.hasAttribute("tabindex")) return true;
  const t = tagOf(el);
  if (["button", "select", "textarea"].includes(t)) return !el.disabled;
  if (t === "input") return inputType(el) !== "hidden" && !el.disabled;
  if ((t === "a" || t === "area") && el.hasAttribute("href")) return true;
  return isEditingHost(el);
}
function landmarkScoped(el) {
  for (let e = flatParent(el); e; e = flatParent(e)) {
    const t = tagOf(e);
    if (["article", "aside", "main", "nav", "section"].includes(t)) return true;
    const r = (e.getAttribute && e.getAttribute("role")) || "";
    if (/\b(article|complementary|main|navigation|region)\b/.test(r)) return true;
  }
  return false;
}
function implicitRole(el) {
  if (!isHTML(el)) {
    const t = tagOf(el);
    if (t === "svg") return "img";
    if (t === "a" && (el.hasAttribute("href") || el.hasAttribute("xlink:href"))) return "link";
    return null;
  }
  const t = tagOf(el);
  if (isEditingHost(el) && !["input", "textarea", "select", "button"].includes(t)) return "textbox";
  switch (t) {
    case "a": return el.hasAttribute("href") ? "link" : "generic";
    case "area": return el.hasAttribute("href") ? "link" : null;
    case "article": return "article";
    case "aside": return "complementary";
    case "b": case "bdi": case "bdo": case "data": case "div": case "i": case "pre": case "q": case "samp":
    case "small": case "span": case "u": case "body": return "generic";
    case "blockquote": return "blockquote";
    case "button": return "button";
    case "caption": return "caption";
    case "code": return "code";
    case "datalist": return "listbox";
    case "dd": return "definition";
    case "del": case "s": return "deletion";
    case "details": return "group";
    case "dfn": case "dt": return "term";
    case "dialog": return "dialog";
    case "em": return "emphasis";
    case "fieldset": case "optgroup": case "address": case "hgroup": return "group";
    case "figure": return "figure";
    case "footer": return landmarkScoped(el) ? "generic" : "contentinfo";
    case "header": return landmarkScoped(el) ? "generic" : "banner";
    case "form": return "form";
    case "h1": case "h2": case "h3": case "h4": case "h5": case "h6": return "heading";
    case "hr": return "separator";
    case "html": return "document";
    case "img": {
      const alt = el.getAttribute("alt");
      if (alt === "" && !el.hasAttribute("title") && !GLOBAL_ARIA.some((a) => el.hasAttribute(a)) && !isFocusable(el)) {
        return "presentation";
      }
      return "img";
    }
    case "input": {
      const type = inputType(el);
      if (type === "hidden") return null;
      if (INPUT_ROLES[type]) return INPUT_ROLES[type];
      const list = el.hasAttribute("list");
      if (type === "search") return list ? "combobox" : "searchbox";
      if (TEXT_INPUT_TYPES.has(type)) return list ? "combobox" : "textbox";
      return "textbox"; // date, time, month, week, datetime-local: a text field with a `type` hint (§9 v1.1)
    }
    case "ins": return "insertion";
    case "li": return "listitem";
    case "main": return "main";
    case "mark": return "mark";
    case "math": return "math";
    case "menu": case "ol": case "ul": return "list";
    case "meter": return "meter";
    case "nav": return "navigation";
    case "option": return "option";
    case "output": return "status";
    case "p": return "paragraph";
    case "progress": return "progressbar";
    case "search": return "search";
    case "section": return (el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby") || el.hasAttribute("title")) ? "region" : "generic";
    case "select": return (el.multiple || el.size > 1) ? "listbox" : "combobox";
    case "strong": return "strong";
    case "sub": return "subscript";
    case "sup": return "superscript";
    case "summary": return "button";
    case "svg": return "img";
    case "table": return "table";
    case "tbody": case "thead": case "tfoot": return "rowgroup";
    case "td": return "cell";
    case "th": return (el.getAttribute("scope") || "").toLowerCase() === "row" ? "rowheader" : "columnheader";
    case "textarea": return "textbox";
    case "time": return "time";
    case "tr": return "row";
    default:
      if (isEditingHost(el)) return "textbox";
      return null;
  }
}
const roleCache = new Map();
function roleOf(el) {
  let r = roleCache.get(el);
  if (r !== undefined) return r;
  r = null;
  const attr = el.getAttribute && el.getAttribute("role");
  if (attr) {
    for (const tok of attr.trim().toLowerCase().split(ASCII_WS)) {
      if (!VALID_ROLES.has(tok)) continue;
      if ((tok === "none" || tok === "presentation") && (isFocusable(el) || GLOBAL_ARIA.some((a) => el.hasAttribute(a)))) {
        continue; // presentational-role conflict resolution: the implicit role wins
      }
      r = tok === "image" ? "img" : tok;
      break;
    }
  }
  if (r === null) r = implicitRole(el);
  if (r === null && isEditingHost(el)) r = "textbox";
  roleCache.set(el, r);
  return r;
}

// ---------------------------------------------------------------- accessible names (accname 1.2 + html-aam)
const NAME_PROHIBITED = new Set(["caption", "code", "definition", "deletion", "emphasis", "generic", "insertion",
  "mark", "paragraph", "presentation", "none", "strong", "subscript", "suggestion", "superscript", "term", "time"]);
const NAME_FROM_CONTENT = new Set(["button", "cell", "checkbox", "columnheader", "gridcell", "heading", "link",
  "menuitem", "menuitemcheckbox", "menuitemradio", "option", "radio", "row", "rowheader", "switch", "tab",
  "tooltip", "treeitem"]);
const NAME_FROM_CONTENT_IN_DESCENDANT = new Set(["", "caption", "code", "contentinfo", "definition", "deletion",
  "emphasis", "insertion", "list", "listitem", "mark", "none", "paragraph", "presentation", "region", "row",
  "rowgroup", "section", "strong", "subscript", "superscript", "table", "term", "time", "generic", "group",
  "blockquote", "figure", "note", "article", "img"]);

function rootOf(el) {
  return el.getRootNode ? el.getRootNode() : el.ownerDocument;
}
function idRefs(el, attr) {
  const value = el.getAttribute(attr);
  if (!value) return [];
  const root = rootOf(el);
  const out = [];
  for (const id of value.split(ASCII_WS)) {
    if (!id) continue;
    const found = root && root.getElementById ? root.getElementById(id) : null;
    if (found && !out.includes(found)) out.push(found);
  }
  return out;
}
function cssString(body) {
  // Decode the escapes of a CSS string's body.
  return body.replace(/\\([0-9a-fA-F]{1,6})[ \t\n]?|\\([\s\S])/g, (_m, hex, ch) => {
    if (hex) {
      const cp = parseInt(hex, 16);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : "\uFFFD";
    }
    return ch === "\n" ? "" : ch;
  });
}
function parseContent(value, el) {
  // The computed `content` of a pseudo-element: strings, attr(), and `/ "alt"` alternative text.
  const tokens = [];
  const re = /"((?:[^"\\]|\\[\s\S])*)"|'((?:[^'\\]|\\[\s\S])*)'|attr\(\s*([^\s)]+)\s*\)|(\/)|[^\s"']+/g;
  let m;
  let alt = null;
  while ((m = re.exec(value))) {
    if (m[4]) { alt = []; continue; }
    let piece = null;
    if (m[1] !== undefined) piece = cssString(m[1]);
    else if (m[2] !== undefined) piece = cssString(m[2]);
    else if (m[3] !== undefined) piece = el.getAttribute(m[3]) || "";
    if (piece === null) continue;
    (alt || tokens).push(piece);
  }
  return (alt !== null ? alt : tokens).join("");
}
function pseudoText(el, which) {
  const st = styleOf(el, which);
  if (!st) return "";
  const c = st.content;
  if (!c || c === "none" || c === "normal" || st.display === "none") return "";
  if (st.visibility !== "visible") return "";
  let text = parseContent(c, el);
  if (text && st.display !== "inline") text = " " + text + " ";
  return text;
}
function labelsOf(el) {
  try {
    return el.labels ? Array.from(el.labels) : [];
  } catch (e) {
    return [];
  }
}
function firstChildTag(el, tag) {
  for (let c = el.firstElementChild; c; c = c.nextElementSibling) if (tagOf(c) === tag) return c;
  return null;
}

// Text alternative of `el` (accname "compute the text alternative of the current node").
// o = {visited:Set, self:bool (root), desc:bool (descendant of root), lb:bool (in aria-labelledby
// traversal), lbl:bool (in a <label>/native text alternative), hiddenRef:bool (traversal root hidden)}
function textAlt(el, o) {
  if (o.visited.has(el)) return "";
  const role = roleOf(el) || "";
  const tag = tagOf(el);
  const under = o.self && ariaHiddenTree(el) ? el : o.under;
  const child = { visited: o.visited, desc: true, lb: o.lb, lbl: o.lbl, hiddenRef: o.hiddenRef, under };
  if (NOT_RENDERED_TAGS.has(tag)) return "";
  // A slot has no accessibility node of its own: only its (assigned or default) content counts.
  if (tag === "slot") {
    o.visited.add(el);
    return accumulate(el, o);
  }
  // 2A hidden, not referenced. For the element being named itself only rendering counts: a visible
  // control under an aria-hidden ancestor still gets its name (the snapshot only lists visible elements).
  if (!o.hiddenRef && (o.self ? !isRendered(el) || styleOf(el).visibility !== "visible" : hiddenInside(el, o.under))) {
    o.visited.add(el);
    return "";
  }
  // 2B aria-labelledby
  const lbRefs = idRefs(el, "aria-labelledby");
  if (!o.lb && lbRefs.length) {
    const name = lbRefs.map((r) => textAlt(r, { visited: o.visited, lb: true, hiddenRef: isHiddenForAria(r) })).join(" ");
    if (flat(name)) {
      o.visited.add(el);
      return name;
    }
  }
  // 2C embedded control (value-free: native form controls and editable content contribute nothing)
  if (!o.self && (o.lb || o.lbl || o.desc) && !lbRefs.includes(el)) {
    if (role === "textbox" || role === "searchbox" || isEditable(el)) {
      o.visited.add(el);
      return "";
    }
    if (role === "combobox" || role === "listbox") {
      o.visited.add(el);
      // v1.1 lists a select's options with their `selected` state, so its selected options' text is
      // no secret: an embedded select contributes it (accname 1.2). Text fields stay value-free.
      if (tag === "select") return Array.from(el.selectedOptions || [], (opt) => opt.label).join(" ");
      if (tag === "input" || tag === "textarea") return "";
      const listbox = role === "listbox" ? el : ownedOrDescendant(el, (e) => roleOf(e) === "listbox");
      if (listbox) {
        const picked = [];
        collectOwned(listbox, (e) => roleOf(e) === "option" && (e.getAttribute("aria-selected") || "") === "true", picked);
        return picked.map((e) => textAlt(e, child)).join(" ");
      }
      return accumulate(el, child);
    }
    if (["progressbar", "scrollbar", "slider", "spinbutton", "meter"].includes(role)) {
      o.visited.add(el);
      if (el.hasAttribute("aria-valuetext")) return el.getAttribute("aria-valuetext") || "";
      if (el.hasAttribute("aria-valuenow")) return el.getAttribute("aria-valuenow") || "";
      if (tag === "input") return ""; // native range/number: the user's value is never read
      return el.getAttribute("value") || "";
    }
    if (role === "menu") {
      o.visited.add(el);
      return "";
    }
  }
  // 2D aria-label
  const ariaLabel = el.getAttribute("aria-label") || "";
  if (flat(ariaLabel)) {
    o.visited.add(el);
    return ariaLabel;
  }
  // 2E host language
  if (role !== "presentation" && role !== "none") {
    const hl = hostLanguageName(el, tag, lbRefs.length > 0, o, child);
    if (hl !== null) return hl;
  }
  // 2F/2G name from content
  if (NAME_FROM_CONTENT.has(role) || (o.desc && NAME_FROM_CONTENT_IN_DESCENDANT.has(role)) || tag === "summary" ||
      o.lb || o.lbl) {
    o.visited.add(el);
    const text = accumulate(el, child);
    if (o.self ? flat(text) : text) return text;
  }
  // 2I tooltip
  o.visited.add(el);
  if (role !== "presentation" && role !== "none" || tag === "iframe") {
    const title = el.getAttribute("title") || "";
    if (flat(title)) return title;
  }
  return "";
}
// Hidden for a descendant of the element being named. When that element itself sits under an
// aria-hidden ancestor (`under`), only aria-hidden between the descendant and it counts.
function hiddenInside(el, under) {
  if (!under) return isHiddenForAria(el);
  const st = styleOf(el);
  if (!st || !isRendered(el) || (st.display !== "contents" && st.visibility !== "visible")) return true;
  for (let e = el; e && e !== under; e = flatParent(e)) {
    if ((e.getAttribute("aria-hidden") || "").toLowerCase() === "true") return true;
  }
  return false;
}
function fromLabels(labels, o) {
  return labels.map((l) => textAlt(l, { visited: o.visited, lbl: true, hiddenRef: isHiddenForAria(l) }))
    .filter((s) => !!s).join(" ");
}
// HTML-AAM specific rules; returns null to continue with name from content.
function hostLanguageName(el, tag, hasLabelledBy, o, child) {
  if (!isHTML(el)) {
    if (tag === "svg" || el.ownerSVGElement) {
      const t = firstChildTag(el, "title");
      if (t && flat(t.textContent || "")) {
        o.visited.add(el);
        return t.textContent || ""; // svg-aam: the <title> child's text (never rendered, so not walked)
      }
      if (tag === "a") {
        const title = el.getAttribute("xlink:title") || "";
        if (flat(title)) { o.visited.add(el); return title; }
      }
    }
    return null;
  }
  if (tag === "input") {
    const type = inputType(el);
    o.visited.add(el);
    if (type === "button" || type === "submit" || type === "reset") {
      // A button's value is its visible caption, not user data.
      const v = el.getAttribute("value") || "";
      if (flat(v)) return v;
      if (type === "submit") return "Submit";
      if (type === "reset") return "Reset";
      return el.getAttribute("title") || "";
    }
    if (type === "image") {
      const labels = labelsOf(el);
      if (labels.length && !o.lb) return fromLabels(labels, o);
      const alt = el.getAttribute("alt") || "";
      if (flat(alt)) return alt;
      const title = el.getAttribute("title") || "";
      if (flat(title)) return title;
      return "Submit";
    }
  }
  if (!hasLabelledBy && (tag === "button" || tag === "meter" || tag === "progress")) {
    const labels = labelsOf(el);
    if (labels.length) { o.visited.add(el); return fromLabels(labels, o); }
    return null;
  }
  if (!hasLabelledBy && tag === "output") {
    o.visited.add(el);
    const labels = labelsOf(el);
    if (labels.length) return fromLabels(labels, o);
    return el.getAttribute("title") || "";
  }
  if (!hasLabelledBy && (tag === "input" || tag === "textarea" || tag === "select")) {
    o.visited.add(el);
    const labels = labelsOf(el);
    if (labels.length) return fromLabels(labels, o);
    const type = tag === "input" ? inputType(el) : "";
    const placeholderOk = tag === "textarea" || (tag === "input" && TEXT_INPUT_TYPES.has(type));
    const title = el.getAttribute("title") || "";
    if (flat(title) || !placeholderOk) return title;
    return el.getAttribute("placeholder") || "";
  }
  if (!hasLabelledBy && (tag === "fieldset" || tag === "figure")) {
    o.visited.add(el);
    const cap = firstChildTag(el, tag === "fieldset" ? "legend" : "figcaption");
    if (cap) {
      const n = textAlt(cap, { visited: o.visited, desc: true, lbl: true, hiddenRef: isHiddenForAria(cap) });
      if (flat(n)) return n;
    }
    return el.getAttribute("title") || "";
  }
  if (tag === "img" || tag === "area") {
    o.visited.add(el);
    const alt = el.getAttribute("alt") || "";
    if (flat(alt)) return alt;
    return el.getAttribute("title") || "";
  }
  if (tag === "table") {
    const cap = firstChildTag(el, "caption");
    if (cap) {
      o.visited.add(el);
      const n = textAlt(cap, { visited: o.visited, desc: true, lbl: true, hiddenRef: isHiddenForAria(cap) });
      if (flat(n)) return n;
    }
    const summary = el.getAttribute("summary") || "";
    if (flat(summary)) { o.visited.add(el); return summary; }
    return null;
  }
  if (tag === "option" && el.closest("select")) {
    o.visited.add(el);
    return el.label || ""; // the label attribute, else the option's text (white space collapsed)
  }
  if (tag === "optgroup") {
    const l = el.getAttribute("label") || "";
    if (flat(l)) { o.visited.add(el); return l; }
  }
  if (tag === "iframe" || tag === "frame") {
    return null; // falls through to title
  }
  return null;
}
function collectOwned(el, pred, out) {
  const kids = [];
  for (let c = el.firstElementChild; c; c = c.nextElementSibling) kids.push(c);
  for (const c of idRefs(el, "aria-owns")) kids.push(c);
  for (const c of kids) {
    if (pred(c)) out.push(c);
    collectOwned(c, pred, out);
  }
  return out;
}
function ownedOrDescendant(el, pred) {
  const found = collectOwned(el, pred, []);
  return found.length ? found[0] : null;
}
function isInline(el) {
  const st = styleOf(el);
  const d = st ? st.display : "inline";
  return d === "inline" && tagOf(el) !== "br";
}
const VALUE_TAGS = new Set(["input", "textarea", "select", "option", "optgroup", "datalist"]);
function accumulate(el, o) {
  // Value-free: the content of form controls and editable regions is their value.
  if (VALUE_TAGS.has(tagOf(el)) && !(tagOf(el) === "option" && !el.closest("select, datalist"))) return "";
  if (isEditable(el) || textSecured(el)) return "";
  const parts = [pseudoText(el, "::before")];
  const visit = (n) => {
    if (n.nodeType === 3) {
      const p = n.parentElement;
      if (p && (textSecured(p) || isEditable(p))) return; // editable content and password-like text
      parts.push(n.data);
    } else if (n.nodeType === 1) {
      const t = textAlt(n, o);
      parts.push(isInline(n) ? t : " " + t + " ");
    }
  };
  const assigned = tagOf(el) === "slot" && el.assignedNodes ? el.assignedNodes() : [];
  if (assigned.length) {
    for (const n of assigned) visit(n);
  } else {
    if (el.shadowRoot) {
      for (let n = el.shadowRoot.firstChild; n; n = n.nextSibling) visit(n);
    } else {
      for (let n = el.firstChild; n; n = n.nextSibling) if (!n.assignedSlot) visit(n);
    }
    for (const n of idRefs(el, "aria-owns")) visit(n);
  }
  parts.push(pseudoText(el, "::after"));
  return parts.join("");
}

const nameCache = new Map();
// The accessible name of `el`, flattened (ASCII whitespace collapsed, trimmed), not yet bounded.
function accessibleName(el) {
  let name = nameCache.get(el);
  if (name !== undefined) return name;
  const role = roleOf(el) || "";
  if (NAME_PROHIBITED.has(role) && !(tagOf(el) === "img")) name = "";
  else name = flat(textAlt(el, { visited: new Set(), self: true })).trim(); // also outer U+00A0 (html-aam)
  nameCache.set(el, name);
  return name;
}

// ---------------------------------------------------------------- the walk
const INTERACTIVE_ROLES = new Set(["button", "link", "checkbox", "radio", "switch", "textbox", "searchbox",
  "combobox", "listbox", "option", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "slider",
  "spinbutton", "treeitem", "scrollbar", "gridcell"]);
const VALID_SHADOW_HOSTS = new Set(["article", "aside", "blockquote", "body", "div", "footer", "h1", "h2", "h3",
  "h4", "h5", "h6", "header", "main", "nav", "p", "section", "span"]);
const LAYOUT_CONTAINERS = new Set(["article", "aside", "body", "div", "footer", "header", "main", "nav", "section"]);
// The open shadow root of `el`, or null. Only a custom element (its name has a hyphen) or one of
// VALID_SHADOW_HOSTS can host one (DOM `attachShadow`, declarative shadow roots alike; a lower-cased
// `tag` of such a name is itself), so for every other tag the DOM call is not made.
function openRootOf(el, tag) {
  return VALID_SHADOW_HOSTS.has(tag) || tag.includes("-") ? el.shadowRoot : null;
}

function isInteractive(el, tag, role) {
  if (tag === "a" || tag === "area") return el.hasAttribute("href") || INTERACTIVE_ROLES.has(role);
  if (tag === "button" || tag === "select" || tag === "textarea") return true;
  if (tag === "input") return inputType(el) !== "hidden";
  if (tag === "summary") return true;
  if ((tag === "audio" || tag === "video") && el.hasAttribute("controls")) return true;
  if (INTERACTIVE_ROLES.has(role)) return true;
  if (isEditingHost(el)) return true;
  const ti = el.getAttribute("tabindex");
  if (ti !== null && ti.trim() !== "" && Number(ti) >= 0) return true;
  return el.hasAttribute("onclick");
}
function isNotable(el, tag, role) {
  return role === "heading" || (role === "img" && tag === "img");
}
// Heuristic for a closed shadow root (unreadable from any script): a possible host with no open root whose
// rendered box holds content its light DOM does not explain.
function closedShadowSuspect(el, tag, rec) {
  if (!mayHideShadow(el, tag)) return false;
  const st = rec.raw;
  const hasContent = hasLightContent(el);
  const box = el.getBoundingClientRect();
  const px = (v) => parseFloat(v) || 0;
  const innerW = box.width - px(st.paddingLeft) - px(st.paddingRight) - px(st.borderLeftWidth) - px(st.borderRightWidth);
  const innerH = box.height - px(st.paddingTop) - px(st.paddingBottom) - px(st.borderTopWidth) - px(st.borderBottomWidth);
  if (innerW < 1 || innerH < 1) return false;
  if (!hasContent) return true;
  const range = el.ownerDocument.createRange();
  range.selectNodeContents(el);
  const light = range.getBoundingClientRect();
  const inline = rec.display.startsWith("inline");
  return light.height + 1 < innerH || (inline && light.width + 1 < innerW);
}
// The style-free part of that heuristic: only a custom element, or a `span`/`p`/heading/`blockquote`
// without light content, can be suspected.
function mayHideShadow(el, tag) {
  const custom = tag.includes("-");
  if (!custom && (!VALID_SHADOW_HOSTS.has(tag) || LAYOUT_CONTAINERS.has(tag))) return false;
  if (!custom && hasLightContent(el)) return false;
  return isHTML(el);
}
// Whether `el` has light content: an element child, or a text child that is not only white space
// (String.prototype.trim's). Decided without touching its text nodes: every node touched from the
// isolated world costs a wrapper, and on big pages these text wrappers were a quarter of the walk
// (docs/reader.md, "Performance"). Without element children, `textContent` is exactly the concatenation
// of the text children, and it is white space only exactly when each of them is. In an XML document a
// CDATA section (a Text node of another nodeType) may contribute, so there the children are read one by
// one as before; an HTML document can only hold one adopted from an XML document, and its text counts.
const NOT_WHITE = /\S/; // \s is exactly the white space String.prototype.trim removes
const htmlDocCache = new Map();
function hasLightContent(el) {
  if (el.firstElementChild) return true;
  if (!NOT_WHITE.test(el.textContent || "")) return false;
  const doc = el.ownerDocument;
  let html = htmlDocCache.get(doc);
  if (html === undefined) htmlDocCache.set(doc, (html = doc.contentType === "text/html"));
  if (html) return true;
  for (let n = el.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 3 && NOT_WHITE.test(n.data)) return true;
  }
  return false;
}

// ---------------------------------------------------------------- the walk once the text is complete
// Once the walk reads no more text (the text bound is reached, or it is inside password-like or
// editable content), an element matters only when it may be listed or opens another tree (a shadow
// host, a frame). Every other element is descended into without reading its style ("unsettled"), and
// only its element children are visited. An element that matters gets the walk's full test; passing it
// implies that every ancestor passes it too (a box, or display:contents inside a rendered parent:
// checkVisibility sees all ancestors in its document, and a frame element is itself tested), and
// failing it skips the subtree as before. The unsettled ancestors are tested (`settled`) only where
// that implication does not help: a node past the depth bound cuts only under rendered ancestors.
// So a walk lists, reads and cuts exactly what a walk that styled every element would, at a cost of a
// few DOM reads per element and a style read per element that matters (docs/reader.md, "Performance").
// Tags that are listed without any attribute (HTML-AAM implicit roles that are interactive, headings,
// images); without attributes, `span`, `p` and `blockquote` have a role that is never listed and matter
// only as a possible closed shadow host, like custom elements.
const BARE_LISTED_TAGS = new Set(["button", "datalist", "h1", "h2", "h3", "h4", "h5", "h6", "img", "input",
  "option", "select", "summary", "textarea"]);
const SHADOW_SUSPECT_TAGS = new Set(["blockquote", "p", "span"]);
const VALUE_CONTEXT_TAGS = new Set(["textarea", "select", "input", "option", "optgroup", "datalist", "object",
  "embed", "canvas"]);
// Whether the full test of `el` is needed: it may be listed, or it opens another tree. Exactly the
// walk's own criteria (isInteractive, isNotable, closedShadowSuspect), short-cut for an element without
// attributes, whose role is its tag's implicit role. `editable` is the element's isContentEditable, read
// by the caller (a walk: FROZEN is set); it is kept wherever the tests below would read it again.
function mustSettle(el, tag, elements, editable) {
  if (tag === "iframe" || tag === "frame" || openRootOf(el, tag)) return true;
  if (!elements) return false;
  if (editable) {
    FROZEN.editable.set(el, true);
    if (isEditingHost(el)) return true;
  }
  if (el.hasAttributes() || BARE_LISTED_TAGS.has(tag)) {
    FROZEN.editable.set(el, editable);
    const role = roleOf(el) || "";
    return isInteractive(el, tag, role) || isNotable(el, tag, role) || mayHideShadow(el, tag);
  }
  return (SHADOW_SUSPECT_TAGS.has(tag) || tag.includes("-")) && mayHideShadow(el, tag);
}
// Whether every unsettled element on the walk's path (`pending`: {el, up, ok}, innermost first) passes
// the walk's descent test: it has a box or is `display:contents` inside a rendered parent.
function settled(pending) {
  const open = [];
  for (let q = pending; q && q.ok === undefined; q = q.up) open.push(q);
  let ok = !open.length || !open[open.length - 1].up || open[open.length - 1].up.ok;
  for (let i = open.length - 1; i >= 0; i--) {
    if (ok) {
      const st = styleOf(open[i].el);
      ok = !!st && st.display !== "none" && isRendered(open[i].el);
    }
    open[i].ok = ok;
  }
  return !pending || pending.ok;
}
const NOTHING_TO_READ = { text: false, elements: false };

// Walk the flat tree (open shadow roots, slots, same-origin frames) in document order.
// Calls cb.text(str, pre) for visible text, cb.block() at block boundaries, cb.element(el, info) for
// every rendered, visible element outside value contexts (info = {tag, role, interactive, notable,
// unreadable}). Returns true when the walk was cut (depth bound).
function walkDocument(doc, cb, start, elements) {
  let cut = false;
  // `pending`: the unsettled elements between the node and the last settled one (null: none).
  // Once no more text is read, a child that is not an element (text, comment) is a no-op for `visit`
  // unless it lies past the depth bound (then it cuts): such children are stepped over without being
  // touched (each node touched from the isolated world costs a wrapper), and a text-only walk stops.
  const textDone = (ctx) => !ctx.text || cb.full();
  // The children of `parent` (an element or a shadow root). A child reached by an element step
  // (`firstElementChild`/`nextElementSibling`, taken once no more text is read) is visited as an element
  // without asking its nodeType (a DOM call per node from this world).
  const children = (parent, depth, ctx, pending) => {
    const elementsOnly = depth + 1 <= DEPTH_MAX;
    let element = elementsOnly && textDone(ctx);
    for (let c = element ? parent.firstElementChild : parent.firstChild; c; ) {
      if (elementsOnly && textDone(ctx)) {
        if (!ctx.elements && !cb.root) return;
        if (element || c.nodeType === 1) visitElement(c, depth + 1, ctx, pending);
        c = c.nextElementSibling;
        element = true;
      } else {
        visit(c, depth + 1, ctx, pending);
        c = c.nextSibling;
        element = false;
      }
    }
  };
  const visitChildren = (parent, tag, depth, ctx, pending) => {
    const root = openRootOf(parent, tag);
    if (root) {
      if (cb.root) cb.root(root);
      children(root, depth, ctx, pending);
      return;
    }
    if (tag === "slot" && parent.assignedNodes) {
      const assigned = parent.assignedNodes();
      if (assigned.length) {
        for (const c of assigned) visit(c, depth + 1, ctx, pending);
        return;
      }
    }
    children(parent, depth, ctx, pending);
  };
  // The children of an unsettled element (no shadow root: a host is always settled). No text is read
  // any more, so only element children are visited; a child node past the depth bound still cuts.
  const lazyChildren = (parent, tag, depth, ctx, pending) => {
    if (tag === "slot" && parent.assignedNodes) {
      const assigned = parent.assignedNodes();
      if (assigned.length) {
        for (const c of assigned) visit(c, depth + 1, ctx, pending);
        return;
      }
    }
    if (depth + 1 > DEPTH_MAX) {
      if (parent.firstChild && settled(pending)) cut = true;
      return;
    }
    // An element child is visited as one (no nodeType read: a DOM call per node from this world).
    for (let c = parent.firstElementChild; c; c = c.nextElementSibling) visitElement(c, depth + 1, ctx, pending);
  };
  const visit = (n, depth, ctx, pending) => {
    if (depth > DEPTH_MAX) {
      if (settled(pending)) cut = true;
      return;
    }
    const type = n.nodeType;
    if (type === 11) { // a shadow root given as the start of a scoped walk
      for (let c = n.firstChild; c; c = c.nextSibling) visit(c, depth + 1, ctx, pending);
      return;
    }
    if (type === 3) {
      if (!ctx.text || cb.full()) return;
      const p = n.parentElement || flatParent(n);
      const st = p ? styleOf(p) : null;
      if (!st || st.visibility !== "visible") return;
      cb.text(n.data, st.pre);
      return;
    }
    if (type === 1) visitElement(n, depth, ctx, pending);
  };
  // `visit` of an element within the depth bound.
  const visitElement = (el, depth, ctx, pending) => {
    const tag = tagOf(el);
    if (NOT_RENDERED_TAGS.has(tag)) return;
    if (!ctx.text || cb.full()) {
      if (!ctx.elements && !cb.root) return; // a text-only walk (ensureText) has nothing left to read here
      // No more text to read: an element that cannot matter is descended into unsettled.
      const editable = !!el.isContentEditable; // read once here; kept only for an element that is settled
      if (!mustSettle(el, tag, ctx.elements, editable)) {
        if (tag === "br" || VALUE_CONTEXT_TAGS.has(tag)) return;
        lazyChildren(el, tag, depth, editable ? NOTHING_TO_READ : ctx, { el, up: pending, ok: undefined });
        return;
      }
      FROZEN.editable.set(el, editable);
      // Settling the pending ancestors is not needed here: an element that passes the checks below
      // (a box, or display:contents inside a rendered parent; checkVisibility sees every ancestor in
      // its document, frames are settled themselves) has only ancestors that pass them too.
    }
    const st = styleOf(el);
    if (!st || st.display === "none") return;
    if (!isRendered(el)) return;
    if (tag === "br") { if (ctx.text) cb.newline(); return; }
    const display = st.display;
    const block = display !== "contents" && !display.startsWith("inline");
    const atomic = display !== "inline" && display.startsWith("inline"); // inline-block, inline-flex, …
    const role = roleOf(el) || "";
    let unreadable = null;
    let frameDoc = null;
    if (tag === "iframe" || tag === "frame") {
      try {
        frameDoc = el.contentDocument;
      } catch (e) {
        frameDoc = null;
      }
      if (!frameDoc || !frameDoc.documentElement) unreadable = frameDoc ? null : "cross-origin-frame";
    } else if (ctx.elements && closedShadowSuspect(el, tag, st) && !el.shadowRoot) {
      unreadable = "closed-shadow-root";
    }
    if (ctx.elements) {
      const interactive = isInteractive(el, tag, role);
      const notable = !interactive && isNotable(el, tag, role);
      if ((interactive || notable || unreadable) && st.visibility === "visible") {
        cb.element(el, { tag, role, interactive: interactive || !!unreadable, notable, unreadable });
        if (tag === "select") listOptions(el, cb);
      }
    }
    // Value contexts: never descend for text or elements.
    if (VALUE_CONTEXT_TAGS.has(tag)) return;
    let inner = ctx;
    if (isEditable(el)) inner = NOTHING_TO_READ;
    else if (ctx.text && !cb.full() && textSecured(el)) inner = { text: false, elements: ctx.elements };
    if (block && inner.text) cb.block();
    else if (atomic && inner.text) cb.space();
    if (frameDoc && frameDoc.documentElement) {
      if (cb.root) cb.root(frameDoc);
      visit(frameDoc.documentElement, depth + 1, inner, null);
    } else {
      visitChildren(el, tag, depth, inner, null);
    }
    if (block && inner.text) cb.block();
    else if (atomic && inner.text) cb.space();
  };
  const ctx = { text: true, elements };
  frozen(() => {
    if (start) visit(start, 0, ctx, null);
    else if (doc.documentElement) visit(doc.documentElement, 0, ctx, null);
  });
  return cut;
}
// The options (and optgroup labels) of a listed <select>, as elements of their own right after it
// (§9 v1.1): they have no box in a drop-down, so only `display:none`/`hidden` ones are skipped.
function listOptions(select, cb) {
  const shown = (e) => !e.hidden && (styleOf(e) || { display: "none" }).display !== "none";
  for (let c = select.firstElementChild; c; c = c.nextElementSibling) {
    const t = tagOf(c);
    if (t === "option" && shown(c)) cb.element(c, { tag: t, role: "option", interactive: true, notable: false, unreadable: null, option: true });
    if (t !== "optgroup" || !shown(c)) continue;
    cb.element(c, { tag: t, role: "group", interactive: true, notable: false, unreadable: null, option: true });
    for (let o = c.firstElementChild; o; o = o.nextElementSibling) {
      if (tagOf(o) === "option" && shown(o)) cb.element(o, { tag: "option", role: "option", interactive: true, notable: false, unreadable: null, option: true });
    }
  }
}

// Text accumulator: collapses white space like rendering does, bounded by maxChars UTF-16 units.
function makeTextSink(maxChars) {
  const out = [];
  let len = 0;
  let pend = 0; // 0 nothing, 1 space, 2 newline
  let started = false;
  let cut = false;
  const push = (s) => {
    if (cut) return;
    if (started && pend) {
      const sep = pend === 2 ? "\n" : " ";
      out.push(sep);
      len += 1;
    }
    pend = 0;
    started = true;
    out.push(s);
    len += s.length;
    if (len > maxChars) cut = true;
  };
  return {
    text(data, pre) {
      if (cut) return;
      data = wellFormed(data);
      const lines = pre ? data.split(/\r\n|\r|\n/) : [data];
      lines.forEach((line, i) => {
        if (i > 0) pend = 2;
        const lead = /^[\t\n\f\r ]/.test(line);
        const core = line.replace(ASCII_WS, " ").trim();
        if (lead && pend < 1) pend = 1;
        if (core) push(core);
        if (/[\t\n\f\r ]$/.test(line) && pend < 1) pend = 1;
      });
    },
    block() { if (pend < 2) pend = 2; },
    space() { if (pend < 1) pend = 1; },
    newline() { if (pend < 2) pend = 2; },
    full() { return cut; },
    // The text cut to maxChars (never inside a pair) and whether anything was cut.
    result() {
      const r = cutUnits(out.join(""), maxChars);
      return { text: r.text, cut: r.cut || cut };
    },
    // Everything collected (it may run past maxChars by one piece) and whether more text was left.
    raw() { return { text: out.join(""), cut }; },
  };
}

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
// units. Returns {url, title, headCut, start, text, textComplete, walkCut, order:[info], roots} where
// `order` lists every candidate element in priority order and `roots` are the trees the read looked into
// (the document, open shadow roots, same-origin frame documents).
function readRecord(start, textBound) {
  const doc = document;
  const sink = makeTextSink(textBound);
  const classes = [];
  for (let i = 0; i < CLASS_COUNT; i++) classes.push([]);
  const roots = [doc];
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
      classes[priorityClass(info)].push(info);
    },
  }, start, true);
  const t = sink.raw();
  const url = cutUnits(wellFormed(String(doc.location ? doc.location.href : doc.URL)), URL_MAX);
  const title = cutUnits(wellFormed(flat(doc.title || "")), TITLE_MAX);
  return {
    url: url.text, title: title.text, headCut: url.cut || title.cut, start, text: t.text, textComplete: !t.cut,
    walkCut, order: [].concat(...classes), roots,
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

// ---------------------------------------------------------------- element states (§9 v1.1)
const CHECKABLE_ROLES = new Set(["checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"]);
const SELECTABLE_ROLES = new Set(["option", "tab", "gridcell", "row", "treeitem", "columnheader", "rowheader"]);
const READONLY_ROLES = new Set(["textbox", "searchbox", "combobox", "grid", "gridcell", "listbox", "slider",
  "spinbutton", "checkbox", "radio", "radiogroup", "switch", "treegrid", "columnheader", "rowheader"]);
function ariaToken(el, name) {
  return (el.getAttribute(name) || "").trim().toLowerCase();
}
const modalCache = new Map();
function openModal(doc) {
  let m = modalCache.get(doc);
  if (m === undefined) {
    try {
      m = doc.querySelector("dialog:modal");
    } catch (e) {
      m = null;
    }
    modalCache.set(doc, m);
  }
  return m;
}
// Disabled as §9 v1.1 defines it: the `disabled` attribute (and what it implies: a disabled fieldset
// outside its first legend, a disabled optgroup or select for an option), aria-disabled="true" on the
// element or an ancestor, an `inert` subtree, or outside an open modal dialog (which makes the rest inert).
function isDisabled(el) {
  try {
    if (el.matches(":disabled")) return true;
  } catch (e) {
    // not an element :disabled applies to
  }
  const t = tagOf(el);
  if (t === "option" || t === "optgroup") {
    const sel = el.closest("select");
    if (sel && sel.matches(":disabled")) return true;
  }
  const up = upFacts(el);
  if (up.off) return true;
  for (const [doc, inside] of up.docs) if (!inside && openModal(doc)) return true;
  return false;
}
// Captured-node text actions (tab.type, the host's `fill`): focus `el` and check it again, as §9 requires
// (focus handlers may have removed, replaced, disabled or retyped it). `eligibility(el)` answers one of
// `kinds` or a refusal reason; `kind` is what it answered before focus. Returns null when `el` is still
// live and still `kind`, else the refusal, mayHaveCompleted:true (the page's focus handlers ran).
function focusAndRecheck(el, kind, eligibility, kinds) {
  STATE.effect = true;
  if (typeof el.focus === "function") el.focus();
  if (!isLive(el)) return fail("NODE_REPLACED", "the element was removed while it was being focused; observe before acting", true);
  const again = eligibility(el);
  if (again === kind) return null;
  return fail("NOT_TYPABLE", (kinds.includes(again) ? "the element changed kind" : again) + " after focus; observe before acting", true);
}
// Put the caret at the end of an editing host's contents (after text was written into it), as a user's
// caret would be. Cosmetic: a page whose selection API throws is not an error.
function caretToEnd(view, doc, el) {
  try {
    const sel = view.getSelection();
    if (sel) {
      const range = doc.createRange();
      range.selectNodeContents(el);
      range.collapse(false);
      sel.removeAllRanges();
      sel.addRange(range);
    }
  } catch (e) {
    // caret placement is cosmetic
  }
}
// No part of the element's box can be scrolled into the viewport: left of or above the scroll origin,
// beyond the scrollable area, a fixed box outside the viewport, or clipped away by an overflow-clipping
// (or `clip: rect(0 0 0 0)`) ancestor. A read describes up to 200 elements that mostly share their
// ancestors, and a computed-style property read costs microseconds: what an ancestor contributes (its
// clip, overflow, position and, when it clips, its box) and each document's scroll geometry are read once
// per run (nothing runs between the reads of one describe pass, so they cannot change in between).
const clipCache = new Map();
function clipFacts(a) {
  let f = clipCache.get(a);
  if (f !== undefined) return f;
  const st = styleOf(a);
  if (!st) {
    f = null;
  } else {
    const raw = st.raw;
    const position = raw.position;
    const ox = raw.overflowX;
    const oy = raw.overflowY;
    const cx = ox === "hidden" || ox === "clip";
    const cy = oy === "hidden" || oy === "clip";
    f = {
      zero: position !== "static" && raw.clip === "rect(0px, 0px, 0px, 0px)", // clip applies only when positioned
      cx, cy, fixed: position === "fixed", rect: null, el: a,
    };
  }
  clipCache.set(a, f);
  return f;
}
const scrollCache = new Map();
function scrollFacts(doc, view, root) {
  let f = scrollCache.get(doc);
  if (f === undefined) {
    const se = doc.scrollingElement || root;
    f = {
      sx: view.scrollX, sy: view.scrollY, cw: root.clientWidth, ch: root.clientHeight,
      sw: se.scrollWidth, sh: se.scrollHeight,
    };
    scrollCache.set(doc, f);
  }
  return f;
}
// What the ancestors of `a` (in its document, flat tree) do to a box inside them, up to and including the
// first `position: fixed` one: {zero (a `clip: rect(0 0 0 0)` one), clips: [clip facts of the overflow-
// clipping ones], fixed}. Kept per element for the run: the elements of one read share most ancestors.
const aboveCache = new Map();
function clipsAbove(a) {
  const doc = a.ownerDocument;
  const path = [];
  let known = null;
  for (let e = a; ; ) {
    const p = flatParent(e);
    if (!p || p.ownerDocument !== doc) { known = { zero: false, clips: [], fixed: false }; break; }
    path.push(e);
    const up = aboveCache.get(e);
    if (up !== undefined) { path.pop(); known = up; break; }
    e = p;
  }
  // `path` holds elements whose summaries are missing, innermost first; fill them outermost first.
  for (let i = path.length - 1; i >= 0; i--) {
    const p = flatParent(path[i]);
    const f = clipFacts(p);
    let up;
    if (!f) up = known;
    else if (f.fixed) up = { zero: f.zero, clips: f.cx || f.cy ? [f] : [], fixed: true };
    else if (!f.zero && !f.cx && !f.cy) up = known;
    else up = { zero: f.zero || known.zero, clips: f.cx || f.cy ? [f, ...known.clips] : known.clips, fixed: known.fixed };
    aboveCache.set(path[i], up);
    known = up;
  }
  return known;
}
function isOffscreen(el) {
  let box = el;
  if ((tagOf(el) === "option" || tagOf(el) === "optgroup") && el.closest("select")) {
    const sel = el.closest("select");
    if (!(sel.multiple || sel.size > 1)) box = sel; // a drop-down's options show where the select is
  }
  const r = box.getBoundingClientRect();
  const doc = box.ownerDocument;
  const view = doc.defaultView;
  let fixed = false;
  const own = clipFacts(box);
  if (own && own.zero) return true;
  if (own && own.fixed) {
    fixed = true;
  } else {
    const up = clipsAbove(box);
    if (up.zero) return true;
    for (const f of up.clips) {
      const ar = f.rect || (f.rect = f.el.getBoundingClientRect());
      if (f.cx && (r.right <= ar.left || r.left >= ar.right)) return true;
      if (f.cy && (r.bottom <= ar.top || r.top >= ar.bottom)) return true;
    }
    fixed = up.fixed;
  }
  const root = doc.documentElement;
  if (!view || !root) return false;
  const g = scrollFacts(doc, view, root);
  if (fixed) {
    return r.right <= 0 || r.bottom <= 0 || r.left >= g.cw || r.top >= g.ch;
  }
  const x = r.left + g.sx;
  const y = r.top + g.sy;
  if (r.right + g.sx <= 0 || r.bottom + g.sy <= 0) return true;
  return x >= Math.max(g.sw, g.cw) || y >= Math.max(g.sh, g.ch);
}
// The sorted `states` of an element (closed set; booleans a screen reader announces, never a value).
function statesOf(el, info) {
  const s = new Set();
  const tag = info.tag;
  const role = info.role;
  const html = isHTML(el);
  const type = html && tag === "input" ? inputType(el) : "";
  if (type === "checkbox" && el.indeterminate) s.add("mixed");
  else if (type === "checkbox" || type === "radio") { if (el.checked) s.add("checked"); }
  else if (CHECKABLE_ROLES.has(role)) {
    const c = ariaToken(el, "aria-checked");
    if (c === "true") s.add("checked");
    else if (c === "mixed") s.add("mixed");
  }
  if (html && tag === "option" && el.closest("select")) { if (el.selected) s.add("selected"); }
  else if (SELECTABLE_ROLES.has(role) && ariaToken(el, "aria-selected") === "true") s.add("selected");
  const ex = ariaToken(el, "aria-expanded");
  if (ex === "true") s.add("expanded");
  else if (ex === "false") s.add("collapsed");
  else if (tag === "summary" && el.parentElement && tagOf(el.parentElement) === "details" &&
           firstChildTag(el.parentElement, "summary") === el) {
    s.add(el.parentElement.open ? "expanded" : "collapsed");
  }
  const pr = ariaToken(el, "aria-pressed");
  if (pr === "true") s.add("pressed");
  else if (pr === "mixed") s.add("mixed");
  if (isDisabled(el)) s.add("disabled");
  if (html && ((tag === "input" && (TEXT_INPUT_TYPES.has(type) || role === "textbox" || type === "number")) ||
      tag === "textarea") && el.readOnly) s.add("readonly");
  else if (READONLY_ROLES.has(role) && ariaToken(el, "aria-readonly") === "true") s.add("readonly");
  if (html && (tag === "input" || tag === "select" || tag === "textarea") && el.required) s.add("required");
  else if (ariaToken(el, "aria-required") === "true") s.add("required");
  const inv = ariaToken(el, "aria-invalid");
  let userInvalid = false;
  try {
    userInvalid = html && el.matches(":user-invalid");
  } catch (e) {
    userInvalid = false; // selector unknown to this browser
  }
  if ((inv && inv !== "false") || userInvalid) s.add("invalid");
  if (isOffscreen(el)) s.add("offscreen");
  return Array.from(s).sort();
}

// `url` of a link (§9 v1.1): http(s) resolved, a same-document target as its `#fragment`, any other
// scheme as the bare scheme (`javascript:`, `mailto:`); null when the element has no href.
const URL_FIELD_MAX = 500;
function linkUrl(el, tag) {
  let raw;
  if (isHTML(el) && (tag === "a" || tag === "area")) {
    if (!el.hasAttribute("href")) return null;
    raw = String(el.href);
  } else if (tag === "a" && !isHTML(el)) {
    const h = el.getAttribute("href") ?? el.getAttributeNS("http://www.w3.org/1999/xlink", "href");
    if (h === null) return null;
    try {
      raw = new URL(h, el.baseURI).href;
    } catch (e) {
      raw = h;
    }
  } else {
    return null;
  }
  const hash = raw.indexOf("#");
  const docUrl = String(el.ownerDocument.URL);
  const docBase = docUrl.indexOf("#") >= 0 ? docUrl.slice(0, docUrl.indexOf("#")) : docUrl;
  if (hash >= 0 && raw.slice(0, hash) === docBase) return raw.slice(hash);
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(raw);
  if (!scheme) return "";
  const name = scheme[1].toLowerCase();
  return name === "http" || name === "https" ? raw : name + ":";
}

// Project one picked element to its public fields {tag, role, label, …}; reports cuts in flags.
function describe(info, flags) {
  const el = info.el;
  const cutTag = cutUnits(wellFormed(info.tag), TAG_MAX);
  if (cutTag.cut) flags.truncated = true;
  const out = { tag: cutTag.text, role: info.role || "", label: "" };
  const cutName = cutUnits(wellFormed(accessibleName(el)), LABEL_MAX);
  if (cutName.cut) flags.truncated = true;
  out.label = cutName.text;
  if (!out.label && info.interactive) {
    // A clickable generic element has no accessible name; give its visible text instead.
    const visited = new Set();
    const under = ariaHiddenTree(el) ? el : undefined;
    const text = cutUnits(wellFormed(flat(accumulate(el, { visited, desc: true, under }))), LABEL_MAX);
    if (text.cut) flags.truncated = true;
    if (text.text) out.text = text.text;
  }
  if (info.tag === "input") out.type = inputType(el) || "text";
  if (info.role === "heading") {
    const aria = Number(el.getAttribute("aria-level"));
    const m = /^h([1-6])$/.exec(info.tag);
    out.level = Number.isInteger(aria) && aria >= 1 ? aria : m ? Number(m[1]) : 2;
  }
  if (!info.unreadable) {
    const states = statesOf(el, info);
    if (states.length) out.states = states;
  }
  const url = linkUrl(el, info.tag);
  if (url !== null) {
    const u = wellFormed(url);
    if (u.length > URL_FIELD_MAX) {
      out.url = cutUnits(u, URL_FIELD_MAX - 1).text + "\u2026";
      flags.truncated = true;
    } else {
      out.url = u;
    }
  }
  if (info.unreadable) out.unreadable = info.unreadable;
  if (el.ownerDocument !== document) out.frame = true;
  if (rootOf(el).nodeType === 11) out.shadow = true;
  return out;
}

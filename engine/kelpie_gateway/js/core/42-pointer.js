// ---------------------------------------------------------------- pointer-clickable elements (§9 v1.2)
// An element is pointer-clickable when its computed `cursor` is `pointer` while its flat-tree parent's is
// not (the outermost of a run: `cursor` is inherited, so the descendants of a clickable card are not
// listed again). Reading `cursor` is a computed-style read, which the walk avoids past the text bound
// (docs/reader.md, "Performance"), so a cheap test comes first: an element can start a run of `pointer`
// only when a style rule, its inline style or the UA sheet gives it a cursor of its own. The rules that
// set `cursor` are indexed per document by the key of their rightmost compound selector (id, class,
// attribute or tag, as Blink buckets rules), so `pointerCandidate` is a superset of the elements whose
// own cursor can be pointer and only those get the style read. Exact where every style sheet can be
// read; where one cannot (a cross-origin sheet without CORS), every element with an attribute is a
// candidate too (docs/reader.md). Elements in shadow trees and custom elements (`:host` rules of a
// closed root) are always candidates.

const POINTER_INDEX = new Map(); // document -> {tags, ids, classes, attrs, all, opaque, quirks}
const CURSOR_MAX_DEPTH = 32; // nesting of @import / grouping rules followed

function pointerIndex(doc) {
  let ix = POINTER_INDEX.get(doc);
  if (ix !== undefined) return ix;
  ix = { tags: new Set(), ids: new Set(), classes: new Set(), attrs: new Set(), all: false, opaque: false,
    quirks: doc.compatMode === "BackCompat", empty: true };
  const sheets = [];
  try {
    for (const s of doc.styleSheets) sheets.push(s);
    for (const s of doc.adoptedStyleSheets || []) sheets.push(s);
  } catch (e) {
    ix.opaque = true;
  }
  for (const sheet of sheets) indexSheet(sheet, ix, 0);
  ix.empty = !ix.all && !ix.tags.size && !ix.ids.size && !ix.classes.size && !ix.attrs.size;
  POINTER_INDEX.set(doc, ix);
  return ix;
}
function indexSheet(sheet, ix, depth) {
  let rules;
  try {
    rules = sheet.cssRules;
  } catch (e) {
    ix.opaque = true; // a cross-origin sheet: its rules cannot be read
    return;
  }
  if (rules) indexRules(rules, ix, null, depth);
}
function indexRules(rules, ix, parentKeys, depth) {
  if (depth > CURSOR_MAX_DEPTH) { ix.all = true; return; }
  for (const rule of rules) {
    if (rule.styleSheet) { indexSheet(rule.styleSheet, ix, depth + 1); continue; } // @import
    const selector = rule.selectorText;
    let keys = parentKeys;
    if (typeof selector === "string" && rule.style) {
      keys = selectorKeys(selector, parentKeys);
      const cursor = rule.style.cursor;
      if (cursor && /pointer|var\(/i.test(cursor)) addKeys(ix, keys);
    }
    if (rule.cssRules) indexRules(rule.cssRules, ix, keys, depth + 1); // grouping rules, nesting
  }
}
function addKeys(ix, keys) {
  for (const k of keys) {
    if (k === null) ix.all = true;
    else ix[k[0]].add(k[1]);
  }
}
// The keys of a selector list: per complex selector, one fact every element it matches has
// (["ids", id] | ["classes", c] | ["attrs", name] | ["tags", tag]), or null when none is known (then
// every element may match). A selector of a pseudo-element (`::before`, …) styles no element: no key.
// `&` (nesting) stands for the parent rule's keys.
function selectorKeys(text, parentKeys) {
  const out = [];
  for (const complex of splitTop(text, ",")) {
    const compound = lastCompound(complex.trim());
    const keys = compoundKeys(compound, parentKeys);
    if (keys) out.push(...keys);
  }
  return out;
}
// Calls `at(i, c)` for each character of `text` outside parentheses, brackets, strings and escapes.
function scanTop(text, at) {
  let depth = 0;
  let quote = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) { if (c === "\\") i += 1; else if (c === quote) quote = ""; continue; }
    if (c === "\\") { i += 1; continue; }
    if (c === '"' || c === "'") quote = c;
    else if (c === "(" || c === "[") depth += 1;
    else if (c === ")" || c === "]") depth -= 1;
    else if (depth === 0) at(i, c);
  }
}
// `text` split at top-level occurrences of `sep` (outside parentheses, brackets and strings).
function splitTop(text, sep) {
  const parts = [];
  let start = 0;
  scanTop(text, (i, c) => {
    if (c === sep) { parts.push(text.slice(start, i)); start = i + 1; }
  });
  parts.push(text.slice(start));
  return parts;
}
// The rightmost compound selector of a complex selector (after its last top-level combinator).
function lastCompound(text) {
  let start = 0;
  scanTop(text, (i, c) => {
    if (c === ">" || c === "+" || c === "~" || /[\t\n\f\r ]/.test(c)) start = i + 1;
  });
  return text.slice(start);
}
const IDENT = /^(?:[-_a-zA-Z0-9\u0080-\uffff]|\\[0-9a-fA-F]{1,6}[ \t\n]?|\\[\s\S])+/;
// Keys of one compound selector: a list (any one element matching has all of them, so one suffices), or
// [null] for "any element", or null when it matches no element (a pseudo-element).
function compoundKeys(text, parentKeys) {
  let i = 0;
  let tag = null;
  let id = null;
  let cls = null;
  let attr = null;
  let inner = null; // keys of :is()/:where() when the compound has nothing else
  let amp = false;
  const n = text.length;
  const ident = () => {
    const m = IDENT.exec(text.slice(i));
    if (!m) return "";
    i += m[0].length;
    return cssString(m[0]);
  };
  const groupEnd = (from) => { // index of the parenthesis closing the one before `from`
    let depth = 1;
    let quote = "";
    for (let j = from; j < n; j++) {
      const c = text[j];
      if (quote) { if (c === "\\") j += 1; else if (c === quote) quote = ""; continue; }
      if (c === "\\") { j += 1; continue; }
      if (c === '"' || c === "'") quote = c;
      else if (c === "(") depth += 1;
      else if (c === ")" && --depth === 0) return j;
    }
    return n;
  };
  while (i < n) {
    const c = text[i];
    if (c === "*") { i += 1; continue; }
    if (c === "|") { i += 1; tag = null; continue; } // a namespace prefix: the name follows
    if (c === "&") { i += 1; amp = true; continue; }
    if (c === "#") { i += 1; id = id || ident(); continue; }
    if (c === ".") { i += 1; cls = cls || ident(); continue; }
    if (c === "[") {
      const end = text.indexOf("]", i);
      const name = /^\s*(?:[^|\]=~^$*\s]*\|)?([^\]=~^$*|\s]+)/.exec(text.slice(i + 1, end < 0 ? n : end));
      if (name && !attr) attr = cssString(name[1]).toLowerCase();
      i = end < 0 ? n : end + 1;
      continue;
    }
    if (c === ":") {
      if (text[i + 1] === ":") return null; // a pseudo-element: the rule styles no element
      i += 1;
      const name = ident().toLowerCase();
      if (text[i] === "(") {
        const end = groupEnd(i + 1);
        const args = text.slice(i + 1, end);
        i = end + 1;
        if (name === "is" || name === "where" || name === "matches" || name === "-webkit-any") {
          const keys = selectorKeys(args, parentKeys);
          if (!keys.length) return null; // every argument is a pseudo-element
          if (!keys.includes(null)) inner = keys;
        }
      }
      continue;
    }
    const name = ident();
    if (!name) { i += 1; continue; } // something unexpected: skip it (a superset stays a superset)
    tag = name.toLowerCase();
  }
  if (id) return [["ids", id]];
  if (cls) return [["classes", cls]];
  if (attr) return [["attrs", attr]];
  if (tag) return [["tags", tag]];
  if (inner) return inner;
  if (amp && parentKeys && parentKeys.length && !parentKeys.includes(null)) return parentKeys;
  return [null];
}
// The tree a walk (45-walk.js) is in, so that `pointerCandidate` — asked of nearly every element of a
// page — need not ask each one for its root and document (two DOM calls per element from this world):
// {doc, shadow: inside a shadow tree}, or null where the walk does not know it (outside a walk, slotted
// nodes), and then the element is asked.
let WALK_TREE = null;
// Whether `el` may have a `cursor` of its own from a style rule, its inline style, the UA sheet (links,
// which are listed anyway), a `:host` rule (custom elements) or a shadow tree's sheets. `attrs`: whether
// `el` has attributes, when the caller knows it (undefined: asked).
function pointerCandidate(el, tag, attrs) {
  if (tag.includes("-")) return true;
  const tree = WALK_TREE;
  let doc;
  if (tree !== null) {
    if (tree.shadow) return true;
    doc = tree.doc;
  } else {
    const root = rootOf(el);
    if (root && root.nodeType === 11) return true;
    doc = el.ownerDocument;
  }
  const ix = pointerIndex(doc);
  if (ix.all || ix.tags.has(tag)) return true;
  if (attrs === false || (attrs === undefined && !el.hasAttributes())) return false;
  if (ix.opaque) return true;
  const style = el.getAttribute("style");
  if (style && /cursor/i.test(style)) return true;
  if (ix.empty) return false;
  if (ix.ids.size) {
    const id = el.getAttribute("id");
    if (id && ix.ids.has(id)) return true;
  }
  if (ix.classes.size) {
    const c = el.getAttribute("class");
    if (c) {
      for (const name of c.split(ASCII_WS)) {
        if (name && (ix.classes.has(name) || (ix.quirks && ix.classes.has(name.toLowerCase())))) return true;
      }
    }
  }
  if (ix.attrs.size) {
    for (const name of el.getAttributeNames()) if (ix.attrs.has(name.toLowerCase())) return true;
  }
  return false;
}
function isPointer(cursor) {
  return cursor === "pointer" || /(?:^|,)\s*pointer$/.test(cursor);
}
// Activation targets whose descendants a click reaches anyway: a pointer element inside one is not listed
// on its own (the control is).
const ACTIVATING = "a[href], button, summary, label, select, [role~=button], [role~=link], [role~=menuitem], " +
  "[role~=option], [role~=tab], [role~=checkbox], [role~=radio], [role~=switch], [role~=treeitem]";
// Pointer-clickable (§9 v1.2): computed cursor pointer, its flat parent's not; not the document's root or
// body (the page itself), not inside an activating control, and not a `<label>` whose control is rendered
// (the control is listed).
function pointerClickable(el, tag) {
  if (tag === "html" || tag === "body" || !pointerCandidate(el, tag)) return false;
  const st = styleOf(el);
  if (!st || !isPointer(st.cursor)) return false;
  const p = flatParent(el);
  if (p && p.ownerDocument === el.ownerDocument) {
    const ps = styleOf(p);
    if (ps && isPointer(ps.cursor)) return false;
  }
  const up = el.parentElement;
  if (up && isHTML(el) && up.closest(ACTIVATING)) return false;
  if (tag === "label" && isHTML(el)) {
    const control = el.control;
    if (control && isRendered(control) && !upFacts(control).hidden) return false;
  }
  return true;
}

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
  const across = []; // across[i]: the step from path[i] to its flat parent may leave its document
  let known = NO_ANCESTOR;
  for (let e = el; e; ) {
    const k = cache.get(e);
    if (k !== undefined) { known = k; break; }
    path.push(e);
    // flatParent, with what the step is known: a slot or a parent element is in the same document
    const slot = e.assignedSlot;
    const up = slot || e.parentElement;
    across.push(!up);
    e = up || flatParent(e);
  }
  // Outermost first; an element's document is its flat child's unless that step may leave it (a frame's
  // root element), so each document is asked once per call (a DOM call per element otherwise).
  let doc = null;
  for (let i = path.length - 1; i >= 0; i--) {
    const e = path[i];
    if (doc === null || across[i]) doc = e.ownerDocument;
    const modal = e === openModal(doc);
    let docs = known.docs;
    if (!docs.has(doc) || (modal && !docs.get(doc))) {
      docs = new Map(docs);
      docs.set(doc, modal || docs.get(doc) || false);
    }
    if (!e.hasAttributes()) { // no aria-hidden, aria-disabled or inert of its own: its parent's record
      known = docs === known.docs ? known : { hidden: known.hidden, off: known.off, docs };
    } else {
      known = {
        hidden: known.hidden || (e.getAttribute("aria-hidden") || "").toLowerCase() === "true", // not trimmed
        off: known.off || ariaToken(e, "aria-disabled") === "true" || e.hasAttribute("inert"),
        docs,
      };
    }
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

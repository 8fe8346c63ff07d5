// No part of the element's box can be scrolled into the viewport: left of or above the scroll origin,
// beyond the scrollable area, a fixed box outside the viewport, or clipped away by an overflow-clipping
// (or `clip: rect(0 0 0 0)`) ancestor. A read describes up to 200 elements that mostly share their
// ancestors, and a computed-style property read costs microseconds: what an ancestor contributes (its
// clip, overflow, position and, when it clips, its box) and each document's scroll geometry are read once
// per run (nothing runs between the reads of one describe pass, so they cannot change in between).
// {zero, fixed, cx, cy, rect, el}: `cx`/`cy` (its overflow clips horizontally/vertically) are read when
// first asked — an element's own facts need only `zero` and `fixed`, an ancestor's all of them.
class ClipFacts {
  constructor(el, raw) {
    const position = raw.position;
    this.zero = (position === "absolute" || position === "fixed") && clipsToNothing(raw.clip); // clip applies only then
    this.fixed = position === "fixed";
    this.rect = null;
    this.el = el;
    this.raw = raw;
    this._cx = this._cy = undefined;
  }
  get cx() {
    if (this._cx === undefined) { const v = this.raw.overflowX; this._cx = v === "hidden" || v === "clip"; }
    return this._cx;
  }
  get cy() {
    if (this._cy === undefined) { const v = this.raw.overflowY; this._cy = v === "hidden" || v === "clip"; }
    return this._cy;
  }
}
const clipCache = new Map();
function clipFacts(a) {
  let f = clipCache.get(a);
  if (f !== undefined) return f;
  const st = styleOf(a);
  f = st ? new ClipFacts(a, st.raw) : null;
  clipCache.set(a, f);
  return f;
}
// Whether a computed `clip` (`rect(top, right, bottom, left)`, `auto` = that edge of the box) leaves
// no area: `rect(0 0 0 0)` and `rect(1px 1px 1px 1px)`, the visually-hidden patterns.
function clipsToNothing(clip) {
  if (!clip || clip === "auto") return false;
  const m = /^rect\(([^,]+),([^,]+),([^,]+),([^)]+)\)$/.exec(clip.replace(/\s+/g, ""));
  if (!m) return false;
  const v = m.slice(1).map((x) => (x === "auto" ? null : parseFloat(x)));
  if (v.some((x) => x !== null && !Number.isFinite(x))) return false;
  const [top, right, bottom, left] = v;
  return (right !== null && left !== null && right <= left) || (bottom !== null && top !== null && bottom <= top);
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
const NOTHING_ABOVE = { zero: false, clips: [], fixed: false };
function clipsAbove(a) {
  const first = aboveCache.get(a);
  if (first !== undefined) return first;
  let doc = null;
  const path = [];
  const parents = [];
  let known = null;
  for (let e = a; ; ) {
    if (e !== a) {
      const up = aboveCache.get(e);
      if (up !== undefined) { known = up; break; }
    }
    // flatParent: a slot or a parent element is in the same document; only another step may leave it
    const near = e.assignedSlot || e.parentElement;
    const p = near || flatParent(e);
    if (!p) { known = NOTHING_ABOVE; break; }
    if (!near) {
      if (doc === null) doc = a.ownerDocument;
      if (p.ownerDocument !== doc) { known = NOTHING_ABOVE; break; }
    }
    path.push(e);
    parents.push(p);
    e = p;
  }
  // `path` holds elements whose summaries are missing, innermost first; fill them outermost first.
  for (let i = path.length - 1; i >= 0; i--) {
    const p = parents[i];
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

// ---------------------------------------------------------------- shown to a person (§9 v1.2)
// Not listed: anything inside an `aria-hidden="true"` subtree (flat tree, across frames; as the
// accessibility tree omits it), and anything clipped or sized to nothing — `clip` leaving no area on it or
// a positioned ancestor, `clip-path: inset(50%)`, or a box (and content) of zero width or height or at most
// 1×1 px. A native control hidden that way whose `<label>` is shown stays listed: a person operates it
// through the label (the visually-hidden checkbox of a custom-drawn one). Options and areas have no box of
// their own (their select or map decides).
function notShown(el, tag) {
  if (upFacts(el).hidden) return true;
  if (tag === "option" || tag === "optgroup" || tag === "area") return false;
  if (!clippedOrEmpty(el)) return false;
  return !labelShown(el);
}
function clippedOrEmpty(el) {
  if (warming(el)) return false; // the warm-up's inert document has no boxes
  const own = clipFacts(el);
  if (own && own.zero) return true;
  if (!(own && own.fixed) && clipsAbove(el).zero) return true;
  const st = styleOf(el);
  if (st) {
    const path = st.raw.clipPath;
    if (path && path !== "none" && /^inset\((?:5\d|[6-9]\d|100)(?:\.\d+)?%\)$/.test(path)) return true;
  }
  return sizedToNothing(el, st);
}
function sizedToNothing(el, st) {
  const r = el.getBoundingClientRect();
  if (hasArea(r)) return false;
  // A box of no area may still show content that overflows it (an inline element around a block, floats,
  // display:contents), unless it clips its own overflow.
  if (st && st.display !== "contents") {
    const raw = st.raw;
    const clips = (v) => v === "hidden" || v === "clip" || v === "scroll" || v === "auto";
    if (clips(raw.overflowX) && clips(raw.overflowY)) return true;
  }
  if (!el.firstChild) return true;
  const range = el.ownerDocument.createRange();
  range.selectNodeContents(el);
  return !hasArea(range.getBoundingClientRect());
}
function hasArea(r) {
  const w = r.width; // DOMRect getters are DOM calls from this world: each read once
  if (!(w > 0)) return false;
  const h = r.height;
  return h > 0 && (w > 1 || h > 1);
}
function labelShown(el) {
  let labels = null;
  try {
    labels = el.labels;
  } catch (e) {
    labels = null;
  }
  if (!labels || !labels.length) return false;
  for (const label of labels) {
    const st = styleOf(label);
    if (st && isRendered(label) && st.visibility === "visible" && !upFacts(label).hidden && !clippedOrEmpty(label)) {
      return true;
    }
  }
  return false;
}

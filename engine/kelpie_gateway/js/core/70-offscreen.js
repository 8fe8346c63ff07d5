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
      zero: (position === "absolute" || position === "fixed") && clipsToNothing(raw.clip), // clip applies only then
      cx, cy, fixed: position === "fixed", rect: null, el: a,
    };
  }
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
  return r.width > 0 && r.height > 0 && (r.width > 1 || r.height > 1);
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

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

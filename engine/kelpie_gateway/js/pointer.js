// Kelpie native-input preparation for the host's extensions `click`, `hover`, `drag` and `type_keys`
// (docs/host.md "Native input"). Two operations, both on captured nodes only:
//
// P.op === "aim" ({handle, enabled, offset?, watch}): everything that must hold before the host sends a
// single trusted input event, checked in this one run, in this order — the node is live (NODE_REPLACED),
// enabled when P.enabled (NOT_ACTIONABLE), scrolled into view when needed, has a non-empty box, the point
// (the centre of the largest visible part of its box, or P.offset from the box's top-left corner, CSS px)
// is visible, the box is the same across an animation frame and no running animation of it or an ancestor
// changes geometry (a moving element is refused), and the hit
// test at that point — `elementFromPoint` in the element's own document, through its open shadow roots,
// and in every same-origin ancestor document at the frame's place — lands on the element, one of its
// descendants or a <label> of it. Otherwise NOT_ACTIONABLE naming what is there ("covered by dialog 'We
// use cookies'"); every refusal is mayHaveCompleted:false (nothing was dispatched: scrolling into view is
// the only change, as a person's scrolling would be). On success it answers {x, y, target} — the point in
// the top-level viewport's CSS pixels, where CDP Input events go, "same" | "descendant" | "label", and
// the viewport's width and height —
// and starts a watch: trusted events of the types P.watch reaching the element's window are recorded
// (whether the element is on their composed path) until a report collects them.
//
// P.outer (with "aim" and "frame"): where this world's document is seen in the top-level viewport when
// it is a frame the host reads in a world of its own (issue 30: an out-of-process frame, or any frame of a
// host that reads frames) — {dx, dy, clip, view}: the offset of this document's viewport in the top
// viewport, the part of the top viewport through which it can be seen, and the top viewport's size. The
// host gets it from the parent documents' worlds (op "frame"); without it this world's document is the
// top one.
//
// P.op === "frame" ({frame, outer?, scroll?, point?}): for the frame element the host tagged with CDP
// frame id P.frame in this world (docs/reader.md "Frames"), its own outer — where the frame's document is
// seen in the top viewport, through this document's place (P.outer) and its same-origin ancestors — after
// scrolling the frame element into view when P.scroll and it is not wholly visible; with P.point {x, y}
// (top viewport) the hit test instead: whether the pointer there lands on the frame element (through
// this document's same-origin ancestors), else the refusal naming the cover. {outer} or {hit: true}, or
// NODE_REPLACED for a frame element that is gone.
//
// P.op === "report" ({handles}): for each handle, its watch's record {events: {type: "same" |
// "descendant" | "outside"}, dragstartPrevented?, connected} (null without a watch), and the watch ends
// (unless P.keep: a look in the middle of a gesture).
// Read-only. The host reports from it what it can observe — where the press landed, whether the page
// removed the element — and never a value.

const GENERIC_ROLES = new Set(["", "generic", "none", "presentation", "document", "group", "paragraph"]);
const MOVE_TOLERANCE = 0.5; // CSS px a box may differ by between the two measurements
const FRAME_WAIT_MS = 100; // a document that runs no animation frame (hidden) is measured after this

function rect(left, top, right, bottom) {
  return { left, top, right, bottom };
}
function meet(a, b) {
  return rect(Math.max(a.left, b.left), Math.max(a.top, b.top), Math.min(a.right, b.right), Math.min(a.bottom, b.bottom));
}
function area(r) {
  return r.right > r.left && r.bottom > r.top ? (r.right - r.left) * (r.bottom - r.top) : 0;
}
function shift(r, dx, dy) {
  return rect(r.left + dx, r.top + dy, r.right + dx, r.bottom + dy);
}
function px(v) {
  return parseFloat(v) || 0;
}
// The visible viewport of `doc` in its own coordinates (scroll bars excluded).
function viewportOf(doc) {
  const view = doc.defaultView;
  const root = doc.documentElement;
  const w = Math.min(view.innerWidth, (root && root.clientWidth) || view.innerWidth);
  const h = Math.min(view.innerHeight, (root && root.clientHeight) || view.innerHeight);
  return rect(0, 0, w, h);
}
function composedParent(n) {
  if (n.parentNode && n.parentNode.nodeType === 11) return n.parentNode.host || null;
  return n.parentElement;
}
// What the overflow of `el`'s ancestors (in its own document, across shadow hosts) leaves visible of it, in
// that document's coordinates: each ancestor that clips an axis cuts it to its padding box. An absolutely
// positioned element escapes static ancestors up to its containing block, a fixed one every ancestor.
function ancestorClip(el) {
  const doc = el.ownerDocument;
  const view = doc.defaultView;
  let clip = rect(-Infinity, -Infinity, Infinity, Infinity);
  let position = view.getComputedStyle(el).position;
  if (position === "fixed") return clip;
  for (let n = composedParent(el); n && n !== doc.body && n !== doc.documentElement; n = composedParent(n)) {
    const st = view.getComputedStyle(n);
    const escapes = position === "absolute" && st.position === "static";
    if (!escapes) {
      const r = n.getBoundingClientRect();
      const inner = rect(r.left + n.clientLeft, r.top + n.clientTop, r.left + n.clientLeft + n.clientWidth, r.top + n.clientTop + n.clientHeight);
      if (st.overflowX !== "visible") clip = meet(clip, rect(inner.left, clip.top, inner.right, clip.bottom));
      if (st.overflowY !== "visible") clip = meet(clip, rect(clip.left, inner.top, clip.right, inner.bottom));
      position = st.position === "static" ? position : st.position;
    }
    if (position === "fixed") break;
  }
  return clip;
}

// ---------------------------------------------------------------- coordinates across frames
// The one place a document's coordinates are mapped to the top-level viewport's (CDP Input coordinates):
// `{dx, dy, clip, frames}` — add dx/dy to a point of `doc`; `clip` is the part of the top viewport through
// which `doc` can be seen; `frames` the frame elements from `doc` up (each with the point to hit-test in
// its own document, filled in by hitTest). The frames this world reaches are its own document's same-origin
// ones; a frame the host reads in a world of its own (cross-origin, out-of-process) is placed by the host's
// P.outer, which the parents' worlds measured (op "frame"). Returns null when a link is unreachable.
// P.outer, when the host gave one: this world's document as seen in the top viewport (see the header).
let OUTER = null;
function baseOf(outer) {
  if (outer) return outer;
  const view = viewportOf(document);
  return { dx: 0, dy: 0, clip: view, view: { width: view.right, height: view.bottom } };
}
function toTop(doc) {
  const base = baseOf(OUTER);
  let dx = base.dx;
  let dy = base.dy;
  let clip = viewportOf(doc);
  const frames = [];
  for (let d = doc, hops = 0; d !== document; hops++) {
    const view = d.defaultView;
    const frame = view && view.frameElement;
    if (!frame || hops > 64) return null;
    const outer = frame.ownerDocument;
    const fst = outer.defaultView.getComputedStyle(frame);
    const r = frame.getBoundingClientRect();
    const ox = r.left + frame.clientLeft + px(fst.paddingLeft);
    const oy = r.top + frame.clientTop + px(fst.paddingTop);
    const content = rect(ox, oy, ox + frame.clientWidth - px(fst.paddingLeft) - px(fst.paddingRight), oy + frame.clientHeight - px(fst.paddingTop) - px(fst.paddingBottom));
    clip = meet(meet(meet(shift(clip, ox, oy), content), ancestorClip(frame)), viewportOf(outer));
    frames.push({ frame, ox, oy });
    dx += ox;
    dy += oy;
    d = outer;
  }
  // This world's document coordinates into the top viewport's: the host's outer (none: they are the same).
  clip = meet(shift(clip, base.dx, base.dy), base.clip);
  return { dx, dy, clip, frames, base };
}

// The element's geometry now: its bounding box and the largest visible part of its boxes, both in top
// viewport coordinates, or a refusal reason.
function geometry(el) {
  const top = toTop(el.ownerDocument);
  if (!top) return { why: "it is in a frame this world cannot reach" };
  const b = el.getBoundingClientRect();
  const box = shift(rect(b.left, b.top, b.right, b.bottom), top.dx, top.dy);
  const clip = meet(ancestorClip(el), shift(top.clip, -top.dx, -top.dy));
  let best = null;
  let any = false;
  for (const r of el.getClientRects()) {
    const own = rect(r.left, r.top, r.right, r.bottom);
    if (!area(own)) continue;
    any = true;
    const seen = meet(own, clip);
    if (area(seen) && (!best || area(seen) > area(best))) best = seen;
  }
  if (!any) return { why: "it has an empty box (zero width or height, or not rendered)", box };
  return { box, visible: best ? shift(best, top.dx, top.dy) : null, top };
}
// Whether a running animation or transition of `el` or an ancestor changes geometry (a moving element even
// when no frame ran between the two measurements, as on a loaded machine).
const GEOMETRY_PROPERTY = /^(transform|translate|rotate|scale|left|top|right|bottom|inset|margin|width|height|offset)/i;
function animatedGeometry(el) {
  for (let n = el, hops = 0; n && n.nodeType === 1 && hops < 4096; n = composedParent(n), hops++) {
    if (typeof n.getAnimations !== "function") continue;
    for (const a of n.getAnimations()) {
      const effect = a.playState === "running" ? a.effect : null;
      if (!effect || typeof effect.getKeyframes !== "function") continue;
      for (const frame of effect.getKeyframes()) {
        for (const property of Object.keys(frame)) if (GEOMETRY_PROPERTY.test(property)) return true;
      }
    }
  }
  return false;
}
function sameBox(a, b) {
  return ["left", "top", "right", "bottom"].every((k) => Math.abs(a[k] - b[k]) <= MOVE_TOLERANCE);
}
function nextFrame(view) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, FRAME_WAIT_MS);
    view.requestAnimationFrame(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
function showBox(r) {
  const n = (v) => Math.round(v);
  return `${n(r.right - r.left)}x${n(r.bottom - r.top)} at (${n(r.left)}, ${n(r.top)})`;
}

// ---------------------------------------------------------------- hit test
// The deepest element at (x, y) of `doc`'s coordinates, through open shadow roots.
function deepHit(doc, x, y) {
  let hit = doc.elementFromPoint(x, y);
  for (let hops = 0; hit && hit.shadowRoot && hops < 64; hops++) {
    const inner = hit.shadowRoot.elementFromPoint(x, y);
    if (!inner || inner === hit) break;
    hit = inner;
  }
  return hit;
}
function isWithin(el, n) {
  for (let hops = 0; n && hops < 4096; hops++) {
    if (n === el) return true;
    n = n.parentNode && n.parentNode.nodeType === 11 ? n.parentNode.host : n.parentNode;
  }
  return false;
}
function labelControls(n, el) {
  for (let up = n; up && up.nodeType === 1; up = composedParent(up)) {
    if (tagOf(up) === "label" && isHTML(up) && up.control === el) return true;
  }
  return false;
}
function excerpt(n) {
  const text = flat(accumulate(n, { visited: new Set(), desc: true }));
  const cut = cutUnits(wellFormed(text), 60);
  return cut.cut ? cut.text + "\u2026" : cut.text;
}
// How a person would name what sits at the point: the nearest element (from the hit up) with a role and a
// name, else the nearest with a role, else the hit's tag; with its name or visible text.
function describeCover(hit) {
  let roled = null;
  for (let n = hit; n && n.nodeType === 1; n = composedParent(n)) {
    const role = roleOf(n) || "";
    if (GENERIC_ROLES.has(role)) continue;
    const name = accessibleName(n);
    if (name) return `${role} '${cutUnits(wellFormed(name), 80).text}'`;
    if (!roled) roled = { n, role };
  }
  const n = roled ? roled.n : hit;
  const what = roled ? roled.role : `<${tagOf(hit)}>`;
  const text = excerpt(n);
  return text ? `${what} '${text}'` : what;
}
// Hit-test (x, y) (top viewport) for `el`: null when the pointer lands on it (then `found.target`), else
// the refusal's message.
function hitTest(el, x, y, top, found) {
  // Outermost first: a frame covered in its parent document hides everything inside it.
  for (let i = top.frames.length - 1; i >= 0; i--) {
    const { frame } = top.frames[i];
    let fx = x - top.base.dx;
    let fy = y - top.base.dy;
    for (let j = top.frames.length - 1; j > i; j--) {
      fx -= top.frames[j].ox;
      fy -= top.frames[j].oy;
    }
    const hit = deepHit(frame.ownerDocument, fx, fy);
    if (hit !== frame) return hit ? coveredBy(hit, frame) : "nothing of the page is at that point";
  }
  const hit = deepHit(el.ownerDocument, x - top.dx, y - top.dy);
  if (!hit) return "nothing of the page is at that point";
  if (hit === el) found.target = "same";
  else if (isWithin(el, hit)) found.target = "descendant";
  else if (labelControls(hit, el)) found.target = "label";
  else return coveredBy(hit, el);
  return null;
}
function coveredBy(hit, el) {
  if (isWithin(hit, el)) {
    return `the pointer would land on ${describeCover(hit)}, which contains the element (the element takes no pointer events there: pointer-events:none or something drawn over it)`;
  }
  return `it is covered by ${describeCover(hit)} at its click point`;
}

// ---------------------------------------------------------------- watches
function watchesOf(reg) {
  if (!reg.watches) reg.watches = new Map();
  return reg.watches;
}
function startWatch(reg, handle, el, types) {
  const view = el.ownerDocument.defaultView;
  const record = { events: {} };
  const seen = (e) => {
    if (!e.isTrusted || record.events[e.type] !== undefined) return;
    const path = e.composedPath();
    record.events[e.type] = path[0] === el ? "same" : path.includes(el) ? "descendant" : "outside";
  };
  const prevented = (e) => {
    if (e.isTrusted && record.dragstartPrevented === undefined) record.dragstartPrevented = e.defaultPrevented;
  };
  for (const type of types) view.addEventListener(type, seen, true);
  if (types.includes("dragstart")) view.addEventListener("dragstart", prevented, false);
  const stop = () => {
    for (const type of types) view.removeEventListener(type, seen, true);
    view.removeEventListener("dragstart", prevented, false);
  };
  const watches = watchesOf(reg);
  const old = watches.get(handle);
  if (old) old.stop();
  watches.set(handle, { el, record, stop });
}
function report(P) {
  const reg = registry(false);
  const watches = reg ? watchesOf(reg) : new Map();
  return {
    watches: P.handles.map((handle) => {
      const w = watches.get(handle);
      if (!w) return null;
      if (!P.keep) {
        w.stop();
        watches.delete(handle);
      }
      return { events: { ...w.record.events }, dragstartPrevented: w.record.dragstartPrevented, connected: isLive(w.el) };
    }),
  };
}

// ---------------------------------------------------------------- aim
async function aim(P) {
  const el = lookup(P.handle);
  if (!el) return fail("NODE_REPLACED", "the element was replaced or removed since the snapshot; take a new snapshot", false);
  if (P.enabled && isDisabled(el)) {
    return fail("NOT_ACTIONABLE", "the element is disabled (or inert); nothing was dispatched", false);
  }
  let g = geometry(el);
  if (g.why) return fail("NOT_ACTIONABLE", `${g.why}; nothing was dispatched`, false);
  // Scrolled into view when the part of the box the pointer goes to is not wholly visible.
  const needsScroll = () => {
    if (P.offset) {
      const x = g.box.left + P.offset.x;
      const y = g.box.top + P.offset.y;
      const c = meet(g.top.clip, g.box);
      return !(x >= c.left && x <= c.right && y >= c.top && y <= c.bottom);
    }
    return !g.visible || !sameBox(g.visible, g.box);
  };
  if (needsScroll()) {
    el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
    g = geometry(el);
    if (g.why) return fail("NOT_ACTIONABLE", `${g.why}; nothing was dispatched`, false);
  }
  const first = g.box;
  await nextFrame(el.ownerDocument.defaultView);
  if (!isLive(el)) return fail("NODE_REPLACED", "the page removed the element before any event; nothing was dispatched; take a new snapshot", false);
  g = geometry(el);
  if (g.why) return fail("NOT_ACTIONABLE", `${g.why}; nothing was dispatched`, false);
  if (!sameBox(first, g.box)) {
    return fail("NOT_ACTIONABLE", `the element is moving (its box went from ${showBox(first)} to ${showBox(g.box)} in one animation frame); nothing was dispatched; wait for it to settle`, false);
  }
  if (animatedGeometry(el)) {
    return fail("NOT_ACTIONABLE", "the element is moving (an animation of it or of an ancestor changes its place or size); nothing was dispatched; wait for it to settle", false);
  }
  let x;
  let y;
  if (P.offset) {
    const w = g.box.right - g.box.left;
    const h = g.box.bottom - g.box.top;
    if (P.offset.x > w || P.offset.y > h) {
      return fail("INVALID_PARAMS", `the offset (${P.offset.x}, ${P.offset.y}) is outside the element's ${Math.round(w)}x${Math.round(h)} box; nothing was dispatched`, false);
    }
    x = g.box.left + P.offset.x;
    y = g.box.top + P.offset.y;
    const c = g.top.clip;
    if (!(x >= c.left && x < c.right && y >= c.top && y < c.bottom)) {
      return fail("NOT_ACTIONABLE", "the offset point is not visible (clipped or outside the viewport); nothing was dispatched", false);
    }
  } else {
    if (!g.visible) return fail("NOT_ACTIONABLE", "no part of the element's box is visible (clipped by an ancestor or outside the viewport); nothing was dispatched", false);
    x = (g.visible.left + g.visible.right) / 2;
    y = (g.visible.top + g.visible.bottom) / 2;
  }
  const found = {};
  const why = hitTest(el, x, y, g.top, found);
  if (why) return fail("NOT_ACTIONABLE", `${why}; nothing was dispatched; deal with what is in the way first (close or scroll it)`, false);
  startWatch(registry(true), P.handle, el, P.watch || []);
  const view = baseOf(OUTER).view;
  return { x, y, target: found.target, width: view.width, height: view.height };
}

// ---------------------------------------------------------------- a frame element, for the host
function frameOwner(id) {
  const frames = globalThis.__kelpieFrames;
  const ref = frames && frames.owners ? frames.owners.get(id) : null;
  const el = ref ? ref.deref() : null;
  return el && isLive(el) ? el : null;
}
function frameStep(P) {
  const el = frameOwner(P.frame);
  if (!el) return fail("NODE_REPLACED", "the element's frame was removed from its page since the snapshot; nothing was dispatched; take a new snapshot", false);
  if (P.point) {
    const why = hitTest(el, P.point.x, P.point.y, toTop(el.ownerDocument), {});
    return why ? fail("NOT_ACTIONABLE", `${why.replace("the element", "the element's frame")}; nothing was dispatched; deal with what is in the way first (close or scroll it)`, false) : { hit: true };
  }
  const place = () => {
    const top = toTop(el.ownerDocument);
    if (!top) return null;
    const st = el.ownerDocument.defaultView.getComputedStyle(el);
    const r = el.getBoundingClientRect();
    const ox = r.left + el.clientLeft + px(st.paddingLeft);
    const oy = r.top + el.clientTop + px(st.paddingTop);
    const content = rect(ox, oy, ox + el.clientWidth - px(st.paddingLeft) - px(st.paddingRight), oy + el.clientHeight - px(st.paddingTop) - px(st.paddingBottom));
    const seen = meet(meet(content, ancestorClip(el)), shift(top.clip, -top.dx, -top.dy));
    return { dx: ox + top.dx, dy: oy + top.dy, clip: shift(seen, top.dx, top.dy), view: top.base.view, box: shift(rect(r.left, r.top, r.right, r.bottom), top.dx, top.dy) };
  };
  let at = place();
  if (!at) return fail("NOT_ACTIONABLE", "the element's frame is in a frame this world cannot reach; nothing was dispatched", false);
  const whole = (p) => p.clip.left <= p.box.left && p.clip.top <= p.box.top && p.clip.right >= p.box.right && p.clip.bottom >= p.box.bottom;
  if (P.scroll && !whole(at)) {
    el.scrollIntoView({ block: "nearest", inline: "nearest", behavior: "instant" });
    at = place() || at;
  }
  const { box, ...outer } = at;
  if (!area(outer.clip)) outer.clip = rect(0, 0, 0, 0);
  return { outer };
}

async function main(P) {
  OUTER = P.outer || null;
  if (P.op === "report") return report(P);
  if (P.op === "frame") return frameStep(P);
  return aim(P);
}

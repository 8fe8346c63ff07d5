
// ---------------------------------------------------------------- frames (§9 v1.2; docs/reader.md "Frames")
// A *hosted* frame is one the host reads in the frame's own isolated world. The host says which by
// tagging frame elements in this world before a read: the world's own global FRAMES_SLOT holds
// {depth: this document's frame depth (0 = the tab's top document), tags: WeakMap frame element ->
// the frame's id} (reader.FRAME_TAG_FUNCTION; no page script can reach an isolated world's global).
// The walk records a *slot* where a hosted frame goes; a read with slots asks the host for the frames'
// *parts* ({kelpieFrames: wants}) and cuts its pages from the *composite*: its own record plus the parts,
// with the one set of rules below. An untagged frame is read inline, as before revision 1.2.
const FRAMES_SLOT = "__kelpieFrames";
const FRAME_DEPTH_MAX = 8; // frame depth read (1 = a frame of the top document); deeper: "limit"
const FRAME_COUNT_MAX = 64; // frames one walk enters inline (the host counts the hosted ones)
const FRAME_REASONS = new Set(["blocked-by-policy", "unavailable", "limit"]);

function hostFrames() {
  const d = Object.getOwnPropertyDescriptor(globalThis, FRAMES_SLOT);
  const h = d ? d.value : null;
  return h && typeof h === "object" ? h : null;
}
// The host's tag of frame element `el` (its frame's id), or null: an untagged frame is read inline.
function frameTag(el) {
  const h = hostFrames();
  if (!h || !(h.tags instanceof WeakMap)) return null;
  const tag = h.tags.get(el);
  return typeof tag === "string" && tag ? tag : null;
}
// This world's document's frame depth, as the host set it (0 without a host that reads frames).
function worldDepth() {
  const h = hostFrames();
  const depth = h ? h.depth : 0;
  return Number.isInteger(depth) && depth >= 0 && depth <= 64 ? depth : 0;
}
// The frame depth of `doc`: this world's document's, plus one per frame element up to it.
function frameDepthOf(doc) {
  let depth = worldDepth();
  for (let d = doc, hops = 0; d && d !== document && hops <= FRAME_DEPTH_MAX + 1; hops++) {
    depth += 1;
    const view = viewOf(d);
    let owner = null;
    try {
      owner = view ? view.frameElement : null;
    } catch (e) {
      owner = null;
    }
    d = owner ? owner.ownerDocument : null;
  }
  return depth;
}
// Whether the inline walk must not enter same-origin frame `el` (a "limit" placeholder instead):
// its document would be deeper than FRAME_DEPTH_MAX, or it would be the walk's 65th frame.
function inlineFrameCut(el, inline) {
  if (frameDepthOf(el.ownerDocument) + 1 > FRAME_DEPTH_MAX) return true;
  inline.count += 1;
  return inline.count > FRAME_COUNT_MAX;
}
// `frame` of a described element (§9 v1.2): {origin, depth} of the frame document it is in, or null in
// the tab's top document. `origin` is serialised as `self.origin` does ("null" for an opaque origin).
const frameFieldCache = new Map();
function frameField(el) {
  const doc = el.ownerDocument;
  if (warming(el)) return null;
  let field = frameFieldCache.get(doc);
  if (field !== undefined) return field;
  const depth = doc === document ? worldDepth() : frameDepthOf(doc);
  field = null;
  if (depth > 0) {
    let origin = "null";
    try {
      const view = viewOf(doc);
      origin = view ? String(view.origin) : "null";
    } catch (e) {
      origin = "null";
    }
    field = { origin: cutUnits(wellFormed(origin), URL_MAX).text, depth };
  }
  frameFieldCache.set(doc, field);
  return field;
}

// ---------------------------------------------------------------- slots
// A slot: where hosted frame `el` goes. `orderAt`: how many candidates came before it in page order (its
// frame element's own entry included); `at`: its position in the raw text (exact while the text was
// still read when the walk got there; a text re-walk, `ensureText`, places it again); `text`/`elements`:
// whether the walk read text / elements there (no text under password-like text); `part`: what the
// host answered for it (set by `composeFrames`).
function frameSlot(el, inner, sink, orderAt) {
  const at = inner.text ? sink.mark() : -1;
  return { el, frame: frameTag(el), text: !!inner.text, elements: !!inner.elements, orderAt, at,
           exact: !!inner.text && !sink.full(), part: null };
}
// The text re-walk's hook: the same marks at the same places, each slot placed again.
function frameTextHook(rec, sink) {
  const bySlot = new Map();
  for (const s of rec.slots) bySlot.set(s.el, s);
  return (el, inner) => {
    if (!inner.text) return;
    const at = sink.mark();
    const s = bySlot.get(el);
    if (s && s.text) [s.at, s.exact] = [at, !sink.full()];
  };
}

// ---------------------------------------------------------------- parts
// A part as the composite keeps it, made from the host's outcome for its slot: a part's page
// ({text, elements, part: {nonce, snapshot, counts, cut, origin, textAt, textEnd}}), {unreadable:
// reason} or {error} (the part refused: on a first page the frame is then "unavailable").
function partOf(outcome) {
  if (!outcome || typeof outcome !== "object") return { unreadable: "unavailable" };
  if (typeof outcome.unreadable === "string") {
    return { unreadable: FRAME_REASONS.has(outcome.unreadable) ? outcome.unreadable : "unavailable" };
  }
  const p = outcome.part;
  if (outcome.error || !p || typeof p !== "object" || typeof p.snapshot !== "string" || !Array.isArray(p.counts) ||
      p.counts.length !== CLASS_COUNT || !Array.isArray(outcome.elements) || typeof outcome.text !== "string") {
    return { unreadable: "unavailable" };
  }
  const part = { snapshot: p.snapshot, counts: [], offsets: [], total: 0, cut: false, text: "", textEnd: false,
                 elements: new Map() };
  for (const n of p.counts) {
    const count = Number.isInteger(n) && n >= 0 ? n : 0;
    part.offsets.push(part.total);
    part.counts.push(count);
    part.total += count;
  }
  learn(part, outcome);
  return part;
}
// Add what one of a part's pages says: its text (from unit `part.textAt` of the part's text, when that is
// where the text known so far ends) and its elements by rank.
function learn(part, outcome) {
  const p = outcome.part || {};
  if (p.textAt === part.text.length && typeof outcome.text === "string") {
    part.text += outcome.text;
    part.textEnd = p.textEnd === true;
  }
  if (p.cut === true) part.cut = true;
  for (const e of Array.isArray(outcome.elements) ? outcome.elements : []) {
    if (e && typeof e === "object" && Number.isInteger(e.rank) && e.rank >= 0 && e.rank < part.total) part.elements.set(e.rank, e);
  }
}

// ---------------------------------------------------------------- the composite and its pages
// Built once every slot has its outcome. A hosted frame's element is kept as a placeholder (with the
// reason) when its frame was not read, or shown plainly when it is itself interactive; otherwise its
// frame's elements stand in its place. Per priority class, the composite's order is this document's
// elements of the class with each part's elements of that class inserted at its slot.
function buildComposite(snap) {
  const rec = snap.rec;
  const slots = snap.frames.slots;
  const bySlot = new Map();
  slots.forEach((s, i) => {
    bySlot.set(s.el, s);
    s.index = i;
  });
  const local = [];
  for (let c = 0; c < CLASS_COUNT; c++) local.push([]);
  for (const info of rec.order) {
    if (!shownInfo(info)) continue; // a composite's counts need all of them now (55-pages.js)
    if (info.hosted) {
      const s = bySlot.get(info.el);
      const why = s && s.part ? s.part.unreadable || null : "unavailable";
      if (why) info.unreadable = why;
      else if (info.ownInteractive) info.unreadable = null;
      else continue;
    }
    local[info.cls].push(info);
  }
  const segments = [];
  const counts = [];
  for (let c = 0; c < CLASS_COUNT; c++) {
    const list = local[c];
    const out = [];
    let n = 0;
    let i = 0;
    for (const s of slots) {
      let j = i;
      while (j < list.length && list[j].order < s.orderAt) j++;
      if (j > i) out.push({ list, from: i, size: j - i });
      n += j - i;
      i = j;
      const p = s.part;
      if (s.elements && p && p.counts && p.counts[c] > 0) {
        out.push({ slot: s, base: p.offsets[c], size: p.counts[c] });
        n += p.counts[c];
      }
    }
    if (i < list.length) out.push({ list, from: i, size: list.length - i });
    segments.push(out);
    counts.push(n + list.length - i);
  }
  const total = counts.reduce((a, b) => a + b, 0);
  snap.frames.comp = { segments, counts, total };
}

// Elements `from … from+count-1` of the composite's priority order: [{rank, info}] for this document's
// own, [{rank, slot, partRank}] for a part's.
function compositePicks(comp, from, count) {
  const picks = [];
  let g = 0;
  for (const out of comp.segments) {
    for (const seg of out) {
      if (g >= from + count) return picks;
      const lo = Math.max(from, g);
      const hi = Math.min(from + count, g + seg.size);
      for (let r = lo; r < hi; r++) {
        const k = r - g;
        picks.push(seg.list ? { rank: r, info: seg.list[seg.from + k] } : { rank: r, slot: seg.slot, partRank: seg.base + k });
      }
      g += seg.size;
    }
  }
  return picks;
}

// What the composite still needs of one part: a range of its elements, text from where its known text ends.
function wantOf(wants, slot) {
  let w = wants.get(slot);
  if (!w) wants.set(slot, (w = { slot, lo: Infinity, hi: -Infinity, chars: 0 }));
  return w;
}

// The composite text up to unit `upto` (or all of it): this document's text with each part's text in its
// slot, joined by one newline — what the inline walk makes of a same-origin frame. Returns {text,
// complete}; adds to `wants` the part text it lacks, and reads more of this document's text itself.
function compositeText(snap, upto, wants) {
  const rec = snap.rec;
  for (let rounds = 0; ; rounds++) {
    const r = joinText(snap, upto, wants);
    if (!r.more || rounds > 24 || rec.textComplete || rec.text.length >= TEXT_STORE_MAX) return r;
    ensureText(rec, rec.text.length * 2 + upto);
  }
}
function joinText(snap, upto, wants) {
  const rec = snap.rec;
  const out = [];
  let len = 0;
  const emit = (piece) => {
    if (!piece) return;
    if (len) {
      out.push("\n");
      len += 1;
    }
    out.push(piece);
    len += piece.length;
  };
  // This document's text between two slots, without the newline the sink put after the earlier slot.
  const local = (from, to) => {
    const piece = rec.text.slice(from, to);
    return from > 0 && piece.charCodeAt(0) === 10 ? piece.slice(1) : piece;
  };
  const done = (complete, more) => ({ text: out.join(""), complete, more: !!more });
  let from = 0;
  for (const s of snap.frames.slots) {
    if (!s.text) continue;
    if (!s.exact) break; // past the text read so far: read more of it first
    emit(local(from, s.at));
    from = s.at;
    if (len >= upto) return done(false);
    const p = s.part;
    if (!p || p.unreadable) continue;
    emit(p.text);
    if (!p.textEnd) {
      if (len < upto) wantOf(wants, s).chars = Math.min(MAX_TEXT_PAGE, upto - len + 1);
      return done(false);
    }
  }
  emit(local(from, rec.text.length));
  if (rec.textComplete) return done(true);
  return done(false, len < upto);
}
const MAX_TEXT_PAGE = 12000; // a part's text asked for at once (the engine's maxChars bound)

function keyBefore(a, b) {
  for (let i = 0; i < a.length && i < b.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

// The pending page of a composite: the wants for whatever the parts have not said yet, or the page:
// {url, title, text, truncated, elements, rest?} and, for a part, `part` and each element's `rank` (in
// the composite's priority order) and `key` (its page order: [2·order+1] for this document's element,
// [2·orderAt, slot index, …the part's key] for a part's: a frame's elements sort right after its frame element).
function framesPage(reg, snap) {
  const pend = snap.pending;
  const comp = snap.frames.comp;
  const picks = compositePicks(comp, pend.elementAt, pend.maxElements);
  const wants = new Map();
  for (const pk of picks) {
    if (pk.slot && !pk.slot.part.elements.has(pk.partRank)) {
      const w = wantOf(wants, pk.slot);
      [w.lo, w.hi] = [Math.min(w.lo, pk.partRank), Math.max(w.hi, pk.partRank)];
    }
  }
  const text = compositeText(snap, pend.textAt + pend.maxChars, wants);
  if (wants.size) {
    return {
      kelpieFrames: Array.from(wants.values(), (w) => {
        const p = w.slot.part;
        const elementAt = w.lo === Infinity ? p.total : w.lo;
        return {
          frame: w.slot.frame,
          cursor: { snapshot: p.snapshot, textAt: p.text.length, elementAt },
          maxChars: Math.max(1, Math.min(MAX_TEXT_PAGE, w.chars || 1)),
          maxElements: w.lo === Infinity ? 1 : Math.min(200, w.hi - w.lo + 1),
        };
      }),
    };
  }
  snap.pending = null;
  const flags = { truncated: false };
  const listed = picks.map((pk) => {
    let e;
    let key;
    if (pk.info) {
      reg.counter += 1;
      const handle = reg.nonce + "-" + reg.counter.toString(36);
      reg.nodes.set(handle, pk.info.el);
      e = Object.assign({ handle }, describe(pk.info, flags));
      if (snap.seen) snap.seen.set(pk.info.el, { handle, key: factsKey(e) }); // what a later `since` compares
      key = [2 * pk.info.order + 1];
    } else {
      const src = pk.slot.part.elements.get(pk.partRank);
      key = [2 * pk.slot.orderAt, pk.slot.index].concat(Array.isArray(src.key) ? src.key : []);
      e = Object.assign({}, src);
      delete e.rank;
      delete e.key;
    }
    if (pend.part) [e.rank, e.key] = [pk.rank, key];
    return { e, key };
  });
  listed.sort((a, b) => keyBefore(a.key, b.key));
  const cut = cutUnits(text.text.slice(pend.textAt), pend.maxChars);
  const nextText = Math.min(pend.textAt + cut.text.length, TEXT_STORE_MAX);
  const textLeft = (nextText < text.text.length || !text.complete) && nextText < TEXT_STORE_MAX;
  const nextElement = pend.elementAt + picks.length;
  const more = textLeft || nextElement < comp.total;
  const partsCut = snap.frames.slots.some((s) => s.part && s.part.cut);
  const rec = snap.rec;
  const out = {
    url: rec.url, title: rec.title, text: cut.text,
    truncated: more || rec.walkCut || rec.headCut || flags.truncated || partsCut,
    elements: listed.map((x) => x.e),
  };
  if (more) out.rest = { snapshot: snap.token, textAt: nextText, elementAt: nextElement };
  if (!pend.part) out.token = snap.token; // names this read for a later `since` (its own trees only)
  if (pend.part) {
    let origin = "null";
    try {
      origin = String(globalThis.origin);
    } catch (e) {
      origin = "null";
    }
    out.part = {
      nonce: reg.nonce, snapshot: snap.token, counts: comp.counts, origin: cutUnits(wellFormed(origin), URL_MAX).text,
      cut: rec.walkCut || flags.truncated || partsCut, textAt: pend.textAt, textEnd: !textLeft,
    };
  }
  return out;
}

// A new read whose record has slots (or that is itself a part): ask the host for its frames' first
// pages, or — nothing to ask — answer its own first page as a composite.
function startFrames(reg, snap, P) {
  snap.frames = { slots: snap.rec.slots, comp: null };
  snap.pending = { textAt: 0, elementAt: 0, maxChars: P.maxChars, maxElements: P.maxElements, part: P.part === true };
  const wanted = snap.frames.slots.filter((s) => s.text || s.elements);
  if (!wanted.length) {
    buildComposite(snap);
    return framesPage(reg, snap);
  }
  return { kelpieFrames: wanted.map((s) => ({ frame: s.frame, maxChars: P.maxChars, maxElements: P.maxElements })) };
}

// The host's answers for the frames the last answer wanted (P.frames: [[frame, outcome], …]).
function composeFrames(P) {
  const reg = registry(false);
  const snap = reg ? reg.snap : null;
  if (!snap || !snap.frames || !snap.pending || !Array.isArray(P.frames)) {
    return fail("RENDERER_FAILED", "no frame read is pending in this document", false);
  }
  const outcomes = new Map();
  for (const pair of P.frames) if (Array.isArray(pair) && typeof pair[0] === "string") outcomes.set(pair[0], pair[1]);
  if (!snap.frames.comp) {
    for (const s of snap.frames.slots) s.part = partOf(outcomes.get(s.frame));
    buildComposite(snap);
  } else {
    for (const s of snap.frames.slots) {
      const outcome = outcomes.get(s.frame);
      if (outcome === undefined || !s.part || s.part.unreadable) continue;
      if (!outcome || typeof outcome !== "object" || outcome.error || !outcome.part) {
        snap.pending = null;
        return fail("STALE_SNAPSHOT", "a frame's document changed since this snapshot; take a new tab.snapshot", false);
      }
      learn(s.part, outcome);
    }
  }
  return framesPage(reg, snap);
}

// A cursor of a composite (its checks of the kept read and the document are the caller's).
function continueFrames(reg, snap, P) {
  const at = P.cursor;
  if (!snap.frames.comp) return fail("STALE_SNAPSHOT", "this snapshot's frames were never read; take a new tab.snapshot", false);
  if (!(at.textAt >= 0 && at.textAt <= TEXT_STORE_MAX && at.elementAt >= 0 && at.elementAt <= snap.frames.comp.total)) {
    return fail("RENDERER_FAILED", "the continuation position is outside this snapshot", false);
  }
  snap.pending = { textAt: at.textAt, elementAt: at.elementAt, maxChars: P.maxChars, maxElements: P.maxElements, part: P.part === true };
  return framesPage(reg, snap);
}

// Text accumulator: collapses white space like rendering does, bounded by maxChars UTF-16 units.
//
// Positions (§9 v1.2, continuation over a captured order). The walk opens a frame for every node it reads
// text from and its ancestors (`open`/`close`); when a piece crosses the bound, the open frames are kept:
// for each, where its output began and the separator state then. `position(cutAt)` turns them into where
// the page cut at unit `cutAt` leaves each of those nodes: `[{node, consumed, pend, started}]`, outermost
// first (`consumed`: units of that node's output already on the page). A later page resumes there
// (`resume`): the walk goes down that path without reading anything before it, and at the deepest node
// still in place (its anchor) the sink takes back that node's separator state and drops the units of its
// output that earlier pages already had. Positions count from the page's start, so units before it are
// negative; a node removed since resumes after its place in the anchor's output.
function makeTextSink(maxChars, resume) {
  const out = [];
  let pos = 0; // output units of this page so far; negative while dropping what earlier pages had
  let pend = 0; // 0 nothing, 1 space, 2 newline
  let started = false;
  let cut = false;
  let seeking = !!resume; // going down the resume path: nothing is read before its anchor
  const stack = [];
  let cutFrames = null;
  const push = (s) => {
    if (cut || seeking) return;
    let piece = started && pend ? (pend === 2 ? "\n" : " ") + s : s;
    pend = 0;
    started = true;
    if (pos < 0) {
      const drop = Math.min(-pos, piece.length);
      piece = piece.slice(drop);
      pos += drop;
      if (!piece) return;
    }
    out.push(piece);
    pos += piece.length;
    if (pos > maxChars) {
      cut = true;
      cutFrames = stack.map((f) => ({ node: f.node, len: f.len, pend: f.pend, started: f.started }));
    }
  };
  return {
    text(data, pre) {
      if (cut || seeking) return;
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
    block() { if (!seeking && pend < 2) pend = 2; },
    space() { if (!seeking && pend < 1) pend = 1; },
    newline() { if (!seeking && pend < 2) pend = 2; },
    full() { return cut; },
    // Output units so far (the offset of what comes next in this page's text).
    length() { return Math.max(0, pos); },
    // A node whose output (text, or its descendants') may be on this page begins / ends.
    open(node) {
      if (seeking) {
        const old = resume.frames.get(node);
        if (!old) return void stack.push({ node, len: pos, pend, started }); // (not on the path: not reached)
        stack.push({ node, len: resume.delta - old.consumed, pend: old.pend, started: old.started });
        if (node === resume.anchor) {
          seeking = false;
          pos = resume.delta - old.consumed;
          pend = old.pend;
          started = old.started;
        }
        return;
      }
      stack.push({ node, len: pos, pend, started });
    },
    close() { stack.pop(); },
    seeking() { return seeking; },
    // Where a hosted frame's text goes (core/80-frames.js): a block boundary before and after it, as the
    // inline walk's <html>/<body> blocks make; answers the position in this page's text.
    mark() {
      if (!seeking && pend < 2) pend = 2;
      return Math.max(0, pos);
    },
    // The text cut to maxChars (never inside a pair) and whether anything was cut.
    result() {
      const r = cutUnits(out.join(""), maxChars);
      return { text: r.text, cut: r.cut || cut };
    },
    // Everything collected (it may run past maxChars by one piece) and whether more text was left.
    raw() { return { text: out.join(""), cut }; },
    // Where a page cut at unit `cutAt` of this text leaves the nodes it was reading (null: nothing left).
    position(cutAt) {
      if (!cutFrames) return null;
      return cutFrames.map((f) => ({ node: f.node, consumed: cutAt - f.len, pend: f.pend, started: f.started }));
    },
  };
}
// Where to resume a page from a position (see makeTextSink): the path from the walk's root down to the
// deepest node of the position that is still where it was (each one a flat-tree child of the one
// before), and what to drop of that anchor's output. Null when even the root is gone.
function resumeFrom(position, root) {
  if (!position || !position.length || position[0].node !== root) return null;
  let last = 0;
  for (let i = 1; i < position.length; i++) {
    const n = position[i].node;
    const prev = position[i - 1].node;
    if (!n.isConnected || (flatParent(n) !== prev && !(prev.nodeType === 11 && n.parentNode === prev))) break;
    last = i;
  }
  const frames = new Map();
  const delta = last + 1 < position.length ? position[last + 1].consumed : 0; // a removed node's part
  const path = [];
  for (let i = 0; i <= last; i++) {
    frames.set(position[i].node, position[i]);
    path.push(position[i].node);
  }
  return { frames, path, anchor: path[last], delta };
}
// The walk's text callbacks of a sink (walkDocument's `cb`, without `element`).
function sinkCallbacks(sink) {
  return {
    text: (d, pre) => sink.text(d, pre),
    block: () => sink.block(),
    space: () => sink.space(),
    full: () => sink.full(),
    newline: () => sink.newline(),
    open: (n) => sink.open(n),
    close: () => sink.close(),
  };
}

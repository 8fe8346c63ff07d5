// Walk the flat tree (open shadow roots, slots, same-origin frames) in document order.
// Calls cb.text(str, pre) for visible text, cb.block() at block boundaries, cb.element(el, info) for
// every rendered, visible element outside value contexts (info = {tag, role, interactive, notable,
// unreadable, pointer, hosted?}), cb.elementEnd(info) (when given) after its subtree, and — when `cb.frame`
// is given — cb.frame(el, inner) where a frame the host reads in its own world (a tagged one,
// core/80-frames.js) goes, instead of entering it. Returns true when the walk was cut (depth bound).
// `opts`: {text: false (read no text at all), seek: [nodes] (resume a text walk: go down this flat-tree
// path from the root without reading what comes before it; makeTextSink), skip(el) (elements not to
// enter: those added since a snapshot's first read)}. While text is read, cb.open(node)/cb.close()
// bracket every node text may come from (the sink's positions).
function walkDocument(doc, cb, start, elements, opts) {
  let cut = false;
  const inline = { count: 0 }; // same-origin frames entered by this walk (core/80-frames.js limits)
  const seekPath = opts && opts.seek ? opts.seek : null;
  let seekAt = 0;
  // The path child to start `owner`'s children at while a resumed walk goes down its path, else null.
  const seekChild = (owner) => {
    if (!seekPath || seekAt >= seekPath.length - 1 || seekPath[seekAt] !== owner) return null;
    seekAt += 1;
    return seekPath[seekAt];
  };
  const skip = opts && opts.skip ? opts.skip : null;
  const tracking = !!cb.open;
  // `pending`: the unsettled elements between the node and the last settled one (null: none).
  // Once no more text is read, a child that is not an element (text, comment) is a no-op for `visit`
  // unless it lies past the depth bound (then it cuts): such children are stepped over without being
  // touched (each node touched from the isolated world costs a wrapper), and a text-only walk stops.
  const textDone = (ctx) => !ctx.text || cb.full();
  // The children of `parent` (an element or a shadow root). A child reached by an element step
  // (`firstElementChild`/`nextElementSibling`, taken once no more text is read) is visited as an element
  // without asking its nodeType (a DOM call per node from this world).
  const children = (parent, depth, ctx, pending, owner) => {
    const elementsOnly = depth + 1 <= DEPTH_MAX;
    let element = elementsOnly && textDone(ctx);
    const from = seekChild(owner || parent);
    let c = from || (element ? parent.firstElementChild : parent.firstChild);
    if (from && element && from.nodeType !== 1) c = from.nextElementSibling;
    while (c) {
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
      inTree(WALK_TREE ? { doc: WALK_TREE.doc, shadow: true } : null, () => children(root, depth, ctx, pending, parent));
      return;
    }
    if (tag === "slot" && parent.assignedNodes) {
      const assigned = parent.assignedNodes();
      if (assigned.length) {
        const from = seekChild(parent);
        inTree(null, () => { // slotted nodes are in the host's tree: each is asked (pointerCandidate)
          for (let i = from ? Math.max(0, assigned.indexOf(from)) : 0; i < assigned.length; i++) {
            visit(assigned[i], depth + 1, ctx, pending);
          }
        });
        return;
      }
    }
    children(parent, depth, ctx, pending, parent);
  };
  // The children of an unsettled element (no shadow root: a host is always settled). No text is read
  // any more, so only element children are visited; a child node past the depth bound still cuts.
  const lazyChildren = (parent, tag, depth, ctx, pending) => {
    if (tag === "slot" && parent.assignedNodes) {
      const assigned = parent.assignedNodes();
      if (assigned.length) {
        inTree(null, () => {
          for (const c of assigned) visit(c, depth + 1, ctx, pending);
        });
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
      if (tracking) {
        cb.open(n);
        cb.text(n.data, st.pre);
        cb.close();
      } else {
        cb.text(n.data, st.pre);
      }
      return;
    }
    if (type === 1) visitElement(n, depth, ctx, pending);
  };
  // `visit` of an element within the depth bound; bracketed by cb.open/close while text is read (in the
  // same frame: deep trees are walked recursively, one frame per level costs stack).
  const visitElement = (el, depth, ctx, pending) => {
    const tracked = tracking && ctx.text && !cb.full();
    if (tracked) cb.open(el);
    try {
    const tag = tagOf(el);
    if (NOT_RENDERED_TAGS.has(tag)) return;
    if (skip && skip(el)) return;
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
    let listed = null;
    let hosted = false; // read by the host in the frame's own world (core/80-frames.js)
    if (tag === "iframe" || tag === "frame") {
      hosted = !!cb.frame && frameTag(el) !== null;
      if (hosted) {
        unreadable = "unavailable"; // until the host has read it
      } else {
        try {
          frameDoc = el.contentDocument;
        } catch (e) {
          frameDoc = null;
        }
        if (!frameDoc || !frameDoc.documentElement) unreadable = frameDoc ? null : "cross-origin-frame";
        else if (inlineFrameCut(el, inline)) [unreadable, frameDoc] = ["limit", null];
      }
    } else if (ctx.elements && closedShadowSuspect(el, tag, st) && !el.shadowRoot) {
      unreadable = "closed-shadow-root";
    }
    if (ctx.elements) {
      let interactive = isInteractive(el, tag, role);
      const notable = !interactive && isNotable(el, tag, role);
      const pointer = !interactive && !notable && !unreadable && pointerClickable(el, tag);
      if (pointer) interactive = true;
      const lazy = !!cb.lazyShown; // a read whose pages ask `shownInfo` (55-pages.js) when they get there
      if ((interactive || notable || unreadable) && st.visibility === "visible" && (lazy || !notShown(el, tag))) {
        listed = { tag, role, interactive: interactive || !!unreadable, notable, unreadable, pointer };
        if (!lazy) listed.shown = true;
        if (hosted) [listed.hosted, listed.ownInteractive] = [true, interactive];
        cb.element(el, listed);
        if (tag === "select") listOptions(el, cb, listed);
      }
    }
    // Value contexts: never descend for text or elements.
    if (VALUE_CONTEXT_TAGS.has(tag)) return;
    let inner = ctx;
    if (isEditable(el)) inner = NOTHING_TO_READ;
    else if (ctx.text && !cb.full() && textSecured(el)) inner = { text: false, elements: ctx.elements };
    if (block && inner.text) cb.block();
    else if (atomic && inner.text) cb.space();
    if (hosted) {
      if (inner.text || inner.elements) cb.frame(el, inner);
    } else if (frameDoc && frameDoc.documentElement) {
      if (cb.root) cb.root(frameDoc);
      seekChild(el);
      inTree({ doc: frameDoc, shadow: false }, () => visit(frameDoc.documentElement, depth + 1, inner, null));
    } else {
      visitChildren(el, tag, depth, inner, null);
    }
    if (block && inner.text) cb.block();
    else if (atomic && inner.text) cb.space();
    if (listed && cb.elementEnd) cb.elementEnd(listed);
    } finally {
      if (tracked) cb.close();
    }
  };
  const ctx = { text: !(opts && opts.text === false), elements };
  frozen(() => {
    if (start) {
      const root = rootOf(start);
      inTree({ doc: start.ownerDocument || doc, shadow: !!root && root.nodeType === 11 }, () => visit(start, 0, ctx, null));
    } else if (doc.documentElement) {
      inTree({ doc, shadow: false }, () => visit(doc.documentElement, 0, ctx, null));
    }
  });
  return cut;
}
// Run `fn` with WALK_TREE (42-pointer.js) set to `tree`, restoring the one before whatever happens.
function inTree(tree, fn) {
  const before = WALK_TREE;
  WALK_TREE = tree;
  try {
    fn();
  } finally {
    WALK_TREE = before;
  }
}
// The options (and optgroup labels) of a listed <select>, as elements of their own right after it
// (§9 v1.1): they have no box in a drop-down, so only `display:none`/`hidden` ones are skipped.
// `owner`: the select's own info; an option is shown only where its select is (shownInfo, 55-pages.js).
function listOptions(select, cb, owner) {
  const shown = (e) => !e.hidden && (styleOf(e) || { display: "none" }).display !== "none";
  const item = (tag, role) => {
    const info = { tag, role, interactive: true, notable: false, unreadable: null, option: true, owner };
    if (owner.shown) info.shown = true;
    return info;
  };
  for (let c = select.firstElementChild; c; c = c.nextElementSibling) {
    const t = tagOf(c);
    if (t === "option" && shown(c)) cb.element(c, item(t, "option"));
    if (t !== "optgroup" || !shown(c)) continue;
    cb.element(c, item(t, "group"));
    for (let o = c.firstElementChild; o; o = o.nextElementSibling) {
      if (tagOf(o) === "option" && shown(o)) cb.element(o, item("option", "option"));
    }
  }
}


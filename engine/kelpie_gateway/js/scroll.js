// Kelpie action for the host extension `scroll`: with P.handle, scroll the captured node into the middle
// of its viewport; without, scroll the page P.pages (1..10) pages P.direction ("up" | "down"). One page is
// 90 % of the scrolled box's visible height, so a line of context stays in view. The page's scroller is
// the document's, or — when the document itself cannot scroll (app layouts with an inner scrolling pane) —
// the scrollable box under the viewport's centre. Scrolling is instant (never smooth), so the new position
// and any lazy loading it triggers are in effect when the answer arrives.
// Answers {scrolled, atTop, atBottom} (page) or {scrolled:true, inView} (element), or {error, mayHaveCompleted}.

function canScroll(el) {
  if (!el || el.scrollHeight <= el.clientHeight + 1) return false;
  if (el === document.scrollingElement) return true;
  const st = styleOf(el);
  const overflow = st ? st.raw.overflowY : "";
  return overflow === "auto" || overflow === "scroll" || overflow === "overlay";
}

function pageScroller() {
  const root = document.scrollingElement || document.documentElement;
  if (canScroll(root)) return root;
  const x = Math.floor(window.innerWidth / 2);
  const y = Math.floor(window.innerHeight / 2);
  for (let el = document.elementFromPoint(x, y); el; el = flatParent(el)) {
    if (isElement(el) && canScroll(el)) return el;
  }
  return root;
}

async function main(P) {
  if (P.handle) {
    const el = lookup(P.handle);
    if (!el) return fail("NODE_REPLACED", "the element was replaced or removed since the snapshot; take a new snapshot", false);
    STATE.effect = true;
    el.scrollIntoView({ block: "center", inline: "nearest", behavior: "instant" });
    const box = el.getBoundingClientRect();
    const view = el.ownerDocument.defaultView;
    const inView = box.bottom > 0 && box.right > 0 && box.top < view.innerHeight && box.left < view.innerWidth;
    return { scrolled: true, inView };
  }
  const target = pageScroller();
  const pages = Math.min(10, Math.max(1, Number(P.pages) || 1));
  const sign = P.direction === "up" ? -1 : 1;
  const visible = target === document.scrollingElement ? window.innerHeight : target.clientHeight;
  const before = target.scrollTop;
  STATE.effect = true;
  target.scrollBy({ top: sign * pages * Math.max(1, Math.round(visible * 0.9)), behavior: "instant" });
  const after = target.scrollTop;
  return {
    scrolled: Math.abs(after - before) >= 1,
    atTop: after <= 0,
    atBottom: after + target.clientHeight >= target.scrollHeight - 1,
  };
}

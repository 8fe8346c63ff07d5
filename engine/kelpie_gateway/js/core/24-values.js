// ---------------------------------------------------------------- values a person set (issue 27)
// One function declaration and nothing else: reader.VALUE_WATCH runs this very text in every new document's
// world (the host's new-document script, frames included); the bundles call it for their own document and
// for a frame's on first sight. It keeps, in the world's global, the set of elements that received an
// `input`, `beforeinput` or `change` event (typing, paste, drop, autofill, the gateway's own fill and type,
// native key events): their value is a person's, so no caption may ever be read from it (an input a page
// turns into a button after typing takes its value as its `value` attribute, HTML §4.10.5.4).
function watchValues(win) {
  const slot = "__kelpieValueSetByPerson";
  let set = null;
  try {
    set = win[slot];
    if (set) return set;
    set = new WeakSet();
    Object.defineProperty(win, slot, { value: set, enumerable: false, configurable: false, writable: false });
    const mark = (event) => {
      const path = event.composedPath();
      const target = path.length ? path[0] : event.target;
      if (target && target.nodeType === 1) set.add(target);
    };
    for (const type of ["beforeinput", "input", "change"]) win.addEventListener(type, mark, true);
  } catch (e) {
    return set; // a window this world cannot reach: nothing is watched there
  }
  return set;
}

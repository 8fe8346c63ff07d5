// Kelpie captured-node action for the host extension `press_key` with a ref: focus the captured node so
// that the trusted key events the host sends next (CDP Input.dispatchKeyEvent) reach it.
// Answers {focused:true} or {error:{code,message}, mayHaveCompleted}.
// Refused before any event, mayHaveCompleted:false (docs/contract-notes.md, "press_key targets"): a gone
// node (NODE_REPLACED); a disabled target as §9 v1.1 defines it for tab.click and tab.type (the disabled
// attribute, a disabled fieldset, aria-disabled, inert, outside an open modal dialog) and a node that
// cannot take keyboard focus at all (NOT_ACTIONABLE). Once the page saw the node receive focus (its focus
// handlers ran), a node the page removed is NODE_REPLACED and a focus the page moved elsewhere is
// EFFECT_NOT_OBSERVED, both mayHaveCompleted:true; the host then presses no key.

function deepActive(doc) {
  let active = doc.activeElement;
  for (let hops = 0; active && active.shadowRoot && active.shadowRoot.activeElement && hops < 64; hops++) {
    active = active.shadowRoot.activeElement;
  }
  return active;
}

async function main(P) {
  const el = lookup(P.handle);
  if (!el) return fail("NODE_REPLACED", "the element was replaced or removed since the snapshot; take a new snapshot", false);
  if (isDisabled(el)) {
    return fail("NOT_ACTIONABLE", "the element is disabled (or inert): it cannot take keyboard focus; no key was pressed", false);
  }
  if (typeof el.focus !== "function") {
    return fail("NOT_ACTIONABLE", "the element cannot take keyboard focus; no key was pressed", false);
  }
  const doc = el.ownerDocument;
  if (deepActive(doc) === el) return { focused: true };
  // Did the page see the node receive focus? `focus` and `focusin` are composed and captured at the document
  // (a `focus` handler that moves focus on at once can keep the browser from firing `focusin` at all).
  let received = false;
  const seen = (event) => {
    if (event.composedPath().includes(el)) received = true;
  };
  for (const type of ["focus", "focusin"]) doc.addEventListener(type, seen, true);
  try {
    el.focus();
  } finally {
    for (const type of ["focus", "focusin"]) doc.removeEventListener(type, seen, true);
  }
  if (deepActive(doc) === el && isLive(el)) return { focused: true };
  if (!received) {
    return fail("NOT_ACTIONABLE", "the element cannot take keyboard focus (not focusable); no key was pressed", false);
  }
  STATE.effect = true;
  if (!isLive(el)) return fail("NODE_REPLACED", "the page removed the element while it was being focused; no key was pressed; observe before acting", true);
  return fail("EFFECT_NOT_OBSERVED", "the page moved focus away from the element as it was focused; no key was pressed; observe before acting", true);
}

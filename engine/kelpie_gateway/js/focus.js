// Kelpie captured-node action for the host extension `press_key` with a ref: focus the captured node so
// that the trusted key events the host sends next (CDP Input.dispatchKeyEvent) reach it.
// Answers {focused:true} or {error:{code,message}, mayHaveCompleted}. A node that cannot take focus is
// refused NOT_TYPABLE before any event (mayHaveCompleted:false); if focus handlers moved focus elsewhere
// or removed the node, the refusal is mayHaveCompleted:true (page handlers ran).

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
  if (el.disabled === true || (typeof el.closest === "function" && el.closest("[inert]"))) {
    return fail("NOT_TYPABLE", "the element is disabled: it cannot take keyboard focus", false);
  }
  if (typeof el.focus !== "function") return fail("NOT_TYPABLE", "the element cannot take keyboard focus", false);
  const doc = el.ownerDocument;
  const before = deepActive(doc);
  if (before === el) return { focused: true };
  el.focus();
  const after = deepActive(doc);
  if (after === el && isLive(el)) return { focused: true };
  if (after === before) return fail("NOT_TYPABLE", "the element cannot take keyboard focus (not focusable)", false);
  STATE.effect = true;
  if (!isLive(el)) return fail("NODE_REPLACED", "the element was removed while it was being focused; observe before acting", true);
  return fail("NOT_TYPABLE", "the page moved focus away from the element; observe before acting", true);
}

// Kelpie captured-node action: `tab.click` (contract §9). Synthetic DOM activation of the captured node.
// Answers {clicked:true} or {error:{code,message}, mayHaveCompleted}.
async function main(P) {
  const el = lookup(P.handle);
  if (!el) return fail("NODE_REPLACED", "the element was replaced or removed since the snapshot; take a new snapshot", false);
  STATE.effect = true;
  if (typeof el.click === "function") {
    el.click();
  } else {
    const view = el.ownerDocument.defaultView;
    el.dispatchEvent(new view.MouseEvent("click", { bubbles: true, cancelable: true, composed: true, view }));
  }
  return { clicked: true };
}

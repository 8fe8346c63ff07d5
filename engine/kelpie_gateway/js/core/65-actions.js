// Captured-node text actions (tab.type, the host's `fill`): focus `el` and check it again, as §9 requires
// (focus handlers may have removed, replaced, disabled or retyped it). `eligibility(el)` answers one of
// `kinds` or a refusal reason; `kind` is what it answered before focus. Returns null when `el` is still
// live and still `kind`, else the refusal, mayHaveCompleted:true (the page's focus handlers ran).
function focusAndRecheck(el, kind, eligibility, kinds) {
  STATE.effect = true;
  if (typeof el.focus === "function") el.focus();
  if (!isLive(el)) return fail("NODE_REPLACED", "the element was removed while it was being focused; observe before acting", true);
  const again = eligibility(el);
  if (again === kind) return null;
  return fail("NOT_TYPABLE", (kinds.includes(again) ? "the element changed kind" : again) + " after focus; observe before acting", true);
}
// Put the caret at the end of an editing host's contents (after text was written into it), as a user's
// caret would be. Cosmetic: a page whose selection API throws is not an error.
function caretToEnd(view, doc, el) {
  try {
    const sel = view.getSelection();
    if (sel) {
      const range = doc.createRange();
      range.selectNodeContents(el);
      range.collapse(false);
      sel.removeAllRanges();
      sel.addRange(range);
    }
  } catch (e) {
    // caret placement is cosmetic
  }
}

// ---------------------------------------------------------------- element states (§9 v1.1)
const CHECKABLE_ROLES = new Set(["checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"]);
const SELECTABLE_ROLES = new Set(["option", "tab", "gridcell", "row", "treeitem", "columnheader", "rowheader"]);
const READONLY_ROLES = new Set(["textbox", "searchbox", "combobox", "grid", "gridcell", "listbox", "slider",
  "spinbutton", "checkbox", "radio", "radiogroup", "switch", "treegrid", "columnheader", "rowheader"]);
function ariaToken(el, name) {
  return (el.getAttribute(name) || "").trim().toLowerCase();
}
const modalCache = new Map();
function openModal(doc) {
  let m = modalCache.get(doc);
  if (m === undefined) {
    try {
      m = doc.querySelector("dialog:modal");
    } catch (e) {
      m = null;
    }
    modalCache.set(doc, m);
  }
  return m;
}
// Disabled as §9 v1.1 defines it: the `disabled` attribute (and what it implies: a disabled fieldset
// outside its first legend, a disabled optgroup or select for an option), aria-disabled="true" on the
// element or an ancestor, an `inert` subtree, or outside an open modal dialog (which makes the rest inert).
function isDisabled(el) {
  try {
    if (el.matches(":disabled")) return true;
  } catch (e) {
    // not an element :disabled applies to
  }
  const t = tagOf(el);
  if (t === "option" || t === "optgroup") {
    const sel = el.closest("select");
    if (sel && sel.matches(":disabled")) return true;
  }
  const up = upFacts(el);
  if (up.off) return true;
  for (const [doc, inside] of up.docs) if (!inside && openModal(doc)) return true;
  return false;
}

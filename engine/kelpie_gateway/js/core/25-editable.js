// Editability is asked up to five times per element that a walk tests in full (its role, its
// interactivity, its priority class, the descent), and each `isContentEditable` is a style-checked DOM
// call. While no page code can run (`frozen`: a walk, or a whole snapshot read and its answer) it is
// read once per element; outside — an action after focus, where the page's handlers may have changed
// it — it is always read afresh.
function isEditable(el) {
  if (FROZEN === null) return !!el.isContentEditable;
  const cache = FROZEN.editable;
  let r = cache.get(el);
  if (r === undefined) cache.set(el, (r = !!el.isContentEditable));
  return r;
}
function isEditingHost(el) {
  if (!isEditable(el)) return false;
  const p = el.parentElement;
  return !p || !isEditable(p);
}
function textSecured(el) {
  const st = styleOf(el);
  return !!st && st.secured;
}


// Values a person set (24-values.js): this document is watched from the first reader call at the latest
// (from its creation when the host registers reader.new_document_script); a same-origin frame's document
// from the first time one of its elements is asked about.
watchValues(globalThis);

function valueSetByPerson(el) {
  const win = el.ownerDocument && el.ownerDocument.defaultView;
  if (!win) return false;
  const set = watchValues(win);
  return !!set && set.has(el);
}

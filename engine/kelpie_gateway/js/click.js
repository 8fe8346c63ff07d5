// Kelpie captured-node action: `tab.click` (contract §9). Synthetic DOM activation of the captured node;
// on an <option> of a native select, the selection a user makes (§9 v1.1). Answers {clicked:true} or
// {error:{code,message}, mayHaveCompleted}.
//
// Refused before any event, mayHaveCompleted:false: a gone node (NODE_REPLACED); a disabled target —
// the disabled attribute, a disabled fieldset/optgroup/select, aria-disabled on it or an ancestor, inert,
// outside an open modal dialog — and an optgroup label (NOT_ACTIONABLE).
// An option click is verified afterwards (privately: the option's selectedness, never a value): if the
// page undid it, EFFECT_NOT_OBSERVED with mayHaveCompleted:true. A click on (or inside) a link that downloads
// (`download` attribute, blob: or data: URL) answers {clicked:true, downloadLink:true} (a hint for the host).

// Select `option` of `select` as a user choosing it does: a single select selects it (nothing happens
// when it already is), a `multiple` one toggles it; `input` then `change` bubble from the select when
// the selection changed. Returns the selectedness the option must show afterwards.
function chooseOption(select, option) {
  const view = select.ownerDocument.defaultView;
  const want = select.multiple ? !option.selected : true;
  if (option.selected === want) return want;
  STATE.effect = true;
  option.selected = want;
  select.dispatchEvent(new view.Event("input", { bubbles: true, composed: true }));
  select.dispatchEvent(new view.Event("change", { bubbles: true }));
  return want;
}

async function main(P) {
  const el = lookup(P.handle);
  if (!el) return fail("NODE_REPLACED", "the element was replaced or removed since the snapshot; take a new snapshot", false);
  const tag = tagOf(el);
  const select = isHTML(el) && (tag === "option" || tag === "optgroup") ? el.closest("select") : null;
  if (isDisabled(el)) {
    return fail("NOT_ACTIONABLE", "the element is disabled (or inert); nothing was done", false);
  }
  if (select && tag === "optgroup") {
    return fail("NOT_ACTIONABLE", "an optgroup label cannot be chosen; click one of its options", false);
  }
  if (select) {
    const want = chooseOption(select, el);
    if (el.selected !== want) {
      return fail("EFFECT_NOT_OBSERVED", "the option was chosen but the page did not keep the choice; observe before acting", true);
    }
    return { clicked: true };
  }
  // A link that downloads rather than navigates (a `download` attribute, a blob: or data: URL): the host
  // waits for its download to begin (it starts in the browser process, after this answer). Read before the
  // click, whose handlers may change the link.
  const link = isHTML(el) && typeof el.closest === "function" ? el.closest("a[href], area[href]") : null;
  const href = link ? String(link.getAttribute("href") || "") : "";
  const downloadLink = !!link && (link.hasAttribute("download") || /^\s*(blob|data):/i.test(href));
  STATE.effect = true;
  if (typeof el.click === "function") {
    el.click();
  } else {
    const view = el.ownerDocument.defaultView;
    el.dispatchEvent(new view.MouseEvent("click", { bubbles: true, cancelable: true, composed: true, view }));
  }
  return downloadLink ? { clicked: true, downloadLink: true } : { clicked: true };
}

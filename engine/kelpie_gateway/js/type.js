// Kelpie captured-node action: `tab.type` (contract §9). Appends P.text to a text input or textarea
// through the native value setter plus `input` and `change` events, or appends a text node to
// contenteditable content. Answers {typed:<code points appended>} or {error, mayHaveCompleted}.
// Refusals before focus are mayHaveCompleted:false (a disabled or inert target: NOT_ACTIONABLE, §9
// v1.1); after focus (page handlers ran) they are true. After the events and one turn of the page's
// event loop the effect is checked privately — the field's value (or the editable text) must end with
// what was appended — else EFFECT_NOT_OBSERVED, mayHaveCompleted:true. No value or length is returned.

// "field" (text input, textarea), "editable" (contenteditable) or a refusal reason string.
function typability(el) {
  const tag = tagOf(el);
  if (tag === "input" || tag === "textarea") {
    if (tag === "input" && !TEXT_INPUT_TYPES.has(inputType(el))) return "input type \"" + inputType(el) + "\" is not typable";
    if (el.disabled) return "the field is disabled";
    if (el.readOnly) return "the field is read-only";
    return "field";
  }
  if (isEditable(el)) return "editable";
  return "the element is not a text field or editable content";
}

function settle() {
  return new Promise((resolve) => setTimeout(resolve, 0)); // this world's timer: a frame may go away
}

async function main(P) {
  const el = lookup(P.handle);
  if (!el) return fail("NODE_REPLACED", "the element was replaced or removed since the snapshot; take a new snapshot", false);
  if (isDisabled(el)) return fail("NOT_ACTIONABLE", "the element is disabled (or inert); nothing was typed", false);
  const kind = typability(el);
  if (kind !== "field" && kind !== "editable") return fail("NOT_TYPABLE", kind, false);
  const changed = focusAndRecheck(el, kind, typability, ["field", "editable"]);
  if (changed) return changed;
  const doc = el.ownerDocument;
  const view = doc.defaultView;
  const text = String(P.text);
  let typed;
  let read;
  let appended;
  if (kind === "field") {
    const proto = tagOf(el) === "input" ? view.HTMLInputElement.prototype : view.HTMLTextAreaElement.prototype;
    const desc = Object.getOwnPropertyDescriptor(proto, "value");
    read = () => desc.get.call(el);
    const before = read();
    desc.set.call(el, before + text);
    const after = read();
    // What the browser's own value sanitisation kept (e.g. no line breaks in a single-line field).
    appended = after.startsWith(before) ? after.slice(before.length) : text;
    typed = codePoints(appended);
    el.dispatchEvent(new view.InputEvent("input", { bubbles: true, composed: true, inputType: "insertText", data: text }));
    el.dispatchEvent(new view.Event("change", { bubbles: true }));
  } else {
    const node = doc.createTextNode(text);
    el.appendChild(node);
    caretToEnd(view, doc, el); // just after the appended text: it is the last child
    read = () => el.textContent || "";
    appended = text;
    typed = codePoints(text);
    el.dispatchEvent(new view.InputEvent("input", { bubbles: true, composed: true, inputType: "insertText", data: text }));
  }
  await settle(); // let the page's own reaction (a re-render, a revert in a task) happen first
  if (!read().endsWith(appended)) {
    return fail("EFFECT_NOT_OBSERVED", "the text was typed but the field does not show it (the page changed or reverted it); observe before acting", true);
  }
  return { typed };
}

// Kelpie captured-node action for the host extension `fill`: REPLACE the content of a text field,
// textarea or contenteditable element with P.text (tab.type appends). Same eligibility as tab.type (a
// disabled or inert target is NOT_ACTIONABLE before any event, §9 v1.1), plus
// number and date/time-like inputs, whose text must be in the input's own format (validated by the
// browser's value sanitization before any event: INVALID_PARAMS, mayHaveCompleted:false).
// The new content goes in through the native value setter plus `input` and `change` events, then the
// script checks privately that the captured control now holds exactly that text; if the page reverted or
// transformed it the answer is EFFECT_NOT_OBSERVED with mayHaveCompleted:true. The value is never returned.
// Answers {filled: <code points in the field>} or {error, mayHaveCompleted}.

const FORMATTED_INPUT_TYPES = {
  number: "a number such as 42, -3.5 or 1e3",
  date: "a date YYYY-MM-DD",
  time: "a time HH:MM or HH:MM:SS",
  "datetime-local": "a local date and time YYYY-MM-DDTHH:MM",
  month: "a month YYYY-MM",
  week: "a week YYYY-Www",
};

// "field", "formatted", "editable" or a refusal reason string.
function fillability(el) {
  const tag = tagOf(el);
  if (tag === "input" || tag === "textarea") {
    const type = tag === "input" ? inputType(el) : "";
    const formatted = Object.prototype.hasOwnProperty.call(FORMATTED_INPUT_TYPES, type);
    if (tag === "input" && !TEXT_INPUT_TYPES.has(type) && !formatted) return "input type \"" + type + "\" cannot be filled";
    if (el.disabled) return "the field is disabled";
    if (el.readOnly) return "the field is read-only";
    return formatted ? "formatted" : "field";
  }
  if (isEditable(el)) return "editable";
  return "the element is not a text field or editable content";
}

// What the control's value becomes when `text` is assigned: the browser's own sanitization, measured on
// a detached control of the same kind (null: the text is not in that input type's format).
function sanitized(el, text) {
  const doc = el.ownerDocument;
  const probe = doc.createElement(tagOf(el));
  if (tagOf(el) === "input") probe.type = inputType(el);
  probe.value = text;
  const value = probe.value;
  if (tagOf(el) === "input" && text !== "" && value === "" && Object.prototype.hasOwnProperty.call(FORMATTED_INPUT_TYPES, inputType(el))) {
    return null;
  }
  return value;
}

async function main(P) {
  const el = lookup(P.handle);
  if (!el) return fail("NODE_REPLACED", "the element was replaced or removed since the snapshot; take a new snapshot", false);
  if (isDisabled(el)) return fail("NOT_ACTIONABLE", "the element is disabled (or inert); nothing was filled", false);
  const kind = fillability(el);
  if (kind !== "field" && kind !== "formatted" && kind !== "editable") return fail("NOT_TYPABLE", kind, false);
  const text = String(P.text);
  let expected = text;
  if (kind !== "editable") {
    expected = sanitized(el, text);
    if (expected === null) {
      return fail("INVALID_PARAMS", "/params/arguments/text: not valid for this " + inputType(el) + " input; expected " +
        FORMATTED_INPUT_TYPES[inputType(el)], false);
    }
  }
  const changed = focusAndRecheck(el, kind, fillability, ["field", "formatted", "editable"]);
  if (changed) return changed;
  const doc = el.ownerDocument;
  const view = doc.defaultView;
  let now;
  if (kind !== "editable") {
    const proto = tagOf(el) === "input" ? view.HTMLInputElement.prototype : view.HTMLTextAreaElement.prototype;
    const desc = Object.getOwnPropertyDescriptor(proto, "value");
    if (typeof el.select === "function") {
      try { el.select(); } catch (e) { /* number/date inputs have no text selection */ }
    }
    desc.set.call(el, text);
    el.dispatchEvent(new view.InputEvent("input", { bubbles: true, composed: true, inputType: "insertReplacementText", data: text }));
    el.dispatchEvent(new view.Event("change", { bubbles: true }));
    if (!isLive(el)) return fail("EFFECT_NOT_OBSERVED", "the page removed the field after it was filled; observe before acting", true);
    now = desc.get.call(el);
  } else {
    el.textContent = text;
    caretToEnd(view, doc, el);
    el.dispatchEvent(new view.InputEvent("input", { bubbles: true, composed: true, inputType: "insertReplacementText", data: text }));
    if (!isLive(el)) return fail("EFFECT_NOT_OBSERVED", "the page removed the element after it was filled; observe before acting", true);
    now = el.textContent;
  }
  if (now !== expected) {
    return fail("EFFECT_NOT_OBSERVED", "the field does not hold the filled text afterwards (the page changed or reverted it); observe before acting", true);
  }
  return { filled: codePoints(now) };
}

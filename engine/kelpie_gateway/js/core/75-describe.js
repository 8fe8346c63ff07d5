// The sorted `states` of an element (closed set; booleans a screen reader announces, never a value).
function statesOf(el, info) {
  const s = new Set();
  const tag = info.tag;
  const role = info.role;
  const html = isHTML(el);
  const type = html && tag === "input" ? inputType(el) : "";
  if (type === "checkbox" && el.indeterminate) s.add("mixed");
  else if (type === "checkbox" || type === "radio") { if (el.checked) s.add("checked"); }
  else if (CHECKABLE_ROLES.has(role)) {
    const c = ariaToken(el, "aria-checked");
    if (c === "true") s.add("checked");
    else if (c === "mixed") s.add("mixed");
  }
  if (html && tag === "option" && el.closest("select")) { if (el.selected) s.add("selected"); }
  else if (SELECTABLE_ROLES.has(role) && ariaToken(el, "aria-selected") === "true") s.add("selected");
  const ex = ariaToken(el, "aria-expanded");
  if (ex === "true") s.add("expanded");
  else if (ex === "false") s.add("collapsed");
  else if (tag === "summary" && el.parentElement && tagOf(el.parentElement) === "details" &&
           firstChildTag(el.parentElement, "summary") === el) {
    s.add(el.parentElement.open ? "expanded" : "collapsed");
  }
  const pr = ariaToken(el, "aria-pressed");
  if (pr === "true") s.add("pressed");
  else if (pr === "mixed") s.add("mixed");
  if (isDisabled(el)) s.add("disabled");
  if (html && ((tag === "input" && (TEXT_INPUT_TYPES.has(type) || role === "textbox" || type === "number")) ||
      tag === "textarea") && el.readOnly) s.add("readonly");
  else if (READONLY_ROLES.has(role) && ariaToken(el, "aria-readonly") === "true") s.add("readonly");
  if (html && (tag === "input" || tag === "select" || tag === "textarea") && el.required) s.add("required");
  else if (ariaToken(el, "aria-required") === "true") s.add("required");
  const inv = ariaToken(el, "aria-invalid");
  let userInvalid = false;
  try {
    userInvalid = html && el.matches(":user-invalid");
  } catch (e) {
    userInvalid = false; // selector unknown to this browser
  }
  if ((inv && inv !== "false") || userInvalid) s.add("invalid");
  if (isOffscreen(el)) s.add("offscreen");
  return Array.from(s).sort();
}

// `url` of a link (§9 v1.1): http(s) resolved, a same-document target as its `#fragment`, any other
// scheme as the bare scheme (`javascript:`, `mailto:`); null when the element has no href.
const URL_FIELD_MAX = 500;
function linkUrl(el, tag) {
  let raw;
  if (isHTML(el) && (tag === "a" || tag === "area")) {
    if (!el.hasAttribute("href")) return null;
    raw = String(el.href);
  } else if (tag === "a" && !isHTML(el)) {
    const h = el.getAttribute("href") ?? el.getAttributeNS("http://www.w3.org/1999/xlink", "href");
    if (h === null) return null;
    try {
      raw = new URL(h, el.baseURI).href;
    } catch (e) {
      raw = h;
    }
  } else {
    return null;
  }
  const hash = raw.indexOf("#");
  const docUrl = String(el.ownerDocument.URL);
  const docBase = docUrl.indexOf("#") >= 0 ? docUrl.slice(0, docUrl.indexOf("#")) : docUrl;
  if (hash >= 0 && raw.slice(0, hash) === docBase) return raw.slice(hash);
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(raw);
  if (!scheme) return "";
  const name = scheme[1].toLowerCase();
  return name === "http" || name === "https" ? raw : name + ":";
}

// `value` of a range widget (§9 v1.2): {now, min?, max?, text?} from a native <input type=range>,
// <progress> or <meter>, else from aria-valuenow/-valuemin/-valuemax/-valuetext on an element whose role
// is slider, spinbutton, scrollbar, progressbar or meter, with ARIA's defaults (min 0 and max 100 for all
// but spinbutton; a slider or scrollbar without aria-valuenow is half-way). Text entry never shows a
// value: any other input (number included), a textarea, a select and editable content answer null, as
// do an indeterminate progress bar and a meter, progress bar or spin button without a current value.
const RANGE_ROLES = new Set(["slider", "spinbutton", "scrollbar", "progressbar", "meter"]);
const VALUE_TEXT_MAX = 200;
function ariaNumber(el, name) {
  const raw = el.getAttribute(name);
  if (raw === null || !raw.trim()) return null;
  const v = Number(raw.trim());
  return Number.isFinite(v) ? v : null;
}
function rangeValue(el, tag, role, flags) {
  if (!RANGE_ROLES.has(role)) return null;
  const html = isHTML(el);
  let now = null;
  let min = null;
  let max = null;
  if (html && (tag === "textarea" || tag === "select")) return null;
  if (isEditable(el)) return null;
  if (html && tag === "input") {
    if (inputType(el) !== "range") return null; // <input type=number> and every text type stay private
    const attr = (name, fallback) => {
      const v = Number(el.getAttribute(name));
      return el.hasAttribute(name) && Number.isFinite(v) ? v : fallback;
    };
    min = attr("min", 0);
    max = Math.max(min, attr("max", 100));
    now = el.valueAsNumber;
  } else if (html && tag === "progress") {
    if (!el.hasAttribute("value")) return null; // indeterminate
    now = el.value;
    min = 0;
    max = el.max;
  } else if (html && tag === "meter") {
    now = el.value;
    min = el.min;
    max = el.max;
  } else {
    now = ariaNumber(el, "aria-valuenow");
    min = ariaNumber(el, "aria-valuemin");
    max = ariaNumber(el, "aria-valuemax");
    if (role !== "spinbutton") {
      if (min === null) min = 0;
      if (max === null) max = 100;
    }
    if (now === null) {
      if (role !== "slider" && role !== "scrollbar") return null;
      now = min + (max - min) / 2;
    }
  }
  if (!Number.isFinite(now)) return null;
  const out = { now };
  if (min !== null && Number.isFinite(min)) out.min = min;
  if (max !== null && Number.isFinite(max)) out.max = max;
  const text = el.getAttribute("aria-valuetext");
  if (text !== null && flat(text)) {
    const cut = cutUnits(wellFormed(flat(text)), VALUE_TEXT_MAX);
    if (cut.cut) flags.truncated = true;
    out.text = cut.text;
  }
  return out;
}
// The visible text of an element (value-free, flattened), cut to a label's bound.
function visibleText(el, flags) {
  const visited = new Set();
  const under = ariaHiddenTree(el) ? el : undefined;
  const text = cutUnits(wellFormed(flat(accumulate(el, { visited, desc: true, under }))), LABEL_MAX);
  if (text.cut) flags.truncated = true;
  return text.text;
}
// Project one picked element to its public fields {tag, role, label, …}; reports cuts in flags. A generic
// element's role is "" (§9 v1.2); a pointer-clickable element without a name is labelled by its text.
function describe(info, flags) {
  const el = info.el;
  const cutTag = cutUnits(wellFormed(info.tag), TAG_MAX);
  if (cutTag.cut) flags.truncated = true;
  const out = { tag: cutTag.text, role: info.role === "generic" ? "" : info.role || "", label: "" };
  const cutName = cutUnits(wellFormed(accessibleName(el)), LABEL_MAX);
  if (cutName.cut) flags.truncated = true;
  out.label = cutName.text;
  if (!out.label && info.pointer) {
    out.label = visibleText(el, flags);
  } else if (!out.label && info.interactive) {
    // A clickable generic element has no accessible name; give its visible text instead.
    const text = visibleText(el, flags);
    if (text) out.text = text;
  }
  if (info.tag === "input") out.type = inputType(el) || "text";
  if (info.role === "heading") {
    const aria = Number(el.getAttribute("aria-level"));
    const m = /^h([1-6])$/.exec(info.tag);
    out.level = Number.isInteger(aria) && aria >= 1 ? aria : m ? Number(m[1]) : 2;
  }
  if (!info.unreadable) {
    const states = statesOf(el, info);
    if (states.length) out.states = states;
    const value = rangeValue(el, info.tag, info.role, flags);
    if (value) out.value = value;
  }
  const url = linkUrl(el, info.tag);
  if (url !== null) {
    const u = wellFormed(url);
    if (u.length > URL_FIELD_MAX) {
      out.url = cutUnits(u, URL_FIELD_MAX - 1).text + "\u2026";
      flags.truncated = true;
    } else {
      out.url = u;
    }
  }
  if (info.unreadable) out.unreadable = info.unreadable;
  const frame = frameField(el); // §9 v1.2: {origin, depth} inside a frame (core/80-frames.js)
  if (frame) out.frame = frame;
  if (rootOf(el).nodeType === 11) out.shadow = true;
  return out;
}

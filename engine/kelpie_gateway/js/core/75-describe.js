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

// Project one picked element to its public fields {tag, role, label, …}; reports cuts in flags.
function describe(info, flags) {
  const el = info.el;
  const cutTag = cutUnits(wellFormed(info.tag), TAG_MAX);
  if (cutTag.cut) flags.truncated = true;
  const out = { tag: cutTag.text, role: info.role || "", label: "" };
  const cutName = cutUnits(wellFormed(accessibleName(el)), LABEL_MAX);
  if (cutName.cut) flags.truncated = true;
  out.label = cutName.text;
  if (!out.label && info.interactive) {
    // A clickable generic element has no accessible name; give its visible text instead.
    const visited = new Set();
    const under = ariaHiddenTree(el) ? el : undefined;
    const text = cutUnits(wellFormed(flat(accumulate(el, { visited, desc: true, under }))), LABEL_MAX);
    if (text.cut) flags.truncated = true;
    if (text.text) out.text = text.text;
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

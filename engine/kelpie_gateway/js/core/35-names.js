// ---------------------------------------------------------------- accessible names (accname 1.2 + html-aam)
const NAME_PROHIBITED = new Set(["caption", "code", "definition", "deletion", "emphasis", "generic", "insertion",
  "mark", "paragraph", "presentation", "none", "strong", "subscript", "suggestion", "superscript", "term", "time"]);
const NAME_FROM_CONTENT = new Set(["button", "cell", "checkbox", "columnheader", "gridcell", "heading", "link",
  "menuitem", "menuitemcheckbox", "menuitemradio", "option", "radio", "row", "rowheader", "switch", "tab",
  "tooltip", "treeitem"]);
const NAME_FROM_CONTENT_IN_DESCENDANT = new Set(["", "caption", "code", "contentinfo", "definition", "deletion",
  "emphasis", "insertion", "list", "listitem", "mark", "none", "paragraph", "presentation", "region", "row",
  "rowgroup", "section", "strong", "subscript", "superscript", "table", "term", "time", "generic", "group",
  "blockquote", "figure", "note", "article", "img"]);

function rootOf(el) {
  return el.getRootNode ? el.getRootNode() : el.ownerDocument;
}
function idRefs(el, attr) {
  const value = el.getAttribute(attr);
  if (!value) return [];
  const root = rootOf(el);
  const out = [];
  for (const id of value.split(ASCII_WS)) {
    if (!id) continue;
    const found = root && root.getElementById ? root.getElementById(id) : null;
    if (found && !out.includes(found)) out.push(found);
  }
  return out;
}
function cssString(body) {
  // Decode the escapes of a CSS string's body.
  return body.replace(/\\([0-9a-fA-F]{1,6})[ \t\n]?|\\([\s\S])/g, (_m, hex, ch) => {
    if (hex) {
      const cp = parseInt(hex, 16);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : "\uFFFD";
    }
    return ch === "\n" ? "" : ch;
  });
}
// The computed `content` of a pseudo-element, as text for a name (accname 1.2 step 2F.ii with CSS Generated
// Content 3): strings and attr() contribute; an image — url(), image-set(), a gradient or any other function
// — contributes nothing, never its URL; counters and quotes are not computed (nothing). After a top-level
// `/` comes the alternative text, which replaces everything before it (`url(x) / ""` contributes nothing),
// set apart by spaces.
function parseContent(value, el) {
  const tokens = [];
  let alt = null;
  const n = value.length;
  let i = 0;
  const quoted = (q) => { // value[i] is the quote; returns the decoded body and moves past the string
    let j = i + 1;
    while (j < n && value[j] !== q) j += value[j] === "\\" ? 2 : 1;
    const body = cssString(value.slice(i + 1, Math.min(j, n)));
    i = j + 1;
    return body;
  };
  while (i < n) {
    const c = value[i];
    if (c === '"' || c === "'") {
      (alt || tokens).push(quoted(c));
    } else if (c === "/") {
      alt = [];
      i += 1;
    } else if (/[\t\n\f\r ]/.test(c)) {
      i += 1;
    } else {
      let j = i;
      while (j < n && !/[\t\n\f\r "'(/]/.test(value[j])) j += value[j] === "\\" ? 2 : 1;
      const name = value.slice(i, j).toLowerCase();
      i = j;
      if (value[i] !== "(") continue; // a keyword (none, open-quote, …): nothing
      // A function: skip to its closing parenthesis (strings and nested parentheses inside).
      const start = i + 1;
      let depth = 0;
      while (i < n) {
        const d = value[i];
        if (d === '"' || d === "'") { quoted(d); continue; }
        if (d === "\\") { i += 2; continue; }
        if (d === "(") depth += 1;
        else if (d === ")" && --depth === 0) break;
        i += 1;
      }
      const inner = value.slice(start, Math.min(i, n)).trim();
      i += 1;
      if (name === "attr") {
        const attrName = inner.split(/[\s,]/)[0];
        if (attrName) (alt || tokens).push(el.getAttribute(attrName) || "");
      }
    }
  }
  if (alt === null) return tokens.join("");
  // The alternative text stands apart from the element's text, as Chromium names it ("Star Rating" for
  // `url(star.svg) / "Star"` before "Rating"): an alternative names the content as a whole, like an image.
  const text = alt.join("");
  return text ? " " + text + " " : "";
}
function pseudoText(el, which) {
  const st = styleOf(el, which);
  if (!st) return "";
  const c = st.content;
  if (!c || c === "none" || c === "normal" || st.display === "none") return "";
  if (st.visibility !== "visible") return "";
  let text = parseContent(c, el);
  if (text && st.display !== "inline") text = " " + text + " ";
  return text;
}
function labelsOf(el) {
  try {
    return el.labels ? Array.from(el.labels) : [];
  } catch (e) {
    return [];
  }
}
function firstChildTag(el, tag) {
  for (let c = el.firstElementChild; c; c = c.nextElementSibling) if (tagOf(c) === tag) return c;
  return null;
}

// Text alternative of `el` (accname "compute the text alternative of the current node").
// o = {visited:Set, self:bool (root), desc:bool (descendant of root), lb:bool (in aria-labelledby
// traversal), lbl:bool (in a <label>/native text alternative), hiddenRef:bool (traversal root hidden)}
function textAlt(el, o) {
  if (o.visited.has(el)) return "";
  const role = roleOf(el) || "";
  const tag = tagOf(el);
  const under = o.self && ariaHiddenTree(el) ? el : o.under;
  const child = { visited: o.visited, desc: true, lb: o.lb, lbl: o.lbl, hiddenRef: o.hiddenRef, under };
  if (NOT_RENDERED_TAGS.has(tag)) return "";
  // A slot has no accessibility node of its own: only its (assigned or default) content counts.
  if (tag === "slot") {
    o.visited.add(el);
    return accumulate(el, o);
  }
  // 2A hidden, not referenced. For the element being named itself only rendering counts: a visible
  // control under an aria-hidden ancestor still gets its name (the snapshot only lists visible elements).
  if (!o.hiddenRef && (o.self ? !isRendered(el) || styleOf(el).visibility !== "visible" : hiddenInside(el, o.under))) {
    o.visited.add(el);
    return "";
  }
  // 2B aria-labelledby
  const lbRefs = idRefs(el, "aria-labelledby");
  if (!o.lb && lbRefs.length) {
    const name = lbRefs.map((r) => textAlt(r, { visited: o.visited, lb: true, hiddenRef: isHiddenForAria(r) })).join(" ");
    if (flat(name)) {
      o.visited.add(el);
      return name;
    }
  }
  // 2C embedded control (value-free: native form controls and editable content contribute nothing)
  if (!o.self && (o.lb || o.lbl || o.desc) && !lbRefs.includes(el)) {
    if (role === "textbox" || role === "searchbox" || isEditable(el)) {
      o.visited.add(el);
      return "";
    }
    if (role === "combobox" || role === "listbox") {
      o.visited.add(el);
      // v1.1 lists a select's options with their `selected` state, so its selected options' text is
      // no secret: an embedded select contributes it (accname 1.2). Text fields stay value-free.
      if (tag === "select") return Array.from(el.selectedOptions || [], (opt) => opt.label).join(" ");
      if (tag === "input" || tag === "textarea") return "";
      const listbox = role === "listbox" ? el : ownedOrDescendant(el, (e) => roleOf(e) === "listbox");
      if (listbox) {
        const picked = [];
        collectOwned(listbox, (e) => roleOf(e) === "option" && (e.getAttribute("aria-selected") || "") === "true", picked);
        return picked.map((e) => textAlt(e, child)).join(" ");
      }
      return accumulate(el, child);
    }
    if (["progressbar", "scrollbar", "slider", "spinbutton", "meter"].includes(role)) {
      o.visited.add(el);
      if (el.hasAttribute("aria-valuetext")) return el.getAttribute("aria-valuetext") || "";
      if (el.hasAttribute("aria-valuenow")) return el.getAttribute("aria-valuenow") || "";
      // A native range's position is shown (§9 v1.2 range values); a number input's value is typed text.
      if (tag === "input") return inputType(el) === "range" ? String(el.value) : "";
      return el.getAttribute("value") || "";
    }
    if (role === "menu") {
      o.visited.add(el);
      return "";
    }
  }
  // 2D aria-label
  const ariaLabel = el.getAttribute("aria-label") || "";
  if (flat(ariaLabel)) {
    o.visited.add(el);
    return ariaLabel;
  }
  // 2E host language
  if (role !== "presentation" && role !== "none") {
    const hl = hostLanguageName(el, tag, lbRefs.length > 0, o, child);
    if (hl !== null) return hl;
  }
  // 2F/2G name from content
  if (NAME_FROM_CONTENT.has(role) || (o.desc && NAME_FROM_CONTENT_IN_DESCENDANT.has(role)) || tag === "summary" ||
      o.lb || o.lbl) {
    o.visited.add(el);
    const text = accumulate(el, child);
    if (o.self ? flat(text) : text) return text;
  }
  // 2I tooltip
  o.visited.add(el);
  if (role !== "presentation" && role !== "none" || tag === "iframe") {
    const title = el.getAttribute("title") || "";
    if (flat(title)) return title;
  }
  return "";
}
// Hidden for a descendant of the element being named. When that element itself sits under an
// aria-hidden ancestor (`under`), only aria-hidden between the descendant and it counts.
function hiddenInside(el, under) {
  if (!under) return isHiddenForAria(el);
  const st = styleOf(el);
  if (!st || !isRendered(el) || (st.display !== "contents" && st.visibility !== "visible")) return true;
  for (let e = el; e && e !== under; e = flatParent(e)) {
    if ((e.getAttribute("aria-hidden") || "").toLowerCase() === "true") return true;
  }
  return false;
}
function fromLabels(labels, o) {
  return labels.map((l) => textAlt(l, { visited: o.visited, lbl: true, hiddenRef: isHiddenForAria(l) }))
    .filter((s) => !!s).join(" ");
}
// HTML-AAM specific rules; returns null to continue with name from content.
function hostLanguageName(el, tag, hasLabelledBy, o, child) {
  if (!isHTML(el)) {
    if (tag === "svg" || el.ownerSVGElement) {
      const t = firstChildTag(el, "title");
      if (t && flat(t.textContent || "")) {
        o.visited.add(el);
        return t.textContent || ""; // svg-aam: the <title> child's text (never rendered, so not walked)
      }
      if (tag === "a") {
        const title = el.getAttribute("xlink:title") || "";
        if (flat(title)) { o.visited.add(el); return title; }
      }
    }
    return null;
  }
  if (tag === "input") {
    const type = inputType(el);
    o.visited.add(el);
    if (type === "button" || type === "submit" || type === "reset") {
      // A button's value is its visible caption, not user data — unless a person set it (a text field
      // the page turned into a button after typing: its value became the attribute; issue 27).
      const v = valueSetByPerson(el) ? "" : el.getAttribute("value") || "";
      if (flat(v)) return v;
      if (type === "submit") return "Submit";
      if (type === "reset") return "Reset";
      return el.getAttribute("title") || "";
    }
    if (type === "image") {
      const labels = labelsOf(el);
      if (labels.length && !o.lb) return fromLabels(labels, o);
      const alt = el.getAttribute("alt") || "";
      if (flat(alt)) return alt;
      const title = el.getAttribute("title") || "";
      if (flat(title)) return title;
      return "Submit";
    }
  }
  if (!hasLabelledBy && (tag === "button" || tag === "meter" || tag === "progress")) {
    const labels = labelsOf(el);
    if (labels.length) { o.visited.add(el); return fromLabels(labels, o); }
    return null;
  }
  if (!hasLabelledBy && tag === "output") {
    o.visited.add(el);
    const labels = labelsOf(el);
    if (labels.length) return fromLabels(labels, o);
    return el.getAttribute("title") || "";
  }
  if (!hasLabelledBy && (tag === "input" || tag === "textarea" || tag === "select")) {
    o.visited.add(el);
    const labels = labelsOf(el);
    if (labels.length) return fromLabels(labels, o);
    const type = tag === "input" ? inputType(el) : "";
    const placeholderOk = tag === "textarea" || (tag === "input" && TEXT_INPUT_TYPES.has(type));
    const title = el.getAttribute("title") || "";
    if (flat(title) || !placeholderOk) return title;
    return el.getAttribute("placeholder") || "";
  }
  if (!hasLabelledBy && (tag === "fieldset" || tag === "figure")) {
    o.visited.add(el);
    const cap = firstChildTag(el, tag === "fieldset" ? "legend" : "figcaption");
    if (cap) {
      const n = textAlt(cap, { visited: o.visited, desc: true, lbl: true, hiddenRef: isHiddenForAria(cap) });
      if (flat(n)) return n;
    }
    return el.getAttribute("title") || "";
  }
  if (tag === "img" || tag === "area") {
    o.visited.add(el);
    const alt = el.getAttribute("alt") || "";
    if (flat(alt)) return alt;
    return el.getAttribute("title") || "";
  }
  if (tag === "table") {
    const cap = firstChildTag(el, "caption");
    if (cap) {
      o.visited.add(el);
      const n = textAlt(cap, { visited: o.visited, desc: true, lbl: true, hiddenRef: isHiddenForAria(cap) });
      if (flat(n)) return n;
    }
    const summary = el.getAttribute("summary") || "";
    if (flat(summary)) { o.visited.add(el); return summary; }
    return null;
  }
  if (tag === "option" && el.closest("select")) {
    o.visited.add(el);
    return el.label || ""; // the label attribute, else the option's text (white space collapsed)
  }
  if (tag === "optgroup") {
    const l = el.getAttribute("label") || "";
    if (flat(l)) { o.visited.add(el); return l; }
  }
  if (tag === "iframe" || tag === "frame") {
    return null; // falls through to title
  }
  return null;
}
function collectOwned(el, pred, out) {
  const kids = [];
  for (let c = el.firstElementChild; c; c = c.nextElementSibling) kids.push(c);
  for (const c of idRefs(el, "aria-owns")) kids.push(c);
  for (const c of kids) {
    if (pred(c)) out.push(c);
    collectOwned(c, pred, out);
  }
  return out;
}
function ownedOrDescendant(el, pred) {
  const found = collectOwned(el, pred, []);
  return found.length ? found[0] : null;
}
function isInline(el) {
  const st = styleOf(el);
  const d = st ? st.display : "inline";
  return d === "inline" && tagOf(el) !== "br";
}
const VALUE_TAGS = new Set(["input", "textarea", "select", "option", "optgroup", "datalist"]);
function accumulate(el, o) {
  // Value-free: the content of form controls and editable regions is their value.
  if (VALUE_TAGS.has(tagOf(el)) && !(tagOf(el) === "option" && !el.closest("select, datalist"))) return "";
  if (isEditable(el) || textSecured(el)) return "";
  const parts = [pseudoText(el, "::before")];
  const visit = (n) => {
    if (n.nodeType === 3) {
      const p = n.parentElement;
      if (p && (textSecured(p) || isEditable(p))) return; // editable content and password-like text
      parts.push(n.data);
    } else if (n.nodeType === 1) {
      const t = textAlt(n, o);
      parts.push(isInline(n) ? t : " " + t + " ");
    }
  };
  const assigned = tagOf(el) === "slot" && el.assignedNodes ? el.assignedNodes() : [];
  if (assigned.length) {
    for (const n of assigned) visit(n);
  } else {
    if (el.shadowRoot) {
      for (let n = el.shadowRoot.firstChild; n; n = n.nextSibling) visit(n);
    } else {
      for (let n = el.firstChild; n; n = n.nextSibling) if (!n.assignedSlot) visit(n);
    }
    for (const n of idRefs(el, "aria-owns")) visit(n);
  }
  parts.push(pseudoText(el, "::after"));
  return parts.join("");
}

const nameCache = new Map();
// The accessible name of `el`, flattened (ASCII whitespace collapsed, trimmed), not yet bounded.
function accessibleName(el) {
  let name = nameCache.get(el);
  if (name !== undefined) return name;
  const role = roleOf(el) || "";
  if (NAME_PROHIBITED.has(role) && !(tagOf(el) === "img")) name = "";
  else name = flat(textAlt(el, { visited: new Set(), self: true })).trim(); // also outer U+00A0 (html-aam)
  nameCache.set(el, name);
  return name;
}


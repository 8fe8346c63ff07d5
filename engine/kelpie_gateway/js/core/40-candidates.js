// ---------------------------------------------------------------- the walk
const INTERACTIVE_ROLES = new Set(["button", "link", "checkbox", "radio", "switch", "textbox", "searchbox",
  "combobox", "listbox", "option", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "slider",
  "spinbutton", "treeitem", "scrollbar", "gridcell"]);
const VALID_SHADOW_HOSTS = new Set(["article", "aside", "blockquote", "body", "div", "footer", "h1", "h2", "h3",
  "h4", "h5", "h6", "header", "main", "nav", "p", "section", "span"]);
const LAYOUT_CONTAINERS = new Set(["article", "aside", "body", "div", "footer", "header", "main", "nav", "section"]);
// The open shadow root of `el`, or null. Only a custom element (its name has a hyphen) or one of
// VALID_SHADOW_HOSTS can host one (DOM `attachShadow`, declarative shadow roots alike; a lower-cased
// `tag` of such a name is itself), so for every other tag the DOM call is not made.
function openRootOf(el, tag) {
  return VALID_SHADOW_HOSTS.has(tag) || tag.includes("-") ? el.shadowRoot : null;
}

// Whether the element is a control by what it is (tag, role, tabindex, onclick): widget roles count
// whatever their tabindex (§9 v1.2), a treegrid's rows too. Pointer-clickable elements (42-pointer.js)
// are the walk's other listing criterion.
function isInteractive(el, tag, role) {
  if (tag === "a" || tag === "area") return el.hasAttribute("href") || INTERACTIVE_ROLES.has(role);
  if (tag === "button" || tag === "select" || tag === "textarea") return true;
  if (tag === "input") return inputType(el) !== "hidden";
  if (tag === "summary") return true;
  if ((tag === "audio" || tag === "video") && el.hasAttribute("controls")) return true;
  if (INTERACTIVE_ROLES.has(role)) return true;
  if (role === "row" && inTreegrid(el)) return true;
  if (isEditingHost(el)) return true;
  const ti = el.getAttribute("tabindex");
  if (ti !== null && ti.trim() !== "" && Number(ti) >= 0) return true;
  if (isDragSource(el)) return true;
  return el.hasAttribute("onclick");
}
// Something a person can take hold of to drag (docs/reader.md "Drag sources"): an HTML drag source
// (draggable="true"), an ARIA 1.1 one (aria-grabbed), or a drag handle as sortable-list libraries and
// their users name it — a class token `handle` or ending in `-handle`/`_handle` (jQuery UI marks every
// sortable item or its handle `ui-sortable-handle`; SortableJS documents `handle: ".handle"`).
const DRAG_HANDLE_CLASS = /(?:^|[\s_-])handle(?:\s|$)/i;
function isDragSource(el) {
  const draggable = el.getAttribute("draggable");
  if (draggable !== null && draggable.trim().toLowerCase() === "true") return true;
  if (el.hasAttribute("aria-grabbed")) return true;
  const cls = el.getAttribute("class");
  return cls !== null && DRAG_HANDLE_CLASS.test(cls);
}
// Listed for what they tell, not as controls (the last priority class): headings, named images, and the
// progress bars and meters whose `value` (§9 v1.2) says where something stands.
function isNotable(el, tag, role) {
  return role === "heading" || (role === "img" && tag === "img") || role === "progressbar" || role === "meter";
}
// Heuristic for a closed shadow root (unreadable from any script): a possible host with no open root whose
// rendered box holds content its light DOM does not explain.
function closedShadowSuspect(el, tag, rec) {
  if (!mayHideShadow(el, tag)) return false;
  const st = rec.raw;
  const hasContent = hasLightContent(el);
  const box = el.getBoundingClientRect();
  const px = (v) => parseFloat(v) || 0;
  const innerW = box.width - px(st.paddingLeft) - px(st.paddingRight) - px(st.borderLeftWidth) - px(st.borderRightWidth);
  const innerH = box.height - px(st.paddingTop) - px(st.paddingBottom) - px(st.borderTopWidth) - px(st.borderBottomWidth);
  if (innerW < 1 || innerH < 1) return false;
  if (!hasContent) return !sizedByStyle(el, rec); // an empty element sized by CSS hosts nothing (§9 v1.2)
  const range = el.ownerDocument.createRange();
  range.selectNodeContents(el);
  const light = range.getBoundingClientRect();
  const inline = rec.display.startsWith("inline");
  return light.height + 1 < innerH || (inline && light.width + 1 < innerW);
}
// Whether the box of an element without light content is explained by style alone: generated content
// (`::before`/`::after`, e.g. an icon font), or a size of its own in both dimensions (a length, not
// `auto` or a content keyword, as Typed OM's computed value says; a block in flow fills its container's
// width; a flex or grid item may be stretched; a min-size of its own). Only a box that its content must
// have sized — and that content is not in the light DOM — makes a closed shadow root likely: an empty
// icon span 16px square with a background image is not one (issue 29).
const CONTENT_SIZES = /^(?:auto|fit-content|min-content|max-content|-webkit-fit-content|-webkit-min-content|-webkit-max-content|stretch|-webkit-fill-available)/;
function sizedByStyle(el, rec) {
  for (const which of ["::before", "::after"]) {
    const ps = styleOf(el, which);
    const c = ps ? ps.content : "none";
    if (c && c !== "none" && c !== "normal" && ps.display !== "none") return true;
  }
  const display = rec.display;
  if (display === "inline") return false; // width and height do not apply: only content sizes it
  let map = null;
  try {
    map = typeof el.computedStyleMap === "function" ? el.computedStyleMap() : null;
  } catch (e) {
    map = null;
  }
  if (!map) return false;
  const own = (prop) => {
    const v = map.get(prop);
    return !!v && !CONTENT_SIZES.test(String(v));
  };
  const minOwn = (prop) => {
    const v = map.get(prop);
    const t = v ? String(v) : "0px";
    return !CONTENT_SIZES.test(t) && !/^0(?:px)?$/.test(t);
  };
  const p = flatParent(el);
  const ps = p ? styleOf(p) : null;
  const item = !!ps && /(?:^|-)(?:flex|grid)$/.test(ps.display);
  const raw = rec.raw;
  const inFlow = raw.position !== "absolute" && raw.position !== "fixed" && raw.cssFloat === "none";
  const blockLevel = inFlow && !display.startsWith("inline") && !display.startsWith("table-cell");
  const width = own("width") || minOwn("min-width") || item || blockLevel;
  const height = own("height") || minOwn("min-height") || item || own("aspect-ratio") && width;
  return width && height;
}
// The style-free part of that heuristic: only a custom element, or a `span`/`p`/heading/`blockquote`
// without light content, can be suspected.
function mayHideShadow(el, tag) {
  const custom = tag.includes("-");
  if (!custom && (!VALID_SHADOW_HOSTS.has(tag) || LAYOUT_CONTAINERS.has(tag))) return false;
  if (!custom && hasLightContent(el)) return false;
  return isHTML(el);
}
// Whether `el` has light content: an element child, or a text child that is not only white space
// (String.prototype.trim's). Decided without touching its text nodes: every node touched from the
// isolated world costs a wrapper, and on big pages these text wrappers were a quarter of the walk
// (docs/reader.md, "Performance"). Without element children, `textContent` is exactly the concatenation
// of the text children, and it is white space only exactly when each of them is. In an XML document a
// CDATA section (a Text node of another nodeType) may contribute, so there the children are read one by
// one as before; an HTML document can only hold one adopted from an XML document, and its text counts.
const NOT_WHITE = /\S/; // \s is exactly the white space String.prototype.trim removes
const htmlDocCache = new Map();
function hasLightContent(el) {
  if (el.firstElementChild) return true;
  if (!NOT_WHITE.test(el.textContent || "")) return false;
  const doc = el.ownerDocument;
  let html = htmlDocCache.get(doc);
  if (html === undefined) htmlDocCache.set(doc, (html = doc.contentType === "text/html"));
  if (html) return true;
  for (let n = el.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 3 && NOT_WHITE.test(n.data)) return true;
  }
  return false;
}

// ---------------------------------------------------------------- the walk once the text is complete
// Once the walk reads no more text (the text bound is reached, or it is inside password-like or
// editable content), an element matters only when it may be listed or opens another tree (a shadow
// host, a frame). Every other element is descended into without reading its style ("unsettled"), and
// only its element children are visited. An element that matters gets the walk's full test; passing it
// implies that every ancestor passes it too (a box, or display:contents inside a rendered parent:
// checkVisibility sees all ancestors in its document, and a frame element is itself tested), and
// failing it skips the subtree as before. The unsettled ancestors are tested (`settled`) only where
// that implication does not help: a node past the depth bound cuts only under rendered ancestors.
// So a walk lists, reads and cuts exactly what a walk that styled every element would, at a cost of a
// few DOM reads per element and a style read per element that matters (docs/reader.md, "Performance").
// Tags that are listed without any attribute (HTML-AAM implicit roles that are interactive, headings,
// images); without attributes, `span`, `p` and `blockquote` have a role that is never listed and matter
// only as a possible closed shadow host, like custom elements.
const BARE_LISTED_TAGS = new Set(["button", "datalist", "h1", "h2", "h3", "h4", "h5", "h6", "img", "input",
  "meter", "option", "progress", "select", "summary", "textarea"]);
const SHADOW_SUSPECT_TAGS = new Set(["blockquote", "p", "span"]);
// Table parts whose role depends on their table (a grid's cells are gridcells, a treegrid's rows are listed).
const GRID_PART_TAGS = new Set(["td", "tr"]);
const VALUE_CONTEXT_TAGS = new Set(["textarea", "select", "input", "option", "optgroup", "datalist", "object",
  "embed", "canvas"]);
// Whether the full test of `el` is needed: it may be listed, or it opens another tree. Exactly the
// walk's own criteria (isInteractive, isNotable, closedShadowSuspect), short-cut for an element without
// attributes, whose role is its tag's implicit role. `editable` is the element's isContentEditable, read
// by the caller (a walk: FROZEN is set); it is kept wherever the tests below would read it again.
function mustSettle(el, tag, elements, editable) {
  if (tag === "iframe" || tag === "frame" || openRootOf(el, tag)) return true;
  if (!elements) return false;
  if (editable) {
    FROZEN.editable.set(el, true);
    if (isEditingHost(el)) return true;
  }
  const attrs = el.hasAttributes();
  if (attrs || BARE_LISTED_TAGS.has(tag) || GRID_PART_TAGS.has(tag)) {
    FROZEN.editable.set(el, editable);
    const role = roleOf(el) || "";
    return isInteractive(el, tag, role) || isNotable(el, tag, role) || mayHideShadow(el, tag) ||
      pointerCandidate(el, tag, attrs);
  }
  return ((SHADOW_SUSPECT_TAGS.has(tag) || tag.includes("-")) && mayHideShadow(el, tag)) ||
    pointerCandidate(el, tag, false);
}
// Whether every unsettled element on the walk's path (`pending`: {el, up, ok}, innermost first) passes
// the walk's descent test: it has a box or is `display:contents` inside a rendered parent.
function settled(pending) {
  const open = [];
  for (let q = pending; q && q.ok === undefined; q = q.up) open.push(q);
  let ok = !open.length || !open[open.length - 1].up || open[open.length - 1].up.ok;
  for (let i = open.length - 1; i >= 0; i--) {
    if (ok) {
      const st = styleOf(open[i].el);
      ok = !!st && st.display !== "none" && isRendered(open[i].el);
    }
    open[i].ok = ok;
  }
  return !pending || pending.ok;
}
const NOTHING_TO_READ = { text: false, elements: false };


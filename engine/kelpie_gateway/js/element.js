// Kelpie fixed reader entry for the host extension `element`: the facts of one captured element (a ref of
// the gateway's latest snapshot), read from the registry without changing it. P: {key, handle}.
// Answers {tag, role, name, description?, type?, level?, states?, url?, box: {x, y, width, height},
// viewport: {width, height}, visible, hidden?: <why not>, attributes: [{name, value}], attributesCut?}
// or NODE_REPLACED (mayHaveCompleted:false) for a node that is gone.
// Value-free like every read: no `value` attribute (of any element), and on a text-entry control or an
// editing host no attribute whose name says value (`aria-valuenow`, `aria-valuetext`, `data-value`, …), no
// field content, no editable text (`name`/`description` follow the reader's accname rules, which never
// read a control's value). The host redacts URL-valued attributes and secret-named ones (docs/host.md
// "The read-only lane").
// P: {key, handle, node: true} answers the captured element itself (or the NODE_REPLACED refusal), for a
// host that evaluates without returnByValue to learn the element's DOM node (the accessibility read).

const ATTRIBUTES_MAX = 64;
const ATTRIBUTE_MAX = 500;
const VALUE_ATTRIBUTES = new Set(["value"]);

function description(el, name) {
  const refs = idRefs(el, "aria-describedby");
  let text = "";
  if (refs.length) {
    text = refs.map((r) => textAlt(r, { visited: new Set(), lb: true, hiddenRef: isHiddenForAria(r) })).join(" ");
  } else if (el.hasAttribute("aria-description")) {
    text = el.getAttribute("aria-description");
  } else if (el.hasAttribute("title")) {
    text = el.getAttribute("title");
  }
  text = flat(wellFormed(text));
  return text === name ? "" : text;
}

function valueBearing(name, el, tag, role) {
  if (VALUE_ATTRIBUTES.has(name)) return true;
  const entry = TEXT_ENTRY_ROLES.has(role) || tag === "input" || tag === "textarea" || tag === "select" ||
    isEditingHost(el);
  return entry && name.includes("value");
}

function hiddenBecause(el) {
  const st = styleOf(el);
  if (!st || !isRendered(el)) return "not-rendered";
  if (st.visibility !== "visible") return "visibility-hidden";
  const r = el.getBoundingClientRect();
  if (!(r.width > 0 && r.height > 0) && st.display !== "contents") return "zero-size";
  if (ariaHiddenTree(el)) return "aria-hidden";
  return null;
}

async function main(P) {
  const el = lookup(P.handle);
  if (!el) return fail("NODE_REPLACED", "the element was replaced or removed since the snapshot; take a new snapshot", false);
  if (P.node === true) return el;
  return frozen(() => {
    const tag = tagOf(el);
    const role = roleOf(el) || "";
    const info = { el, tag, role, interactive: isInteractive(el, tag, role), notable: false, unreadable: null };
    const flags = { truncated: false };
    const d = describe(info, flags);
    const out = { tag: d.tag, role: d.role, name: d.label || d.text || "" };
    const desc = cutUnits(description(el, out.name), LABEL_MAX);
    if (desc.text) out.description = desc.text;
    for (const key of ["type", "level", "states", "url"]) if (d[key] !== undefined) out[key] = d[key];
    const r = el.getBoundingClientRect();
    const round = (v) => Math.round(v * 100) / 100;
    out.box = { x: round(r.x), y: round(r.y), width: round(r.width), height: round(r.height) };
    const view = viewOf(el.ownerDocument) || window;
    out.viewport = { width: view.innerWidth, height: view.innerHeight };
    const why = hiddenBecause(el);
    out.visible = why === null;
    if (why !== null) out.hidden = why;
    if (d.frame) out.frame = true;
    if (d.shadow) out.shadow = true;
    const attributes = [];
    let cut = flags.truncated || desc.cut;
    for (const a of Array.from(el.attributes)) {
      if (valueBearing(a.name.toLowerCase(), el, tag, role)) continue;
      if (attributes.length >= ATTRIBUTES_MAX) { cut = true; break; }
      const name = cutUnits(wellFormed(a.name), 128);
      const value = cutUnits(wellFormed(a.value), ATTRIBUTE_MAX);
      if (name.cut || value.cut) cut = true;
      attributes.push({ name: name.text, value: value.text });
    }
    out.attributes = attributes;
    out.truncated = cut;
    return out;
  });
}

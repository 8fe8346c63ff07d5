// ---------------------------------------------------------------- roles
const VALID_ROLES = new Set(("alert alertdialog application article associationlist associationlistitemkey " +
  "associationlistitemvalue banner blockquote button caption cell checkbox comment sectionfooter sectionheader " +
  "code columnheader combobox complementary contentinfo definition deletion dialog directory document emphasis " +
  "feed figure form generic grid gridcell group heading img image insertion link list listbox listitem log main " +
  "mark marquee math menu menubar menuitem menuitemcheckbox menuitemradio meter navigation none note option " +
  "paragraph presentation progressbar radio radiogroup region row rowgroup rowheader scrollbar search searchbox " +
  "separator slider spinbutton status strong subscript superscript switch tab table tablist tabpanel term " +
  "textbox time timer toolbar tooltip tree treegrid treeitem").split(" "));
const GLOBAL_ARIA = ["aria-label", "aria-labelledby", "aria-describedby", "aria-details", "aria-owns",
  "aria-controls", "aria-live", "aria-keyshortcuts", "aria-roledescription", "aria-errormessage"];
const INPUT_ROLES = { button: "button", image: "button", reset: "button", submit: "button", checkbox: "checkbox",
  radio: "radio", range: "slider", number: "spinbutton", file: "button", color: "button" };
const TEXT_INPUT_TYPES = new Set(["", "text", "search", "url", "tel", "email", "password"]);

function inputType(el) {
  return String(el.type || "text").toLowerCase(); // the IDL attribute: unknown types read as "text"
}
function isFocusable(el) {
  if (el.hasAttribute("tabindex")) return true;
  const t = tagOf(el);
  if (["button", "select", "textarea"].includes(t)) return !el.disabled;
  if (t === "input") return inputType(el) !== "hidden" && !el.disabled;
  if ((t === "a" || t === "area") && el.hasAttribute("href")) return true;
  return isEditingHost(el);
}
function landmarkScoped(el) {
  for (let e = flatParent(el); e; e = flatParent(e)) {
    const t = tagOf(e);
    if (["article", "aside", "main", "nav", "section"].includes(t)) return true;
    const r = (e.getAttribute && e.getAttribute("role")) || "";
    if (/\b(article|complementary|main|navigation|region)\b/.test(r)) return true;
  }
  return false;
}
function implicitRole(el) {
  if (!isHTML(el)) {
    const t = tagOf(el);
    if (t === "svg") return "img";
    if (t === "a" && (el.hasAttribute("href") || el.hasAttribute("xlink:href"))) return "link";
    return null;
  }
  const t = tagOf(el);
  if (isEditingHost(el) && !["input", "textarea", "select", "button"].includes(t)) return "textbox";
  switch (t) {
    case "a": return el.hasAttribute("href") ? "link" : "generic";
    case "area": return el.hasAttribute("href") ? "link" : null;
    case "article": return "article";
    case "aside": return "complementary";
    case "b": case "bdi": case "bdo": case "data": case "div": case "i": case "pre": case "q": case "samp":
    case "small": case "span": case "u": case "body": return "generic";
    case "blockquote": return "blockquote";
    case "button": return "button";
    case "caption": return "caption";
    case "code": return "code";
    case "datalist": return "listbox";
    case "dd": return "definition";
    case "del": case "s": return "deletion";
    case "details": return "group";
    case "dfn": case "dt": return "term";
    case "dialog": return "dialog";
    case "em": return "emphasis";
    case "fieldset": case "optgroup": case "address": case "hgroup": return "group";
    case "figure": return "figure";
    case "footer": return landmarkScoped(el) ? "generic" : "contentinfo";
    case "header": return landmarkScoped(el) ? "generic" : "banner";
    case "form": return "form";
    case "h1": case "h2": case "h3": case "h4": case "h5": case "h6": return "heading";
    case "hr": return "separator";
    case "html": return "document";
    case "img": {
      const alt = el.getAttribute("alt");
      if (alt === "" && !el.hasAttribute("title") && !GLOBAL_ARIA.some((a) => el.hasAttribute(a)) && !isFocusable(el)) {
        return "presentation";
      }
      return "img";
    }
    case "input": {
      const type = inputType(el);
      if (type === "hidden") return null;
      if (INPUT_ROLES[type]) return INPUT_ROLES[type];
      const list = el.hasAttribute("list");
      if (type === "search") return list ? "combobox" : "searchbox";
      if (TEXT_INPUT_TYPES.has(type)) return list ? "combobox" : "textbox";
      return "textbox"; // date, time, month, week, datetime-local: a text field with a `type` hint (§9 v1.1)
    }
    case "ins": return "insertion";
    case "li": return "listitem";
    case "main": return "main";
    case "mark": return "mark";
    case "math": return "math";
    case "menu": case "ol": case "ul": return "list";
    case "meter": return "meter";
    case "nav": return "navigation";
    case "option": return "option";
    case "output": return "status";
    case "p": return "paragraph";
    case "progress": return "progressbar";
    case "search": return "search";
    case "section": return (el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby") || el.hasAttribute("title")) ? "region" : "generic";
    case "select": return (el.multiple || el.size > 1) ? "listbox" : "combobox";
    case "strong": return "strong";
    case "sub": return "subscript";
    case "sup": return "superscript";
    case "summary": return "button";
    case "svg": return "img";
    case "table": return "table";
    case "tbody": case "thead": case "tfoot": return "rowgroup";
    case "td": return gridTableRole(el) ? "gridcell" : "cell"; // HTML-AAM: a td of a grid/treegrid table
    case "th": return (el.getAttribute("scope") || "").toLowerCase() === "row" ? "rowheader" : "columnheader";
    case "textarea": return "textbox";
    case "time": return "time";
    case "tr": return "row";
    default:
      if (isEditingHost(el)) return "textbox";
      return null;
  }
}
// The role of the table element a table part (`td`, `th`, `tr`) belongs to when that table is exposed as
// a grid or treegrid (HTML-AAM maps its cells to gridcell), else null. Kept per table for the run.
const gridTableCache = new Map();
function gridTableRole(el) {
  const table = el.closest("table");
  if (!table) return null;
  let r = gridTableCache.get(table);
  if (r === undefined) {
    const role = roleOf(table);
    r = role === "grid" || role === "treegrid" ? role : null;
    gridTableCache.set(table, r);
  }
  return r;
}
// Whether a `row` belongs to a treegrid (ARIA: a treegrid's rows are focusable widgets, §9 v1.2): the
// nearest ancestor that is a grid, treegrid or table decides.
function inTreegrid(el) {
  if (tagOf(el) === "tr") return gridTableRole(el) === "treegrid";
  for (let e = el.parentElement; e; e = e.parentElement) {
    const r = roleOf(e);
    if (r === "treegrid") return true;
    if (r === "grid" || r === "table") return false;
  }
  return false;
}
const roleCache = new Map();
function roleOf(el) {
  let r = roleCache.get(el);
  if (r !== undefined) return r;
  r = null;
  const attr = el.getAttribute && el.getAttribute("role");
  if (attr) {
    for (const tok of attr.trim().toLowerCase().split(ASCII_WS)) {
      if (!VALID_ROLES.has(tok)) continue;
      if ((tok === "none" || tok === "presentation") && (isFocusable(el) || GLOBAL_ARIA.some((a) => el.hasAttribute(a)))) {
        continue; // presentational-role conflict resolution: the implicit role wins
      }
      r = tok === "image" ? "img" : tok;
      break;
    }
  }
  if (r === null) r = implicitRole(el);
  if (r === null && isEditingHost(el)) r = "textbox";
  roleCache.set(el, r);
  return r;
}


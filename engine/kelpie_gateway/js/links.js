// Kelpie fixed reader entry for the host extension `links`: the links of the document(s) as tab.snapshot
// sees them — the same walk (open shadow trees, same-origin frames, only what is rendered and visible),
// the same accessible name (value-free) and the same resolved `url` as a snapshot's link elements.
// P: {offset, limit}. Answers {url, title, total, truncated, links: [{text, url?, tag, states?, frame?,
// shadow?}]} for links offset … offset+limit-1 in page order; `total` counts every link listed (at most
// LINKS_MAX; `truncated` when the walk or that bound cut the list, or a name was cut). Registry-free:
// nothing is kept, nothing installed.

const LINKS_MAX = 10000;

async function main(P) {
  return frozen(() => {
    const found = [];
    let over = false;
    const walkCut = walkDocument(document, {
      text: () => {},
      block: () => {},
      space: () => {},
      newline: () => {},
      full: () => true,
      element: (el, info) => {
        if (info.role !== "link" && linkUrl(el, info.tag) === null) return;
        if (found.length >= LINKS_MAX) { over = true; return; }
        info.el = el;
        found.push(info);
      },
    }, null, true);
    const flags = { truncated: walkCut || over };
    const links = found.slice(P.offset, P.offset + P.limit).map((info) => {
      const d = describe(info, flags);
      const out = { text: d.label || d.text || "", tag: d.tag };
      if (d.url !== undefined) out.url = d.url;
      if (d.states) out.states = d.states;
      if (d.frame) out.frame = true;
      if (d.shadow) out.shadow = true;
      return out;
    });
    const url = cutUnits(wellFormed(String(document.location ? document.location.href : document.URL)), URL_MAX).text;
    const title = cutUnits(wellFormed(flat(document.title || "")), TITLE_MAX).text;
    return { url, title, total: found.length, truncated: flags.truncated, links };
  });
}

// Kelpie fixed reader entry for the host extension `wait_for_text`: whether P.text appears in the page's
// visible text exactly as tab.snapshot reads it (same walk: open shadow trees, same-origin frames, no
// hidden text). Value-free: text inside inputs, textareas, selects and contenteditable content is never
// searched, so the answer cannot reveal what a field holds. White-space runs compare as one space;
// the comparison is case-sensitive. Answers {found: bool}.

const FIND_TEXT_MAX = 2000000; // UTF-16 units of page text searched (a bound for pathological pages)

async function main(P) {
  const sink = makeTextSink(FIND_TEXT_MAX);
  walkDocument(document, {
    text: (d, pre) => sink.text(d, pre),
    block: () => sink.block(),
    space: () => sink.space(),
    newline: () => sink.newline(),
    full: () => sink.full(),
    element: () => {},
  });
  const wanted = flat(wellFormed(P.text));
  return { found: wanted.length > 0 && flat(sink.result().text).includes(wanted) };
}

// Kelpie fixed reader: shared core (contract §8-§9). Committed source; the runnable scripts are assembled
// by kelpie_gateway.reader (tools/gen_reader.py writes the same bundles to build/generated/js/).
//
// This file is the body of `async function kelpieReader(P) { … }`; P holds JSON-decoded parameters.
// Nothing here may throw out of the bundle: every entry point is wrapped by `guard` in the prelude.
// Value-free: no code path reads `.value` of a text field, select or contenteditable content.

const LABEL_MAX = 500; // UTF-16 units per element label; longer labels are cut (and truncated:true)
const TAG_MAX = 128; // a page can make element names arbitrarily long (custom elements); cut (truncated:true)
const TITLE_MAX = 2000;
const URL_MAX = 8192;
const DEPTH_MAX = 1500; // deeper trees are cut (and truncated:true) instead of overflowing the stack
const ASCII_WS = /[\t\n\f\r ]+/g;

// ---------------------------------------------------------------- strings
function wellFormed(s) {
  s = String(s);
  if (typeof s.toWellFormed === "function") return s.toWellFormed();
  return s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}
function flat(s) {
  // wpt's rule: runs of ASCII whitespace become one space, then the ends are trimmed. U+00A0 is kept.
  return String(s).replace(ASCII_WS, " ").replace(/^ /, "").replace(/ $/, "");
}
// Cut `s` (well-formed) to at most n UTF-16 units without splitting a surrogate pair.
function cutUnits(s, n) {
  if (s.length <= n) return { text: s, cut: false };
  let end = n;
  if (end > 0) {
    const c = s.charCodeAt(end - 1);
    if (c >= 0xd800 && c <= 0xdbff) end -= 1;
  }
  return { text: s.slice(0, end), cut: true };
}
function codePoints(s) {
  let n = 0;
  for (const _ of s) n += 1;
  return n;
}


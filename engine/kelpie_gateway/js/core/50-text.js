// Text accumulator: collapses white space like rendering does, bounded by maxChars UTF-16 units.
function makeTextSink(maxChars) {
  const out = [];
  let len = 0;
  let pend = 0; // 0 nothing, 1 space, 2 newline
  let started = false;
  let cut = false;
  const push = (s) => {
    if (cut) return;
    if (started && pend) {
      const sep = pend === 2 ? "\n" : " ";
      out.push(sep);
      len += 1;
    }
    pend = 0;
    started = true;
    out.push(s);
    len += s.length;
    if (len > maxChars) cut = true;
  };
  return {
    text(data, pre) {
      if (cut) return;
      data = wellFormed(data);
      const lines = pre ? data.split(/\r\n|\r|\n/) : [data];
      lines.forEach((line, i) => {
        if (i > 0) pend = 2;
        const lead = /^[\t\n\f\r ]/.test(line);
        const core = line.replace(ASCII_WS, " ").trim();
        if (lead && pend < 1) pend = 1;
        if (core) push(core);
        if (/[\t\n\f\r ]$/.test(line) && pend < 1) pend = 1;
      });
    },
    block() { if (pend < 2) pend = 2; },
    space() { if (pend < 1) pend = 1; },
    newline() { if (pend < 2) pend = 2; },
    full() { return cut; },
    // Where a hosted frame's text goes (core/80-frames.js): a block boundary before and after it, as the
    // inline walk's <html>/<body> blocks make; answers the position in the raw text.
    mark() {
      if (pend < 2) pend = 2;
      return len;
    },
    // The text cut to maxChars (never inside a pair) and whether anything was cut.
    result() {
      const r = cutUnits(out.join(""), maxChars);
      return { text: r.text, cut: r.cut || cut };
    },
    // Everything collected (it may run past maxChars by one piece) and whether more text was left.
    raw() { return { text: out.join(""), cut }; },
  };
}


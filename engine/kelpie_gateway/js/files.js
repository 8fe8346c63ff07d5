// Kelpie captured-node reads for the host's file extensions (docs/host.md "Files"): P.op says which.
//
// "upload-target" (upload_file, before anything happens): what the captured node is — {kind:"file-input",
//   multiple} for an <input type=file>, else {kind:"other"} (a button or label whose click opens a chooser).
//   Refused before any event, mayHaveCompleted:false: a gone node (NODE_REPLACED); a disabled target as
//   tab.click defines it (NOT_ACTIONABLE).
// "upload-files" (upload_file, afterwards): after one turn of the page's event loop (its change handlers
//   ran), the names of the files the captured <input type=file> holds: {files:[names]} — names only,
//   never contents; NODE_REPLACED (mayHaveCompleted:true) when the page removed the input meanwhile.
// "box" (screenshot of an element): the captured node's border box in CSS pixels of the top document
//   (page coordinates: scrolled offsets included, same-origin frames' offsets added), and the device pixel
//   ratio: {x, y, width, height, devicePixelRatio}. NODE_REPLACED for a gone node.

function topBox(el) {
  const r = el.getBoundingClientRect();
  let x = r.left;
  let y = r.top;
  let view = el.ownerDocument.defaultView;
  for (let hops = 0; view && view.frameElement && hops < 64; hops++) {
    const frame = view.frameElement;
    const fr = frame.getBoundingClientRect();
    x += fr.left + frame.clientLeft;
    y += fr.top + frame.clientTop;
    view = frame.ownerDocument.defaultView;
  }
  const top = view || window;
  return { x: x + top.scrollX, y: y + top.scrollY, width: r.width, height: r.height, devicePixelRatio: top.devicePixelRatio || 1 };
}

function isFileInput(el) {
  return isHTML(el) && tagOf(el) === "input" && String(el.type).toLowerCase() === "file";
}

async function main(P) {
  const el = lookup(P.handle);
  if (P.op === "upload-files") {
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (!el || !isLive(el)) return fail("NODE_REPLACED", "the page removed the file input as the files were chosen; observe before acting", true);
    const names = [];
    const files = isFileInput(el) ? el.files : null;
    for (let i = 0; files && i < files.length && i < 64; i++) names.push(wellFormed(String(files[i].name)).slice(0, 255));
    return { files: names };
  }
  if (!el) return fail("NODE_REPLACED", "the element was replaced or removed since the snapshot; take a new snapshot", false);
  if (P.op === "box") return topBox(el);
  if (isDisabled(el)) return fail("NOT_ACTIONABLE", "the element is disabled (or inert); no file was chosen", false);
  if (isFileInput(el)) return { kind: "file-input", multiple: !!el.multiple };
  return { kind: "other" };
}

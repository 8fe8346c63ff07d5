// ---------------------------------------------------------------- registry of observed nodes
// Kept in this world's global under the per-gateway key; cleared on pagehide, popstate and hashchange so
// that no history traversal (including a back/forward-cache restore) can revive a handle.
const REGISTRY_SLOT = "__kelpieReader_" + P.key;

function registry(create) {
  let reg = globalThis[REGISTRY_SLOT];
  if (reg || !create) return reg || null;
  const bytes = new Uint8Array(8);
  crypto.getRandomValues(bytes);
  reg = { nonce: Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(""), counter: 0, nodes: new Map(), snaps: 0, snap: null };
  Object.defineProperty(globalThis, REGISTRY_SLOT, { value: reg, enumerable: false, configurable: false, writable: false });
  const clear = () => {
    reg.nodes.clear();
    if (reg.snap && reg.snap.observer) reg.snap.observer.disconnect();
    reg.snap = null; // a history traversal also ends the kept read: its cursor is stale
  };
  for (const type of ["pagehide", "popstate", "hashchange"]) window.addEventListener(type, clear, true);
  return reg;
}

// A captured node is live when it is still connected and every document between it and this world's
// document is still the active document of its (connected) frame element.
function isLive(el) {
  if (!el || !el.isConnected) return false;
  let doc = el.ownerDocument;
  for (let hops = 0; doc !== document; hops++) {
    const view = doc && doc.defaultView;
    const frame = view && view.frameElement;
    if (!frame || !frame.isConnected || hops > 64) return false;
    let active = null;
    try {
      active = frame.contentDocument;
    } catch (e) {
      active = null;
    }
    if (active !== doc) return false;
    doc = frame.ownerDocument;
  }
  return !!document.defaultView;
}

function lookup(handle) {
  const reg = registry(false);
  const el = reg ? reg.nodes.get(handle) : null;
  return el && isLive(el) ? el : null;
}

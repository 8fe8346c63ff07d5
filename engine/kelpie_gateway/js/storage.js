// Kelpie fixed reader entry for the host extension `storage`: what the document's origin keeps, never a
// value. P: {maxKeys}. Answers {origin, localStorage, sessionStorage, indexedDB} where each storage area is
// {count, keys: [{key, size}], truncated} (size: the value's length in UTF-16 code units, read here and
// never returned; keys in the area's order, each cut at 200 units, at most maxKeys) or {unavailable:
// <reason>} (a document whose origin has no storage: opaque, sandboxed, denied), and indexedDB is
// {databases: [{name, version}]} or {unavailable}. Only the main document's origin (frames of other
// origins keep their own storage).

const KEY_MAX = 200;

function area(getStore, maxKeys) {
  let store;
  try {
    store = getStore();
  } catch (e) {
    return { unavailable: wellFormed(e && e.name ? e.name : "denied") };
  }
  if (!store) return { unavailable: "none" };
  const count = store.length;
  const keys = [];
  let truncated = false;
  for (let i = 0; i < count; i++) {
    if (keys.length >= maxKeys) { truncated = true; break; }
    const key = store.key(i);
    if (key === null) continue;
    const item = store.getItem(key);
    const cut = cutUnits(wellFormed(key), KEY_MAX);
    if (cut.cut) truncated = true;
    keys.push({ key: cut.text, size: item === null ? 0 : item.length });
  }
  return { count, keys, truncated };
}

async function databases() {
  try {
    if (!globalThis.indexedDB || typeof indexedDB.databases !== "function") return { unavailable: "none" };
    const list = await indexedDB.databases();
    return { databases: list.slice(0, 1000).map((d) => ({ name: cutUnits(wellFormed(d.name || ""), KEY_MAX).text, version: d.version })) };
  } catch (e) {
    return { unavailable: wellFormed(e && e.name ? e.name : "denied") };
  }
}

async function main(P) {
  const origin = wellFormed(String(location.origin));
  return {
    origin,
    localStorage: area(() => globalThis.localStorage, P.maxKeys),
    sessionStorage: area(() => globalThis.sessionStorage, P.maxKeys),
    indexedDB: await databases(),
  };
}

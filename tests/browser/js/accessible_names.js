// Test-only entry (never used by the gateway): the accessible name, as the reader computes it for
// `label`, of the element each CSS selector in P.selectors matches (null when none matches).
async function main(P) {
  return P.selectors.map((sel) => {
    const el = document.querySelector(sel);
    return el ? wellFormed(accessibleName(el)) : null;
  });
}

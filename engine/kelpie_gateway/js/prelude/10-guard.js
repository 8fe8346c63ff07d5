// Kelpie fixed reader: prelude shared by every bundle (contract §9).
// P = parameters decoded from a JSON literal by the generator: {key?, handle?, text?, maxChars?, maxElements?,
// scope?, cursor?, part?, frames?} (`part`, `frames`: a host reading frames, core/80-frames.js).

const STATE = { effect: false }; // set once a captured-node action may have had an effect (focus, events)

function fail(code, message, mayHaveCompleted) {
  return { error: { code, message: String(message).slice(0, 500) }, mayHaveCompleted: !!mayHaveCompleted };
}

async function guard(main) {
  try {
    return await main(P);
  } catch (e) {
    let message = "reader failed";
    try {
      message = wellFormed(e && e.message ? e.message : String(e));
    } catch (_ignored) {
      // keep the generic message
    }
    return fail("RENDERER_FAILED", message, STATE.effect);
  }
}


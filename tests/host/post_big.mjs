// Node 20's built-in fetch (undici) posting an over-limit body, as an ordinary client would.
// usage: node post_big.mjs URL TOKEN BYTES TRIES  -> prints one JSON line: [{status, code} | {error}, ...]
const [url, token, bytes, tries] = process.argv.slice(2);
const body = Buffer.alloc(Number(bytes), 0x20);
const results = [];
for (let i = 0; i < Number(tries); i++) {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body,
    });
    const envelope = await response.json();
    results.push({ status: response.status, code: envelope?.error?.code ?? null });
  } catch (error) {
    results.push({ error: `${error.name}: ${error.cause?.code ?? error.message}` });
  }
}
console.log(JSON.stringify(results));

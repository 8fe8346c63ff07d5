// MCP journey with the official TypeScript SDK over Streamable HTTP against a running Kelpie reference host
// (started with --approve-pairing auto on the fixture site).
//
//   node tools/node/mcp-journey.mjs --url http://127.0.0.1:PORT --site http://127.0.0.1:SITEPORT \
//        [--sdk v1|v2] [--mode legacy|auto|2026-07-28]
//
// --sdk v1 (default): @modelcontextprotocol/sdk 1.x, which only knows the initialize handshake.
// --sdk v2: @modelcontextprotocol/client 2.x with versionNegotiation {mode: "legacy" | "auto" | {pin: VERSION}};
// --mode (default legacy) is that mode, and "expect" below is the revision the connection must settle on.
//
// Prints one JSON line per step ({"step", "ok", ...}) and exits 0 when every step behaved as the contract
// says, 1 otherwise. The bearer token is never printed.
const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, value, i, all) => (i % 2 === 0 ? [...pairs, [value.replace(/^--/, ""), all[i + 1]]] : pairs), []),
);
const base = String(args.url || "").replace(/\/$/, "");
const site = String(args.site || "").replace(/\/$/, "");
const sdk = String(args.sdk || "v1");
const mode = String(args.mode || "legacy");
if (!base || !site || !["v1", "v2"].includes(sdk) || (sdk === "v1" && mode !== "legacy")) {
  console.error("usage: mcp-journey.mjs --url HOST_URL --site SITE_URL [--sdk v1|v2] [--mode legacy|auto|2026-07-28]");
  process.exit(2);
}
const { Client, StreamableHTTPClientTransport } =
  sdk === "v1"
    ? {
        ...(await import("@modelcontextprotocol/sdk/client/index.js")),
        ...(await import("@modelcontextprotocol/sdk/client/streamableHttp.js")),
      }
    : await import("@modelcontextprotocol/client");
const MODERN = "2026-07-28";
const expectEra = mode === "legacy" ? "legacy" : "modern";

let failed = false;
function report(step, ok, extra = {}) {
  console.log(JSON.stringify({ step, ok, ...extra }));
  if (!ok) failed = true;
}
function check(cond, message) {
  if (!cond) throw new Error(message);
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function pair() {
  const response = await fetch(`${base}/v1/pair`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ client: "kelpie-ts-journey" }),
  });
  check(response.status === 200, `pairing answered HTTP ${response.status}`);
  const body = await response.json();
  check(typeof body.token === "string" && body.token.length >= 43, "no 256-bit token");
  return body.token;
}

async function connect(token) {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const info = { name: "kelpie-ts-journey", version: "0.1.0" };
  const client =
    sdk === "v1"
      ? new Client(info)
      : new Client(info, { versionNegotiation: { mode: mode === "legacy" || mode === "auto" ? mode : { pin: mode } } });
  await client.connect(transport);
  return { client, transport };
}
// The revision the connection settled on: v1 only knows the handshake (it sends no discover), v2 says.
function negotiated(client) {
  if (sdk === "v1") return { era: "legacy", version: client.transport?.protocolVersion ?? "handshake" };
  return { era: client.getProtocolEra(), version: client.getNegotiatedProtocolVersion() };
}

async function bc(client, method, params) {
  const result = await client.callTool({ name: "kelpie_browser_control", arguments: { method, params } });
  const envelope = result.structuredContent;
  check(envelope && typeof envelope === "object", `${method}: no structuredContent`);
  const text = result.content.find((block) => block.type === "text");
  check(text && JSON.stringify(JSON.parse(text.text)) === JSON.stringify(envelope), `${method}: text block != structuredContent`);
  check(Boolean(result.isError) === !envelope.success, `${method}: isError disagrees with the envelope`);
  return envelope;
}
// A client may retry exactly the refusals that are retryable AND guarantee nothing happened (BUSY, or a
// read discarded as RENDERER_CHANGED when a navigation event lands mid-read); never an unknown outcome.
async function ok(client, method, params) {
  let envelope = await bc(client, method, params);
  for (let attempt = 0; attempt < 5 && !envelope.success && envelope.error.retryable && !envelope.mayHaveCompleted; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    envelope = await bc(client, method, params);
  }
  check(envelope.success, `${method} failed: ${JSON.stringify(envelope.error)}`);
  return envelope.result;
}
async function ext(client, name, args) {
  const result = await client.callTool({ name: "kelpie_extension", arguments: { name, arguments: args } });
  return result.structuredContent;
}
function element(snapshot, tag, label) {
  const found = snapshot.elements.find((e) => e.tag === tag && String(e.label || "").toLowerCase().includes(label.toLowerCase()));
  check(found, `no <${tag}> labelled ${label}`);
  return found;
}
async function openTab(client, page) {
  return (await ok(client, "tabs.open", { url: `${site}/${page}` })).tabId;
}

async function step(name, fn) {
  try {
    const extra = (await fn()) || {};
    report(name, true, extra);
  } catch (error) {
    report(name, false, { error: String(error && error.message ? error.message : error) });
  }
}

let token;
let client;
await step("pair", async () => {
  token = await pair();
});
await step("connect", async () => {
  ({ client } = await connect(token));
  const server = client.getServerVersion();
  check(server && server.name === "kelpie-browser-gateway", `serverInfo: ${JSON.stringify(server)}`);
  const settled = negotiated(client);
  check(settled.era === expectEra, `settled on ${JSON.stringify(settled)}, expected the ${expectEra} era`);
  if (expectEra === "modern") check(settled.version === MODERN, `negotiated ${settled.version}`);
  return { server: server.name, ...settled };
});
await step("tools/list", async () => {
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  check(names.includes("kelpie_browser_control"), "kelpie_browser_control missing");
  return { tools: names };
});

let clickTab;
let clickRef;
await step("snapshot+click", async () => {
  clickTab = await openTab(client, "click.html");
  const snap = await ok(client, "tab.snapshot", { tabId: clickTab });
  check(!JSON.stringify(snap).includes("handle"), "a renderer handle leaked");
  clickRef = element(snap, "button", "Increment").ref;
  const clicked = await ok(client, "tab.click", { tabId: clickTab, ref: clickRef });
  check(clicked.clicked === true, "not clicked");
  const after = await ok(client, "tab.snapshot", { tabId: clickTab });
  check(after.text.includes("Clicked 1 times"), "no page effect");
  clickRef = element(after, "button", "Increment").ref;
});

await step("type", async () => {
  const secret = "TypeScript was here ✓";
  const tab = await openTab(client, "form.html");
  const field = element(await ok(client, "tab.snapshot", { tabId: tab }), "input", "name");
  const typed = await ok(client, "tab.type", { tabId: tab, ref: field.ref, text: secret });
  check(typed.typed === [...secret].length, `typed ${typed.typed}`);
  const seen = await ok(client, "tab.snapshot", { tabId: tab });
  check(seen.text.includes(`Name has ${[...secret].length} characters`), "the page did not see the value");
  check(!JSON.stringify(seen).includes(secret), "the value leaked into the snapshot");
});

await step("cross-tab refusal", async () => {
  const other = await openTab(client, "click.html");
  await ok(client, "tab.snapshot", { tabId: other });
  const refused = await bc(client, "tab.click", { tabId: other, ref: clickRef });
  check(!refused.success && refused.error.code === "CROSS_TAB_REF" && refused.mayHaveCompleted === false, JSON.stringify(refused));
});

await step("stale-ref refusal", async () => {
  await ok(client, "tab.navigate", { tabId: clickTab, url: `${site}/second.html` });
  const refused = await bc(client, "tab.click", { tabId: clickTab, ref: clickRef });
  check(!refused.success && ["REFS_INVALIDATED", "STALE_SNAPSHOT", "TAB_STALE"].includes(refused.error.code), JSON.stringify(refused));
  check(refused.mayHaveCompleted === false, "stale ref must be refused before dispatch");
});

await step("BUSY under a concurrent call", async () => {
  const tab = await openTab(client, "slow.html?busy=2500");
  const button = element(await ok(client, "tab.snapshot", { tabId: tab }), "button", "Slow");
  const click = ok(client, "tab.click", { tabId: tab, ref: button.ref, timeoutMs: 20000 });
  await sleep(800);
  const busy = await bc(client, "tabs.list", {});
  check(!busy.success && busy.error.code === "BUSY" && busy.error.retryable === true, JSON.stringify(busy));
  check((await click).clicked === true, "the outstanding click did not complete");
});

await step("timed-out mutation", async () => {
  const tab = await openTab(client, "slow.html?busy=2000");
  const button = element(await ok(client, "tab.snapshot", { tabId: tab }), "button", "Slow");
  const timedOut = await bc(client, "tab.click", { tabId: tab, ref: button.ref, timeoutMs: 300 });
  check(!timedOut.success && timedOut.mayHaveCompleted === true && timedOut.error.code === "TIMEOUT", JSON.stringify(timedOut));
  // The late renderer reply retires the cancelled dispatch; until then the lane answers BUSY.
  for (let i = 0; i < 100; i++) {
    const probe = await bc(client, "tab.snapshot", { tabId: clickTab });
    if (probe.success) break;
    check(probe.error.code === "BUSY", JSON.stringify(probe));
    await sleep(100);
  }
  const again = await bc(client, "tab.navigate", { tabId: tab, url: `${site}/second.html` });
  check(!again.success && again.error.code === "RECONCILE_REQUIRED", JSON.stringify(again));
  const text = (await ok(client, "tab.snapshot", { tabId: tab })).text;
  check(text.includes("Slow effect count: 1"), "the effect did not land exactly once");
});

await step("screenshot", async () => {
  const result = await client.callTool({
    name: "kelpie_browser_control",
    arguments: { method: "tab.screenshot", params: { tabId: clickTab } },
  });
  const images = result.content.filter((block) => block.type === "image");
  check(images.length === 1 && images[0].mimeType === "image/png", "expected exactly one PNG image block");
  const png = Buffer.from(images[0].data, "base64");
  check(png.subarray(1, 4).toString() === "PNG", "not a PNG");
  check(result.structuredContent.result.imageBytes === png.length, "imageBytes mismatch");
  check(!JSON.stringify(result.structuredContent).includes(images[0].data), "base64 repeated");
  return { bytes: png.length };
});

await step("dialog while the click is outstanding", async () => {
  const tab = await openTab(client, "dialog.html");
  const button = element(await ok(client, "tab.snapshot", { tabId: tab }), "button", "confirmation");
  let settled = false;
  const click = bc(client, "tab.click", { tabId: tab, ref: button.ref, timeoutMs: 20000 }).finally(() => {
    settled = true;
  });
  let dialogs = [];
  for (let i = 0; i < 100 && dialogs.length === 0; i++) {
    const observed = await ext(client, "dialog_observe", { tabId: tab });
    check(observed.success, JSON.stringify(observed));
    dialogs = observed.result.dialogs;
    if (dialogs.length === 0) await sleep(100);
  }
  check(dialogs.length === 1 && dialogs[0].type === "confirm", JSON.stringify(dialogs));
  check(!settled, "the click finished before the dialog was handled");
  const accepted = await ext(client, "dialog_accept", { tabId: tab });
  check(accepted.success, JSON.stringify(accepted));
  const clicked = await click;
  check(clicked.success && clicked.result.clicked === true, JSON.stringify(clicked));
  const text = (await ok(client, "tab.snapshot", { tabId: tab })).text;
  check(text.includes("Answer: confirmed"), "the page did not see the accepted dialog");
});

await step("revoke", async () => {
  const response = await fetch(`${base}/v1/pair`, { method: "DELETE", headers: { Authorization: `Bearer ${token}` } });
  check(response.status === 200, `revoke answered ${response.status}`);
  const after = await fetch(`${base}/mcp`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "ping" }),
  });
  check(after.status === 401, `the revoked bearer got HTTP ${after.status}`);
  let refused = false;
  try {
    await client.callTool({ name: "kelpie_browser_control", arguments: { method: "tabs.list", params: {} } });
  } catch {
    refused = true;
  }
  check(refused, "the SDK client kept working with a revoked bearer");
});

try {
  await client?.close();
} catch {
  // the bearer is revoked: closing may fail, which is fine
}
process.exit(failed ? 1 : 0);

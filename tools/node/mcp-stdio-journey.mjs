// MCP journey with the official TypeScript SDK (@modelcontextprotocol/sdk) over its stdio transport: the SDK
// launches `kelpie-gateway mcp` itself, exactly as an MCP client configured with a command line does.
//
//   node tools/node/mcp-stdio-journey.mjs COMMAND [ARG…]      e.g. .venv/bin/kelpie-gateway mcp
//
// Prints one JSON line per step ({"step", "ok", ...}) and exits 0 when every step behaved as the contract
// says, 1 otherwise. The server's stderr (its log) is passed through to ours.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...commandArgs] = process.argv.slice(2);
if (!command) {
  console.error("usage: mcp-stdio-journey.mjs COMMAND [ARG…]");
  process.exit(2);
}

let failed = false;
function report(step, ok, extra = {}) {
  console.log(JSON.stringify({ step, ok, ...extra }));
  if (!ok) failed = true;
}
function check(cond, message) {
  if (!cond) throw new Error(message);
}

// Retries only what the contract says is safe: a retryable refusal where nothing happened.
async function bc(client, method, params) {
  for (let attempt = 0; ; attempt++) {
    const result = await client.callTool({ name: "kelpie_browser_control", arguments: { method, params } });
    const envelope = result.structuredContent;
    check(envelope && typeof envelope === "object", `${method}: no structuredContent`);
    if (envelope.success || !envelope.error.retryable || envelope.mayHaveCompleted || attempt >= 5) {
      return { envelope, result };
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
async function ok(client, method, params) {
  const { envelope } = await bc(client, method, params);
  check(envelope.success, `${method} failed: ${JSON.stringify(envelope.error)}`);
  return envelope.result;
}

async function step(name, fn) {
  try {
    const extra = (await fn()) || {};
    report(name, true, extra);
    return true;
  } catch (error) {
    report(name, false, { error: String(error && error.stack ? error.stack : error) });
    return false;
  }
}

const transport = new StdioClientTransport({ command, args: commandArgs, stderr: "inherit" });
const client = new Client({ name: "kelpie-ts-stdio-journey", version: "0.1.0" });
let tab = null;

const steps = [
  ["initialize", async () => {
    await client.connect(transport);
    const info = client.getServerVersion();
    check(info && info.name === "kelpie-browser-gateway", `serverInfo ${JSON.stringify(info)}`);
    return { server: `${info.name} ${info.version}` };
  }],
  ["tools/list", async () => {
    const tools = (await client.listTools()).tools.map((t) => t.name);
    check(tools.includes("kelpie_browser_control"), `tools ${tools}`);
    return { tools };
  }],
  ["tabs.list", async () => {
    const tabs = (await ok(client, "tabs.list", {})).tabs;
    const active = tabs.find((t) => t.active);
    check(active && active.title === "Kelpie fixture site", `tabs ${JSON.stringify(tabs)}`);
    tab = active.tabId;
    return { tab };
  }],
  ["snapshot+click", async () => {
    const snapshot = await ok(client, "tab.snapshot", { tabId: tab });
    const button = snapshot.elements.find((e) => e.tag === "button" && /increment/i.test(String(e.label)));
    check(button, "no Increment button");
    await ok(client, "tab.click", { tabId: tab, ref: button.ref });
    const after = await ok(client, "tab.snapshot", { tabId: tab });
    check(after.text.includes("Clicked 1 times"), "the click had no visible effect");
  }],
  ["screenshot", async () => {
    const { envelope, result } = await bc(client, "tab.screenshot", { tabId: tab });
    check(envelope.success, `screenshot failed: ${JSON.stringify(envelope.error)}`);
    const images = result.content.filter((block) => block.type === "image");
    check(images.length === 1 && images[0].mimeType === "image/png", "expected one PNG image block");
    return { width: envelope.result.width, height: envelope.result.height };
  }],
  ["close", async () => {
    await client.close();
  }],
];

for (const [name, fn] of steps) {
  if (!(await step(name, fn))) break;
}
if (failed) {
  await client.close().catch(() => {});
}
process.exit(failed ? 1 : 0);

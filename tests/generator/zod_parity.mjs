// Runs the generated Zod module over request cases and prints one verdict per case as JSON.
// usage: node zod_parity.mjs <kelpie_schema.mjs> <cases.json>   (cases.json: {"cases":[{name, request}]})
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [moduleFile, casesFile] = process.argv.slice(2);
const mod = await import(pathToFileURL(moduleFile).href);
const { cases } = JSON.parse(readFileSync(casesFile, "utf8"));
const out = cases.map((c) => {
  const v = mod.verdict(c.request);
  if (v.valid) return { name: c.name, valid: true, normalized: v.normalized };
  return { name: c.name, valid: false, issues: v.issues.slice(0, 3).map((i) => `${i.path.join("/")}: ${i.message}`) };
});
process.stdout.write(JSON.stringify(out));

// `npm run types:check` (CI): is worker-configuration.d.ts what `npm run types` generates now?
// Regenerates it in place and compares. (`wrangler types --check` ignores --env-file and reads
// .dev.vars instead, so its answer depends on whether a developer's .dev.vars exists.)
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";

const FILE = "worker-configuration.d.ts";
const before = readFileSync(FILE, "utf8");
execFileSync("npm", ["run", "--silent", "types"], { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
const after = readFileSync(FILE, "utf8");
if (after === before) {
  console.log(`${FILE} is current`);
} else {
  writeFileSync(FILE, before);
  console.error(`${FILE} is out of date: run \`npm run types\` and commit the result`);
  process.exit(1);
}

// `npm start`: serves the example application locally with `wrangler dev` on 127.0.0.1:8787,
// creating `.dev.vars` from `.dev.vars.example` on first run so the local API token is known.
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

if (!existsSync(".dev.vars")) {
  copyFileSync(".dev.vars.example", ".dev.vars");
  console.log("Created .dev.vars from .dev.vars.example (local development token).");
}
// Another config (`-c examples/…/wrangler.toml`) reads .dev.vars from its own folder: give it ours.
const config = process.argv.indexOf("-c") >= 0 ? process.argv[process.argv.indexOf("-c") + 1] : undefined;
if (config && !existsSync(join(dirname(config), ".dev.vars"))) copyFileSync(".dev.vars", join(dirname(config), ".dev.vars"));

const token = /^API_TOKEN=(.*)$/m.exec(readFileSync(".dev.vars", "utf8"))?.[1]?.trim();
const port = process.env.PORT ?? "8787";

console.log(`
Edge Streams (${config ?? "wrangler.toml"}) on http://127.0.0.1:${port}/
  status page: http://127.0.0.1:${port}/ (sign in with the API token; metrics at /metrics)
  API token (from .dev.vars): ${token ?? "(none set)"}
  try: curl -s -X POST http://127.0.0.1:${port}/topics/orders/records \\
         -H "Authorization: Bearer ${token ?? "<token>"}" -H "Content-Type: application/json" \\
         -d '{"records":[{"key":"alice","value":{"amount":12}}]}'
`);

const child = spawn("npx", ["wrangler", "dev", "--ip", "127.0.0.1", "--port", port, ...process.argv.slice(2)], {
  stdio: "inherit",
  env: { WRANGLER_SEND_METRICS: "false", ...process.env },
});
const stop = (signal) => child.kill(signal);
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

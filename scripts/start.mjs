// `npm start [-- --port N] [-- -c path/to/wrangler.toml]`: serves an example application locally
// with `wrangler dev` on 127.0.0.1 (port 8787 unless --port or PORT says otherwise), creating
// `.dev.vars` from `.dev.vars.example` on first run so the local API token is known.
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";

/** `--name value` or `--name=value` taken out of `args`; undefined when absent. */
function takeOption(args, ...names) {
  for (let i = 0; i < args.length; i++) {
    for (const name of names) {
      if (args[i] === name) return args.splice(i, 2)[1];
      if (args[i].startsWith(`${name}=`)) return args.splice(i, 1)[0].slice(name.length + 1);
    }
  }
  return undefined;
}

const args = process.argv.slice(2);
const port = takeOption(args, "--port") ?? process.env.PORT ?? "8787";
const config = takeOption(args, "-c", "--config");
if (!/^\d+$/.test(port)) {
  console.error(`--port takes a number, got ${JSON.stringify(port)}`);
  process.exit(2);
}

if (!existsSync(".dev.vars")) {
  copyFileSync(".dev.vars.example", ".dev.vars");
  console.log("Created .dev.vars from .dev.vars.example (local development token).");
}
// Another config (`-c examples/…/wrangler.toml`) reads .dev.vars from its own folder: give it ours.
if (config && !existsSync(join(dirname(config), ".dev.vars"))) copyFileSync(".dev.vars", join(dirname(config), ".dev.vars"));

const token = /^API_TOKEN=(.*)$/m.exec(readFileSync(".dev.vars", "utf8"))?.[1]?.trim() ?? "<token>";
const base = `http://127.0.0.1:${port}`;
const post = (topic, records) =>
  `curl -s -X POST ${base}/topics/${topic}/records -H "Authorization: Bearer ${token}" \\\n         -H "Content-Type: application/json" -d '${JSON.stringify({ records })}'`;
const get = (path) => `curl -s "${base}${path}" -H "Authorization: Bearer ${token}"`;

// What to try first, per example application; any other Worker gets the routes every app has.
const tries = {
  "wrangler.toml": [post("orders", [{ key: "alice", value: { amount: 12 } }]), get("/stores/totals/keys/alice")],
  "examples/page-views/wrangler.toml": [
    post("regions", [{ key: "eu", value: { name: "Europe" } }]),
    post("page-views", [{ key: "u1", value: { region: "eu", page: "/" } }]),
    get("/stores/views-per-minute/windows/eu"),
  ],
  "examples/shop/wrangler.toml": [
    post("products", [{ key: "tea", value: { name: "Green tea", category: "drinks", price: 450 } }]),
    post("customers", [{ key: "c1", value: { name: "Ada", city: "Paris" } }]),
    post("orders", [{ key: "o1", value: { customerId: "c1", productId: "tea", quantity: 2 } }]),
    get("/stores/category-totals/keys/drinks"),
  ],
  "examples/connectors/wrangler.toml": [
    `curl -s -X POST ${base}/demo/events -H "Authorization: Bearer ${token}" \\\n         -H "Content-Type: application/json" -d '${JSON.stringify({ events: [{ user: "ada", action: "buy", amount: 12 }] })}'`,
    get("/stores/activity/keys/ada"),
    get("/sinks"),
  ],
};
// The connectors example's webhook sink delivers to its own receiver (/demo/hook) on this port,
// unless a --var ACTIVITY_WEBHOOK_URL:… says where else.
const extraArgs =
  normalize(config ?? "") === "examples/connectors/wrangler.toml" && !args.some((arg) => arg.includes("ACTIVITY_WEBHOOK_URL"))
    ? ["--var", `ACTIVITY_WEBHOOK_URL:${base}/demo/hook`]
    : [];
const example = tries[normalize(config ?? "wrangler.toml")] ?? [get("/tasks")];

console.log(`
Edge Streams (${config ?? "wrangler.toml"}) on ${base}/
  status page: ${base}/ (sign in with the API token; metrics at /metrics)
  API token (from .dev.vars): ${token}
  local state: ${join(dirname(config ?? "wrangler.toml"), ".wrangler", "state")} (npm run reset deletes it)
  try:
    ${example.join("\n    ")}
`);

const child = spawn("npx", ["wrangler", "dev", "--ip", "127.0.0.1", "--port", port, ...(config ? ["-c", config] : []), ...extraArgs, ...args], {
  stdio: "inherit",
  env: { WRANGLER_SEND_METRICS: "false", ...process.env },
});
const stop = (signal) => child.kill(signal);
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

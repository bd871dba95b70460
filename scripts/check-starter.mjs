// `npm run test:starter` (and CI): proves the starter works as a user gets it. Packs the library
// (`npm pack`, which builds dist/), copies examples/starter to a temporary folder, installs the
// tarball there with the starter's other dependencies from the npm registry, and runs the
// starter's own type check (the shipped .d.ts against its generated Env), `npm test` and
// `wrangler deploy --dry-run`.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const work = mkdtempSync(join(tmpdir(), "edge-streams-starter-"));
const env = { ...process.env, WRANGLER_SEND_METRICS: "false" };
const run = (cwd, command, args) => {
  console.log(`$ (${cwd === root ? "." : cwd}) ${command} ${args.join(" ")}`);
  execFileSync(command, args, { cwd, stdio: "inherit", env });
};

try {
  run(root, "npm", ["pack", "--silent", "--pack-destination", work]);
  const tarball = join(work, `edge-streams-${JSON.parse(execFileSync("npm", ["pkg", "get", "version"], { cwd: root }).toString())}.tgz`);
  if (!existsSync(tarball)) throw new Error(`npm pack made no ${tarball}`);
  const starter = join(work, "starter");
  cpSync(join(root, "examples/starter"), starter, { recursive: true, filter: (path) => !/node_modules|\.wrangler/.test(path) });
  run(starter, "npm", ["install", "--no-audit", "--no-fund", "--save", tarball]);
  run(starter, "npm", ["run", "typecheck"]);
  run(starter, "npm", ["test"]);
  run(starter, "npx", ["wrangler", "deploy", "--dry-run", "--outdir", "dist"]);
  if (!existsSync(join(starter, "dist/index.js"))) throw new Error("the starter's dry run bundled nothing");
  console.log("starter: installed from the packed library, tests passed, deploy dry run bundled");
} finally {
  if (!process.env.KEEP_STARTER) rmSync(work, { recursive: true, force: true });
}

// `npm run test:starter` (and CI): the first-application path exactly as the README gives it, from
// this checkout. `npm run create-app -- <temp>/my-app` (packs the library into a new project made
// from examples/starter) must print the next commands; in that project, `npm install` (the library
// from the tarball in it, the rest from the registry), its type check (the shipped .d.ts against
// its generated Env), `npm test` without a `.dev.vars` and again with the one `npm start` creates,
// and `wrangler deploy --dry-run`. Also: create-app refuses a folder that is not empty.
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const work = mkdtempSync(join(tmpdir(), "edge-streams-starter-"));
const env = { ...process.env, WRANGLER_SEND_METRICS: "false" };
const run = (cwd, command, args) => {
  console.log(`$ (${cwd === root ? "." : cwd}) ${command} ${args.join(" ")}`);
  execFileSync(command, args, { cwd, stdio: "inherit", env });
};
const check = (ok, message) => {
  if (!ok) throw new Error(`starter: ${message}`);
};

try {
  // A folder with something in it is refused before anything is packed or written.
  const taken = join(work, "taken");
  mkdirSync(taken);
  writeFileSync(join(taken, "notes.txt"), "mine\n");
  const refused = spawnSync("npm", ["run", "--silent", "create-app", "--", taken], { cwd: root, env, encoding: "utf8" });
  check(refused.status !== 0 && /is not empty/.test(refused.stderr), `create-app into a non-empty folder: exit ${refused.status}, ${refused.stderr}`);
  check(readFileSync(join(taken, "notes.txt"), "utf8") === "mine\n", "create-app changed a folder it refused");

  const app = join(work, "my-app");
  console.log(`$ npm run create-app -- ${app}`);
  const created = execFileSync("npm", ["run", "--silent", "create-app", "--", app], { cwd: root, env, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  process.stdout.write(created);
  for (const line of [`cd ${app}`, "npm install", "npm test", "npm start"]) check(created.includes(`  ${line}`), `create-app did not print "${line}"`);
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const tarball = `edge-streams-${version}.tgz`;
  check(existsSync(join(app, tarball)), `no ${tarball} in the project`);
  const manifest = JSON.parse(readFileSync(join(app, "package.json"), "utf8"));
  check(manifest.dependencies["edge-streams"] === `file:${tarball}`, `the project depends on ${manifest.dependencies["edge-streams"]}`);
  check(manifest.name === "my-app" && /^name = "my-app"$/m.test(readFileSync(join(app, "wrangler.toml"), "utf8")), "the project is not named after its folder");

  // The commands create-app printed, as a user runs them (the registry's packages from npm's cache when it has them).
  run(app, "npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"]);
  run(app, "npm", ["run", "typecheck"]);
  run(app, "npm", ["test"]);
  // `npm start` creates .dev.vars (another token than the tests'): the tests pass with it too.
  copyFileSync(join(app, ".dev.vars.example"), join(app, ".dev.vars"));
  run(app, "npm", ["test"]);
  run(app, "npx", ["wrangler", "deploy", "--dry-run", "--outdir", "dist"]);
  check(existsSync(join(app, "dist/index.js")), "the project's dry run bundled nothing");
  console.log("starter: created with create-app from the packed library, installed, tests passed without and with .dev.vars, deploy dry run bundled");
} finally {
  if (!process.env.KEEP_STARTER) rmSync(work, { recursive: true, force: true });
}

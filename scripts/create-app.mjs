// `npm run create-app -- <folder>`: a new Edge Streams application project in <folder> (new, or an
// empty folder; relative to where npm was run), made from examples/starter. Packs this repository's
// library (`npm pack`, whose `prepack` builds dist/) into the project, which depends on that
// tarball (`"edge-streams": "file:edge-streams-<version>.tgz"`) and so needs nothing of this
// checkout once made; then prints the commands to run next. The project is put together in a
// hidden folder beside the target and renamed into place at the end: an interrupted run leaves the
// target as it was (a rerun works), at most with a `.<name>-creating-*` folder to delete.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";

const root = resolve(import.meta.dirname, "..");
const starter = join(root, "examples", "starter");
/** What of the starter folder a project does not get: installs, local state and the local token. */
const LEFT_OUT = new Set(["node_modules", ".wrangler", "dist", ".dev.vars", "package-lock.json"]);
const DEFAULT_NAME = "my-edge-streams-app";

function fail(message, code = 1) {
  console.error(`create-app: ${message}`);
  process.exit(code);
}

/** A Worker and package name from a folder name: lower-case letters, digits and dashes, at most 63. */
function projectName(folder) {
  const name = folder
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+/, "")
    .slice(0, 63)
    .replace(/-+$/, "");
  return name || DEFAULT_NAME;
}

const args = process.argv.slice(2);
if (args.length !== 1 || args[0].startsWith("-")) fail("usage: npm run create-app -- <folder>   (e.g. npm run create-app -- ../my-app)", 2);
const given = args[0];
// `npm run` runs scripts in the package's folder; INIT_CWD is where it was run from.
const target = resolve(process.env.INIT_CWD ?? process.cwd(), given);
if (existsSync(target)) {
  if (!statSync(target).isDirectory()) fail(`${given} exists and is not a folder`);
  if (readdirSync(target).length > 0) fail(`${given} is not empty: give a new or an empty folder`);
}
const fromRoot = relative(root, target);
if (!(fromRoot === ".." || fromRoot.startsWith(`..${sep}`) || isAbsolute(fromRoot))) {
  fail(`${given} is inside this repository: create the project outside it (e.g. ../my-app)`);
}

const { name: library, version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const tarball = `${library}-${version}.tgz`;
const name = projectName(basename(target));

mkdirSync(dirname(target), { recursive: true });
// mkdirSync rather than mkdtempSync, whose folder only its owner may read (0700) and would stay so after the rename.
const staging = join(dirname(target), `.${basename(target)}-creating-${process.pid}-${Date.now()}`);
mkdirSync(staging);
try {
  console.log(`Packing ${library} ${version} (npm pack builds dist/ first)…`);
  execFileSync("npm", ["pack", "--silent", "--pack-destination", staging], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
    shell: process.platform === "win32",
  });
  if (!existsSync(join(staging, tarball))) throw new Error(`npm pack made no ${tarball}`);

  cpSync(starter, staging, { recursive: true, filter: (path) => path === starter || !LEFT_OUT.has(basename(path)) });

  const manifestPath = join(staging, "package.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  manifest.name = name;
  manifest.dependencies = { ...manifest.dependencies, [library]: `file:${tarball}` };
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);

  const wranglerPath = join(staging, "wrangler.toml");
  const wrangler = readFileSync(wranglerPath, "utf8");
  if (!/^name = ".*"$/m.test(wrangler)) throw new Error("the starter's wrangler.toml has no name line to set");
  writeFileSync(wranglerPath, wrangler.replace(/^name = ".*"$/m, `name = "${name}"`));

  if (existsSync(target)) rmdirSync(target);
  renameSync(staging, target);
} catch (error) {
  rmSync(staging, { recursive: true, force: true });
  fail(error instanceof Error ? error.message : String(error));
}

const cd = /[\s'"$`\\]/.test(given) ? JSON.stringify(given) : given;
console.log(`
Created ${given}: the Edge Streams starter as a project of its own ("${name}"),
depending on ${library} ${version} from ${tarball} in it. Next:

  cd ${cd}
  npm install   # ${library} from ${tarball}, the rest from the npm registry
  npm test      # the Worker in workerd, driven by TestDriver and over HTTP
  npm start     # wrangler dev on http://127.0.0.1:8787 (creates .dev.vars: the local API token)

README.md there says what each file is, how to try it with curl and how to deploy.`);

/**
 * The dependency rules of docs/design.md are enforced by Biome (`npm run lint`, biome.json's
 * `overrides`): the project's own biome.json, run over a small tree of files that break each rule
 * and files that keep to it, reports exactly the breaking imports, each with its file and rule.
 * What Biome cannot say — no import circle between rooms (the core's folders and top files, and
 * the floors above) — `scripts/check-layering.mjs` does, also in `npm run lint`: run here over a
 * tree with such a circle, the same tree without it, and the project itself.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Node's modules, typed for what this test uses: the project's types are the Workers' only.
interface NodeFs {
  mkdtempSync(prefix: string): string;
  mkdirSync(path: string, options: { recursive: true }): void;
  readFileSync(path: string, encoding: "utf8"): string;
  writeFileSync(path: string, text: string): void;
  rmSync(path: string, options: { recursive: true; force: true }): void;
}
interface NodeChildProcess {
  spawnSync(command: string, args: string[], options: { cwd: string; encoding: "utf8" }): { status: number | null; stdout: string; stderr: string };
}
interface NodeProcess {
  execPath: string;
}
declare const process: { cwd(): string };
const nodeProcess = (): Promise<NodeProcess> => load<{ default: NodeProcess }>("node:process").then((module) => module.default);
const load = <T>(name: string): Promise<T> => import(/* @vite-ignore */ name) as Promise<T>;

const CORE = "src/ is the platform-free core: it never imports platform/, durable-objects/, workers/ or a Cloudflare module";
const TASK = "a task does not know the restore worker or the coordinator: they meet in src/task/protocol.ts";
const OBJECT_HTTP = "a Durable Object class never imports the HTTP layer or the entry points (workers/)";
const OBJECT_PLATFORM = "a Durable Object class never imports the bindings or the host (platform/)";
const OBJECT_OBJECT = "a Durable Object class never imports another object class";
const PLATFORM = "platform/ is below the entry points and the HTTP layer: it never imports workers/";

/** Each file of the tree, with the rules its imports break (none: it keeps to every rule). */
const TREE: Record<string, { imports: string[]; breaks: string[] }> = {
  // What src/testing/test-driver.ts did before it moved to platform/testing/.
  "src/testing/test-driver.ts": { imports: ["../../platform/host"], breaks: [CORE] },
  "src/streams/uses-workers.ts": { imports: ["cloudflare:workers"], breaks: [CORE] },
  "src/log/knows-its-object.ts": { imports: ["../../durable-objects/log-partition"], breaks: [CORE] },
  "src/task/asks-the-coordinator.ts": {
    imports: ["../coordinator/coordinator-store", "../restore/registry", "../../workers/api/app"],
    breaks: [TASK, TASK, CORE],
  },
  "durable-objects/task-object.ts": {
    imports: ["./coordinator", "../workers/api/app", "../platform/bindings", "./calls", "../src/task/protocol"],
    breaks: [OBJECT_OBJECT, OBJECT_HTTP, OBJECT_PLATFORM],
  },
  "platform/host.ts": { imports: ["../workers/api/app", "../durable-objects/calls", "../src/application"], breaks: [PLATFORM] },
  // Keeping to the rules: the core within itself and packages; the entry points import every floor.
  "src/task/stream-task.ts": { imports: ["./protocol", "../log/types", "../streams/serdes", "../storage/sql", "hono/utils/encode"], breaks: [] },
  "workers/api/views.ts": { imports: ["../../platform/host", "../../durable-objects/coordinator", "../../src/task/protocol"], breaks: [] },
};

describe("the dependency rules (biome.json)", () => {
  let root = "";
  let fs: NodeFs;
  let reported: { file: string; message: string }[] = [];

  beforeAll(async () => {
    fs = await load<NodeFs>("node:fs");
    const { spawnSync } = await load<NodeChildProcess>("node:child_process");
    const project = process.cwd();
    const config = JSON.parse(fs.readFileSync(`${project}/biome.json`, "utf8")) as Record<string, unknown>;
    delete config.$schema; // a path into the project's node_modules
    root = fs.mkdtempSync("/tmp/edge-streams-layering-");
    fs.writeFileSync(`${root}/biome.json`, JSON.stringify(config));
    for (const [file, { imports }] of Object.entries(TREE)) {
      fs.mkdirSync(`${root}/${file.slice(0, file.lastIndexOf("/"))}`, { recursive: true });
      const lines = imports.map((from, i) => `import type { T${i} } from "${from}";\nexport type U${i} = T${i};`);
      fs.writeFileSync(`${root}/${file}`, `${lines.join("\n")}\n`);
    }
    const run = spawnSync(`${project}/node_modules/.bin/biome`, ["lint", "--vcs-enabled=false", "--reporter=github", "--max-diagnostics=none", "."], {
      cwd: root,
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(1);
    // One line per diagnostic: ::error title=<rule>,file=<absolute path>,line=…::<message>
    reported = [...run.stdout.matchAll(/^::error title=lint\/style\/noRestrictedImports,file=([^,]+),[^:]*::(.*)$/gm)].map(([, file, message]) => ({
      file: file!.slice(`${root}/`.length),
      message: message!,
    }));
  }, 30_000);

  afterAll(() => {
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it.each(Object.entries(TREE))("%s: reports exactly the imports that break a rule, naming the file and the rule", (file, { breaks }) => {
    const messages = reported.filter((diagnostic) => diagnostic.file === file).map((diagnostic) => diagnostic.message);
    expect(messages).toHaveLength(breaks.length);
    breaks.forEach((rule, i) => {
      expect(messages[i]).toContain(rule);
      expect(messages[i]).toContain("(docs/design.md, dependency rules)");
    });
  });

  it("reports nothing outside the tree's breaking imports", () => {
    const expected = Object.values(TREE).reduce((sum, { breaks }) => sum + breaks.length, 0);
    expect(reported).toHaveLength(expected);
  });
});

/**
 * The circle that ran through `src/connectors/sink-config.ts` importing `ConfigError` from
 * `src/config.ts` (which imports `src/restore/`, which imports `src/task/`, which imports
 * `src/application.ts`, which imports the sinks' configuration): no file imports itself, yet the
 * rooms do. Each file imports what it names.
 */
const CIRCLE: Record<string, string[]> = {
  "src/application.ts": ["./connectors/sink-config"],
  "src/connectors/sink-config.ts": ["../config"],
  "src/config.ts": ["./restore/sharding", "./config-error"],
  "src/restore/sharding.ts": [],
  "src/restore/registry.ts": ["../task/state"],
  "src/task/state.ts": [],
  "src/task/describe.ts": ["../application"],
  "src/config-error.ts": [],
  "durable-objects/task-object.ts": ["../src/task/state", "./calls"],
  "durable-objects/calls.ts": ["../src/application"],
  "workers/index.ts": ["../src/application", "../durable-objects/task-object"],
};

describe("no import circle between rooms, no production file over 450 lines (scripts/check-layering.mjs)", () => {
  let fs: NodeFs;
  let spawnSync: NodeChildProcess["spawnSync"];
  let node = "";
  const roots: string[] = [];

  beforeAll(async () => {
    fs = await load<NodeFs>("node:fs");
    ({ spawnSync } = await load<NodeChildProcess>("node:child_process"));
    node = (await nodeProcess()).execPath;
  });
  afterAll(() => {
    for (const root of roots) fs.rmSync(root, { recursive: true, force: true });
  });

  const check = (tree: Record<string, string[]>) => {
    const root = fs.mkdtempSync("/tmp/edge-streams-rooms-");
    roots.push(root);
    for (const [file, imports] of Object.entries(tree)) {
      fs.mkdirSync(`${root}/${file.slice(0, file.lastIndexOf("/"))}`, { recursive: true });
      fs.writeFileSync(`${root}/${file}`, `${imports.map((from, i) => `import type { T${i} } from "${from}";`).join("\n")}\nexport const x = 1;\n`);
    }
    return spawnSync(node, [`${process.cwd()}/scripts/check-layering.mjs`, root], { cwd: root, encoding: "utf8" });
  };

  it("fails on a circle between rooms, naming each room and an import of each arrow", () => {
    const run = check(CIRCLE);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("import circle between rooms: src/application, src/config, src/connectors/, src/restore/, src/task/");
    expect(run.stderr).toContain('src/connectors/ → src/config: src/connectors/sink-config.ts imports "../config"');
    expect(run.stderr).toContain('src/task/ → src/application: src/task/describe.ts imports "../application"');
    // The floors above take part in no circle: they import downward only.
    expect(run.stderr).not.toContain("durable-objects/ →");
  });

  it("passes once the error comes from a room below (the mend: src/config-error.ts)", () => {
    const run = check({ ...CIRCLE, "src/connectors/sink-config.ts": ["../config-error"] });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  });

  it("a circle through the floors above counts too", () => {
    const run = check({
      ...CIRCLE,
      "src/connectors/sink-config.ts": ["../config-error"],
      "src/task/state.ts": ["../../platform/host"],
      "platform/host.ts": ["../src/task/describe"],
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("import circle between rooms: platform/, src/task/");
  });

  it("fails on a production file over 450 lines, naming it; a test file of any length is not held to it", () => {
    const long = (lines: number) => Array.from({ length: lines }, (_, i) => `export const x${i} = ${i};`).join("\n") + "\n";
    const root = fs.mkdtempSync("/tmp/edge-streams-rooms-");
    roots.push(root);
    fs.mkdirSync(`${root}/src/task`, { recursive: true });
    fs.writeFileSync(`${root}/src/task/fits.ts`, long(450));
    fs.writeFileSync(`${root}/src/task/fits.test.ts`, long(900));
    const fits = spawnSync(node, [`${process.cwd()}/scripts/check-layering.mjs`, root], { cwd: root, encoding: "utf8" });
    expect(fits.stderr).toBe("");
    expect(fits.status).toBe(0);
    fs.writeFileSync(`${root}/src/task/grown.ts`, long(451));
    const grown = spawnSync(node, [`${process.cwd()}/scripts/check-layering.mjs`, root], { cwd: root, encoding: "utf8" });
    expect(grown.status).toBe(1);
    expect(grown.stderr).toContain("src/task/grown.ts: 451 lines, over 450");
  });

  it("the project has none", () => {
    const run = spawnSync(node, [`${process.cwd()}/scripts/check-layering.mjs`], { cwd: process.cwd(), encoding: "utf8" });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  });
});

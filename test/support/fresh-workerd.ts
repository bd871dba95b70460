/**
 * The setup file of the workerd projects whose files share a workerd (`isolate: false` in
 * vitest.config.ts): before each file, the world a file of its own would start in.
 *
 * Every Durable Object the last files named is deleted with its storage and alarms: `reset()`
 * deletes the objects that are running, so each is woken first (an object left idle, evicted, or
 * crashed by its file would otherwise keep its storage, as test/model/run.ts found). Objects are
 * known by the names they were taken by: the namespaces' `getByName`/`idFromName` are watched for
 * the whole isolate (the Worker's objects take one another by name too). What this isolate
 * remembers of the last file's cluster is forgotten (the Worker's cached assignment: a new
 * coordinator starts its versions anew). A file then finds empty storage, as in a workerd of its
 * own; only the library's import (seconds per file on 2 cores) is shared.
 */
import { reset, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll } from "vitest";
import { forgetAssignments } from "../../workers/api/cluster";

type Namespace = DurableObjectNamespace;

/**
 * Names taken per namespace since the last reset: kept on the global object, as this file is
 * evaluated again before each test file while the watch it installs stays.
 */
const NAMED = Symbol.for("edge-streams.fresh-workerd.named");
const global = globalThis as { [NAMED]?: Map<Namespace, Set<string>> };
global[NAMED] ??= new Map();
const named = global[NAMED];

const WATCHED = Symbol.for("edge-streams.fresh-workerd.watched");

function watch(namespace: Namespace): void {
  const prototype = Object.getPrototypeOf(namespace) as Namespace & { [WATCHED]?: true };
  if (prototype[WATCHED]) return;
  prototype[WATCHED] = true;
  const { getByName, idFromName } = prototype;
  const note = (self: Namespace, name: string) => {
    const names = named.get(self) ?? new Set<string>();
    named.set(self, names);
    names.add(name);
  };
  prototype.getByName = function (this: Namespace, name: string, ...rest: unknown[]) {
    note(this, name);
    return (getByName as (...args: unknown[]) => DurableObjectStub).call(this, name, ...rest);
  } as Namespace["getByName"];
  prototype.idFromName = function (this: Namespace, name: string) {
    note(this, name);
    return idFromName.call(this, name);
  };
}

const namespaces = Object.values(env as unknown as Record<string, unknown>).filter(
  (binding): binding is Namespace => typeof binding === "object" && binding !== null && /DurableObjectNamespace$/.test(binding.constructor.name),
);
for (const namespace of namespaces) watch(namespace);

/** Wakes every object named since the last time, deletes them all, and forgets the cached assignment. */
async function fresh(): Promise<void> {
  const stubs = [...named].flatMap(([namespace, names]) => [...names].map((name) => namespace.get(namespace.idFromName(name))));
  // Woken (a call that does nothing), so that reset() finds each running; one that fails to start is gone anyway.
  await Promise.all(stubs.map((stub) => runInDurableObject(stub, () => undefined).catch(() => undefined)));
  await reset();
  named.clear();
  forgetAssignments();
}

beforeAll(fresh);
// After the file's own hooks too: no alarm of its objects runs on between files, when the isolate
// can no longer load a module for it.
afterAll(fresh);

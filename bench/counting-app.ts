/**
 * The default example (examples/orders-totals) as the bench's cost scenarios (scale, cost-load) run
 * it: the same Worker and Durable Object classes, with what Cloudflare bills counted on the way,
 * per object (`<kind>:<name>`, kind one of task, partition, coordinator, restore, group) —
 *
 * - requests: every RPC method call on a stub of the object (each is its own billed RPC session),
 *   counted where the call is made (a method wrapped on the object's class could not tell an RPC
 *   from the object calling its own method), and every alarm invocation, counted in the object;
 * - SQLite rows read and written: each SQL cursor's `rowsRead` / `rowsWritten` once the statement
 *   has been consumed (the framework consumes every cursor before its next await), the rows written
 *   attributed to the table the statement names (`INSERT INTO t`, `UPDATE t`, `DELETE FROM t`; DDL
 *   is `ddl`; miniflare's local `__miniflare_do_name`, never billed, is left out). `rowsWritten`
 *   counts index rows too (an insert into a rowid table with a composite primary key counts 2, an
 *   update of a column outside the key 1). Plus the synchronous KV API (billed as rows: a read per
 *   get, a row written per put or delete, table `kvapi`) and `setAlarm` (a row written, `alarm`);
 * - stored bytes: `ctx.storage.sql.databaseSize` (the SQLite database's size, as the API gives it:
 *   the measure of the SQL stored data Cloudflare bills) after each statement that wrote rows, and
 *   once constructed (`freshBytes`, the least seen at construction: a new object's schema).
 *
 * `GET /bench/usage` answers `{ "objects": { "<kind>:<name>": ObjectUsage } }` so far. Under
 * `wrangler dev` the Worker and every object share one isolate, so these module-level counters see
 * the whole application; deployed, each object has its own (this file is never deployed).
 */
import { streams } from "../examples/orders-totals/app";

interface ObjectUsage {
  rowsRead: number;
  rowsWritten: number;
  /** Rows written by table (`kvapi`: the KV API's hidden table; `alarm`: setAlarm; `ddl`: CREATE, ALTER, DROP). */
  written: Record<string, number>;
  /** RPC calls made on stubs of this object. */
  requests: number;
  /** The same calls by method name (what an idle object is woken by). */
  methods: Record<string, number>;
  alarms: number;
  /** The database's size in bytes after the object's latest write. */
  bytes: number;
  /** The least size seen once the object was constructed (its schema, for an object made in this run). */
  freshBytes: number | null;
}

const objects: Record<string, ObjectUsage> = {};

function objectUsage(kind: string, name: string): ObjectUsage {
  const key = `${kind}:${name}`;
  let usage = objects[key];
  if (!usage) {
    usage = { rowsRead: 0, rowsWritten: 0, written: {}, requests: 0, methods: {}, alarms: 0, bytes: 0, freshBytes: null };
    objects[key] = usage;
  }
  return usage;
}

/** The object kind of each binding the library calls. */
const KINDS: Record<string, string> = {
  LOG_PARTITION: "partition",
  CONSUMER_GROUP: "group",
  TASK_OBJECT: "task",
  COORDINATOR: "coordinator",
  RESTORE_WORKER: "restore",
};

/** A stub whose method calls are counted against its object. */
function countedStub<T extends object>(usage: ObjectUsage, stub: T): T {
  return new Proxy(stub, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (typeof property === "symbol" || property === "then" || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        usage.requests++;
        usage.methods[property] = (usage.methods[property] ?? 0) + 1;
        // Reflect.apply, not value.apply: on an RPC stub `apply` would be a remote property.
        return Reflect.apply(value, target, args);
      };
    },
  });
}

/** A namespace whose stubs count their calls (also those of a jurisdiction's namespace). */
function countedNamespace<T extends object>(kind: string, namespace: T): T {
  return new Proxy(namespace, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (typeof value !== "function") return value;
      const fn = value as (...a: unknown[]) => unknown;
      if (property === "getByName") return (...args: unknown[]) => countedStub(objectUsage(kind, String(args[0])), Reflect.apply(fn, target, args) as object);
      if (property === "get") {
        return (...args: unknown[]) => {
          const id = args[0] as DurableObjectId;
          return countedStub(objectUsage(kind, id.name ?? id.toString()), Reflect.apply(fn, target, args) as object);
        };
      }
      if (property === "jurisdiction") return (...args: unknown[]) => countedNamespace(kind, Reflect.apply(fn, target, args) as object);
      return fn.bind(target);
    },
  });
}

const wrapped = new WeakMap<object, Record<string, unknown>>();

/** The same env with counting namespaces; one per env object, as the library caches its host per env. */
function countedEnv(env: Record<string, unknown>): Record<string, unknown> {
  let result = wrapped.get(env);
  if (!result) {
    result = { ...env };
    for (const [binding, kind] of Object.entries(KINDS)) if (env[binding]) result[binding] = countedNamespace(kind, env[binding] as object);
    wrapped.set(env, result);
  }
  return result;
}

/** The object each storage API object (`sql`, `kv`, the storage itself) belongs to. */
const owners = new WeakMap<object, ObjectUsage>();

/**
 * Replaces `name` on `proto` (a runtime class's prototype, shared by every object of the isolate)
 * with a counting version, once. The objects' state cannot be wrapped instead: the runtime checks
 * that a Durable Object is constructed with its real state.
 */
function patch(proto: object, name: string, count: (usage: ObjectUsage, self: object, result: unknown, args: unknown[]) => void): void {
  const original = Reflect.get(proto, name) as ((...a: unknown[]) => unknown) & { counted?: true };
  if (typeof original !== "function" || original.counted) return;
  const counting = Object.assign(
    function (this: object, ...args: unknown[]) {
      const result = original.apply(this, args);
      const usage = owners.get(this);
      if (usage) count(usage, this, result, args);
      return result;
    },
    { counted: true as const },
  );
  Object.defineProperty(proto, name, { value: counting, writable: true, configurable: true });
}

const WRITE_TARGET = /^\s*(?:(?:INSERT|REPLACE)\s+(?:OR\s+\w+\s+)?INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+["`[]?([A-Za-z_][A-Za-z0-9_]*)/i;
const DDL = /^\s*(?:CREATE|ALTER|DROP)\b/i;
const tables = new Map<string, string>();

/** The table a statement writes to, by its text (memoized: the framework's statements are few). */
function tableOf(query: string): string {
  let table = tables.get(query);
  if (table === undefined) {
    table = WRITE_TARGET.exec(query)?.[1] ?? (DDL.test(query) ? "ddl" : "other");
    if (tables.size < 10_000) tables.set(query, table);
  }
  return table;
}

function written(usage: ObjectUsage, table: string, rows: number): void {
  usage.rowsWritten += rows;
  usage.written[table] = (usage.written[table] ?? 0) + rows;
}

/**
 * Counts, for every object of the isolate: each SQL cursor's rows once consumed (in a microtask,
 * after the synchronous code that reads it: the framework never holds a cursor across an await)
 * with the database's size after a write, the KV API (a row read per get, a row written per put
 * or delete) and `setAlarm` (a row written).
 */
function countStorage(ctx: DurableObjectState, usage: ObjectUsage): void {
  owners.set(ctx.storage, usage);
  owners.set(ctx.storage.sql, usage);
  owners.set(ctx.storage.kv, usage);
  patch(Object.getPrototypeOf(ctx.storage.sql), "exec", (u, sql, cursor, args) => {
    const c = cursor as SqlStorageCursor<Record<string, SqlStorageValue>>;
    queueMicrotask(() => {
      u.rowsRead += c.rowsRead;
      const rows = c.rowsWritten;
      const table = tableOf(String(args[0]));
      // Miniflare's own bookkeeping (the object's name), written locally only: not billed.
      if (rows > 0 && !table.startsWith("__miniflare")) {
        written(u, table, rows);
        u.bytes = (sql as SqlStorage).databaseSize;
      }
    });
  });
  const kv = Object.getPrototypeOf(ctx.storage.kv);
  patch(kv, "get", (u) => u.rowsRead++);
  patch(kv, "put", (u) => written(u, "kvapi", 1));
  patch(kv, "delete", (u) => written(u, "kvapi", 1));
  patch(Object.getPrototypeOf(ctx.storage), "setAlarm", (u) => written(u, "alarm", 1));
}

type ObjectClass = new (ctx: DurableObjectState, env: never) => { alarm?(info?: AlarmInvocationInfo): Promise<void> };

/** The class `base` (objects of `kind`) with its state and env counted, and its alarms. */
function counted<C extends ObjectClass>(base: C, kind: string): C {
  // @ts-expect-error: a mixin over the library's classes (their constructors take (ctx, env)).
  return class extends base {
    private readonly benchUsage: ObjectUsage;
    constructor(ctx: DurableObjectState, env: Record<string, unknown>) {
      const usage = objectUsage(kind, ctx.id.name ?? ctx.id.toString());
      countStorage(ctx, usage);
      super(ctx, countedEnv(env) as never);
      this.benchUsage = usage;
      // After the constructor's migrations: a new object's schema and nothing else.
      const bytes = ctx.storage.sql.databaseSize;
      usage.bytes = bytes;
      usage.freshBytes = Math.min(usage.freshBytes ?? bytes, bytes);
    }
    override async alarm(info?: AlarmInvocationInfo): Promise<void> {
      this.benchUsage.alarms++;
      return super.alarm?.(info);
    }
  };
}

export const TaskObject = counted(streams.TaskObject as unknown as ObjectClass, "task");
export const Coordinator = counted(streams.Coordinator as unknown as ObjectClass, "coordinator");
export const RestoreWorker = counted(streams.RestoreWorker as unknown as ObjectClass, "restore");
export const LogPartition = counted(streams.LogPartition as unknown as ObjectClass, "partition");
export const ConsumerGroup = counted(streams.ConsumerGroup as unknown as ObjectClass, "group");
export const SubscriptionHub = counted(streams.SubscriptionHub as unknown as ObjectClass, "hub");

export default {
  fetch(request: Request, env: Record<string, unknown>, ctx: ExecutionContext): Response | Promise<Response> {
    if (new URL(request.url).pathname === "/bench/usage") return Response.json({ objects });
    return streams.fetch(request, countedEnv(env) as never, ctx);
  },
};

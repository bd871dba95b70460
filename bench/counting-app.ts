/**
 * The default example (examples/orders-totals) as the bench's scale scenario runs it: the same
 * Worker and Durable Object classes, with what Cloudflare bills counted on the way —
 *
 * - Durable Object requests: every RPC method call on a stub (each is its own billed RPC session),
 *   by binding, plus every alarm invocation;
 * - SQLite rows read and written: each SQL cursor's `rowsRead` / `rowsWritten` once the statement
 *   has been consumed (the framework consumes every cursor before its next await), plus the
 *   synchronous KV API (billed as rows: one per get, put or delete) and `setAlarm` (one row written).
 *
 * `GET /bench/usage` answers the counts so far. Under `wrangler dev` the Worker and every object
 * share one isolate, so these module-level counters see the whole application; deployed, each
 * object has its own (this file is never deployed). Only bench/scenarios/scale.mjs starts it.
 */
import { streams } from "../examples/orders-totals/app";

interface Usage {
  rowsRead: number;
  rowsWritten: number;
  /** RPC calls on stubs, by binding. */
  requests: Record<string, number>;
  alarms: number;
}

const usage: Usage = { rowsRead: 0, rowsWritten: 0, requests: {}, alarms: 0 };

const BINDINGS = ["LOG_PARTITION", "CONSUMER_GROUP", "TASK_OBJECT", "COORDINATOR", "RESTORE_WORKER"] as const;

/** A stub whose method calls are counted against `binding`. */
function countedStub<T extends object>(binding: string, stub: T): T {
  return new Proxy(stub, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (typeof property === "symbol" || property === "then" || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        usage.requests[binding] = (usage.requests[binding] ?? 0) + 1;
        // Reflect.apply, not value.apply: on an RPC stub `apply` would be a remote property.
        return Reflect.apply(value, target, args);
      };
    },
  });
}

/** A namespace whose stubs count their calls (also those of a jurisdiction's namespace). */
function countedNamespace<T extends object>(binding: string, namespace: T): T {
  return new Proxy(namespace, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (typeof value !== "function") return value;
      const fn = value as (...a: unknown[]) => unknown;
      if (property === "get" || property === "getByName") return (...args: unknown[]) => countedStub(binding, Reflect.apply(fn, target, args) as object);
      if (property === "jurisdiction") return (...args: unknown[]) => countedNamespace(binding, Reflect.apply(fn, target, args) as object);
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
    for (const binding of BINDINGS) if (env[binding]) result[binding] = countedNamespace(binding, env[binding] as object);
    wrapped.set(env, result);
  }
  return result;
}

/**
 * Replaces `name` on `proto` (a runtime class's prototype, shared by every object of the isolate)
 * with a counting version, once. The objects' state cannot be wrapped instead: the runtime checks
 * that a Durable Object is constructed with its real state.
 */
function patch(proto: object, name: string, count: (result: unknown, args: unknown[]) => void): void {
  const original = Reflect.get(proto, name) as ((...a: unknown[]) => unknown) & { counted?: true };
  if (typeof original !== "function" || original.counted) return;
  const counting = Object.assign(
    function (this: unknown, ...args: unknown[]) {
      const result = original.apply(this, args);
      count(result, args);
      return result;
    },
    { counted: true as const },
  );
  Object.defineProperty(proto, name, { value: counting, writable: true, configurable: true });
}

/**
 * Counts, for every object of the isolate: each SQL cursor's rows once consumed (in a microtask,
 * after the synchronous code that reads it: the framework never holds a cursor across an await),
 * the KV API (a row read per get, a row written per put or delete) and `setAlarm` (a row written).
 */
function countStorage(ctx: DurableObjectState): void {
  patch(Object.getPrototypeOf(ctx.storage.sql), "exec", (cursor) => {
    const c = cursor as SqlStorageCursor<Record<string, SqlStorageValue>>;
    queueMicrotask(() => {
      usage.rowsRead += c.rowsRead;
      usage.rowsWritten += c.rowsWritten;
    });
  });
  const kv = Object.getPrototypeOf(ctx.storage.kv);
  patch(kv, "get", () => usage.rowsRead++);
  patch(kv, "put", () => usage.rowsWritten++);
  patch(kv, "delete", () => usage.rowsWritten++);
  patch(Object.getPrototypeOf(ctx.storage), "setAlarm", () => usage.rowsWritten++);
}

type ObjectClass = new (ctx: DurableObjectState, env: never) => { alarm?(info?: AlarmInvocationInfo): Promise<void> };

/** The class `base` with its state and env counted, and its alarms. */
function counted<C extends ObjectClass>(base: C): C {
  // @ts-expect-error: a mixin over the library's classes (their constructors take (ctx, env)).
  return class extends base {
    constructor(ctx: DurableObjectState, env: Record<string, unknown>) {
      countStorage(ctx);
      super(ctx, countedEnv(env) as never);
    }
    override async alarm(info?: AlarmInvocationInfo): Promise<void> {
      usage.alarms++;
      return super.alarm?.(info);
    }
  };
}

export const TaskObject = counted(streams.TaskObject as unknown as ObjectClass);
export const Coordinator = counted(streams.Coordinator as unknown as ObjectClass);
export const RestoreWorker = counted(streams.RestoreWorker as unknown as ObjectClass);
export const LogPartition = counted(streams.LogPartition as unknown as ObjectClass);
export const ConsumerGroup = counted(streams.ConsumerGroup as unknown as ObjectClass);

export default {
  fetch(request: Request, env: Record<string, unknown>, ctx: ExecutionContext): Response | Promise<Response> {
    if (new URL(request.url).pathname === "/bench/usage") return Response.json(usage);
    return streams.fetch(request, countedEnv(env) as never, ctx);
  },
};

/**
 * `defineEdgeStreams`: turns an application (a topology, and options — or a function of the
 * environment that builds the topology) into what a Worker module exports — the `fetch` handler
 * of the HTTP API and the five Durable Object classes its wrangler.toml binds. The classes close
 * over the application: each passes its host (the application, its configuration and log, the
 * other objects) to the framework's object class.
 *
 * ```ts
 * const streams = defineEdgeStreams(topology);
 * export class TaskObject extends streams.TaskObject {}
 * export class Coordinator extends streams.Coordinator {}
 * export class RestoreWorker extends streams.RestoreWorker {}
 * export class LogPartition extends streams.LogPartition {}
 * export class ConsumerGroup extends streams.ConsumerGroup {}
 * export class SubscriptionHub extends streams.SubscriptionHub {}
 * export default streams;
 * ```
 */
import type { Hono } from "hono";
import { ConsumerGroup } from "../durable-objects/consumer-group";
import { Coordinator } from "../durable-objects/coordinator";
import { LogPartition } from "../durable-objects/log-partition";
import { RestoreWorker } from "../durable-objects/restore-worker";
import { SubscriptionHub } from "../durable-objects/subscription-hub";
import { TaskObject } from "../durable-objects/task-object";
import type { EdgeStreamsEnv } from "../platform/bindings";
import { Host } from "../platform/host";
import { Application, type ApplicationOptions } from "../src/application";
import type { Topology } from "../src/streams/topology/topology";
import { createApi } from "./api/app";
import type { ApiEnv } from "./api/context";
import { queueConsumer, type QueueSources } from "./queue-consumer";
import { sinkOptions } from "../platform/sinks";

/** A Durable Object class as the Worker exports it: constructed by the runtime with `(ctx, env)`. */
export type EdgeStreamsObjectClass<T> = new (ctx: DurableObjectState, env: EdgeStreamsEnv) => T;

/**
 * What `defineEdgeStreams` runs: a built topology, an `Application`, or a function that builds
 * either from the Worker's environment (its vars: a partition count, say), called once per
 * configuration. It may throw `ConfigError` for vars it cannot use.
 */
export type ApplicationSource<E extends EdgeStreamsEnv = EdgeStreamsEnv> = Topology | Application | ((env: E) => Topology | Application);

/** What `defineEdgeStreams` takes besides the application: the application's options, and its inputs from Cloudflare Queues. */
export interface EdgeStreamsOptions extends ApplicationOptions {
  /**
   * Queues whose messages are appended to a topic (docs/connectors.md): queue name → the topic and
   * how a message becomes a record. Each is a `[[queues.consumers]]` of the Worker's wrangler.toml;
   * the Worker's `queue()` handler appends them.
   */
  readonly queues?: QueueSources;
}

export interface EdgeStreams {
  /**
   * The application, for a Worker defined by a topology or an `Application`. One built from the
   * environment has none until it has an environment: use `applicationFor(env)` (reading this
   * throws, saying so).
   */
  readonly application: Application;
  /** The application the Worker runs in `env` (the same object for the same vars; vars of your own welcome). */
  applicationFor<E extends EdgeStreamsEnv>(env: E): Application;
  /** The HTTP API (Hono): add routes of your own to it before the Worker serves. */
  readonly app: Hono<ApiEnv>;
  /** The Worker's fetch handler: the module's default export can be this object itself. */
  fetch(request: Request, env: EdgeStreamsEnv, ctx: ExecutionContext): Response | Promise<Response>;
  /** The Worker's queue handler: appends the batches of the queues named in `queues` (a queue not named there fails its batch). */
  queue(batch: MessageBatch, env: EdgeStreamsEnv, ctx: ExecutionContext): Promise<void>;
  readonly TaskObject: EdgeStreamsObjectClass<TaskObject>;
  readonly Coordinator: EdgeStreamsObjectClass<Coordinator>;
  readonly RestoreWorker: EdgeStreamsObjectClass<RestoreWorker>;
  readonly LogPartition: EdgeStreamsObjectClass<LogPartition>;
  readonly ConsumerGroup: EdgeStreamsObjectClass<ConsumerGroup>;
  /** Holds subscriptions while hibernating: WebSockets, and the API Worker's own behind server-sent events and prefixes (bound as `SUBSCRIPTION_HUB`; optional). */
  readonly SubscriptionHub: EdgeStreamsObjectClass<SubscriptionHub>;
}

/**
 * The Worker of an application. Pass a built topology (and options: extra topics, restore and
 * standby listeners), an `Application` made already (tests share one with their driver), or a
 * function of the environment that builds one — `defineEdgeStreams((env) => topology(env))` —
 * for an application shaped by its vars (the default example's `PARTITIONS`). `queues` makes
 * Cloudflare Queues inputs of its topics; `sinks` delivers topics to Queues and webhooks.
 */
export function defineEdgeStreams<E extends EdgeStreamsEnv = EdgeStreamsEnv>(source: ApplicationSource<E>, options: EdgeStreamsOptions = {}): EdgeStreams {
  const { queues = {}, ...applicationOptions } = options;
  const applicationFor = applications(source, applicationOptions);
  const host = (env: EdgeStreamsEnv) => Host.of(applicationFor(env), env);
  const app = createApi(applicationFor);
  const fixed = typeof source === "function" ? undefined : applicationFor({} as EdgeStreamsEnv);
  const streams: Omit<EdgeStreams, "application"> = {
    applicationFor,
    app,
    fetch: (request, env, ctx) => app.fetch(request, env, ctx),
    queue: queueConsumer(applicationFor, queues),
    TaskObject: class extends TaskObject {
      constructor(ctx: DurableObjectState, env: EdgeStreamsEnv) {
        super(ctx, env, host(env));
      }
    },
    Coordinator: class extends Coordinator {
      constructor(ctx: DurableObjectState, env: EdgeStreamsEnv) {
        super(ctx, env, host(env));
      }
    },
    RestoreWorker: class extends RestoreWorker {
      constructor(ctx: DurableObjectState, env: EdgeStreamsEnv) {
        super(ctx, env, host(env));
      }
    },
    SubscriptionHub: class extends SubscriptionHub {
      constructor(ctx: DurableObjectState, env: EdgeStreamsEnv) {
        super(ctx, env, host(env));
      }
    },
    LogPartition: class extends LogPartition {
      constructor(ctx: DurableObjectState, env: EdgeStreamsEnv) {
        const application = applicationFor(env);
        const bucket = env.TIERED_STORAGE;
        super(ctx, env, host(env).objects, {
          isTaskInput: (topic) => application.isTaskInput(topic),
          ...sinkOptions(host(env)),
          ...(bucket ? { remoteStorage: { bucket, prefix: application.applicationId } } : {}),
        });
      }
    },
    ConsumerGroup: class extends ConsumerGroup {
      constructor(ctx: DurableObjectState, env: EdgeStreamsEnv) {
        super(ctx, env, host(env));
      }
    },
  };
  // Not enumerable: `wrangler dev` copies the default export with a spread (its middleware), which
  // must not read it (reading it throws for an application built from the environment).
  Object.defineProperty(streams, "application", {
    enumerable: false,
    get(): Application {
      if (!fixed) throw new Error("this Worker builds its application from the environment: use applicationFor(env)");
      return fixed;
    },
  });
  return streams as EdgeStreams;
}

/**
 * The application per environment: the one given, or the one the function builds — once per
 * distinct set of string vars (environment objects of the same configuration share it, so the
 * Worker, its objects and a test driver see the same application).
 */
function applications<E extends EdgeStreamsEnv>(source: ApplicationSource<E>, options: ApplicationOptions): (env: EdgeStreamsEnv) => Application {
  const wrap = (built: Topology | Application) => (built instanceof Application ? built : new Application(built, options));
  if (typeof source !== "function") {
    const application = wrap(source);
    return () => application;
  }
  const byEnv = new WeakMap<object, Application>();
  const byVars = new Map<string, Application>();
  return (env) => {
    const known = byEnv.get(env);
    if (known) return known;
    const vars = JSON.stringify(
      Object.entries(env)
        .filter(([, v]) => typeof v === "string")
        .sort(([a], [b]) => (a < b ? -1 : 1)),
    );
    let application = byVars.get(vars);
    if (!application) byVars.set(vars, (application = wrap(source(env as E))));
    byEnv.set(env, application);
    return application;
  };
}

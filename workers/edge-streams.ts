/**
 * `defineEdgeStreams`: turns an application (a topology, and options) into what a Worker module
 * exports — the `fetch` handler of the HTTP API and the five Durable Object classes its
 * wrangler.toml binds. The classes close over the application: each passes its host (the
 * application, its configuration and log, the other objects) to the framework's object class.
 *
 * ```ts
 * const streams = defineEdgeStreams(topology);
 * export class TaskObject extends streams.TaskObject {}
 * export class Coordinator extends streams.Coordinator {}
 * export class RestoreWorker extends streams.RestoreWorker {}
 * export class LogPartition extends streams.LogPartition {}
 * export class ConsumerGroup extends streams.ConsumerGroup {}
 * export default streams;
 * ```
 */
import type { Hono } from "hono";
import { ConsumerGroup } from "../durable-objects/consumer-group";
import { Coordinator } from "../durable-objects/coordinator";
import { LogPartition } from "../durable-objects/log-partition";
import { RestoreWorker } from "../durable-objects/restore-worker";
import { TaskObject } from "../durable-objects/task-object";
import type { EdgeStreamsEnv } from "../platform/bindings";
import { Host } from "../platform/host";
import { Application, type ApplicationOptions } from "../src/application";
import type { Topology } from "../src/streams/topology/topology";
import { createApi } from "./api/app";
import type { ApiEnv } from "./api/context";

/** A Durable Object class as the Worker exports it: constructed by the runtime with `(ctx, env)`. */
export type EdgeStreamsObjectClass<T> = new (ctx: DurableObjectState, env: EdgeStreamsEnv) => T;

export interface EdgeStreams {
  readonly application: Application;
  /** The HTTP API (Hono): add routes of your own to it before the Worker serves. */
  readonly app: Hono<ApiEnv>;
  /** The Worker's fetch handler: the module's default export can be this object itself. */
  fetch(request: Request, env: EdgeStreamsEnv, ctx: ExecutionContext): Response | Promise<Response>;
  readonly TaskObject: EdgeStreamsObjectClass<TaskObject>;
  readonly Coordinator: EdgeStreamsObjectClass<Coordinator>;
  readonly RestoreWorker: EdgeStreamsObjectClass<RestoreWorker>;
  readonly LogPartition: EdgeStreamsObjectClass<LogPartition>;
  readonly ConsumerGroup: EdgeStreamsObjectClass<ConsumerGroup>;
}

/**
 * The Worker of an application. Pass a built topology (and options: extra topics, restore and
 * standby listeners), or an `Application` made already (tests share one with their driver).
 */
export function defineEdgeStreams(topology: Topology | Application, options: ApplicationOptions = {}): EdgeStreams {
  const application = topology instanceof Application ? topology : new Application(topology, options);
  const host = (env: EdgeStreamsEnv) => Host.of(application, env);
  const app = createApi(application);
  return {
    application,
    app,
    fetch: (request, env, ctx) => app.fetch(request, env, ctx),
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
    LogPartition: class extends LogPartition {
      constructor(ctx: DurableObjectState, env: EdgeStreamsEnv) {
        super(ctx, env, host(env).objects, { isTaskInput: (topic) => application.isTaskInput(topic) });
      }
    },
    ConsumerGroup: class extends ConsumerGroup {
      constructor(ctx: DurableObjectState, env: EdgeStreamsEnv) {
        super(ctx, env, host(env));
      }
    },
  };
}

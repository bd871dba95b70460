/**
 * A bench-only build of the example application for measuring proposed changes without touching
 * src/: the real API Worker, Coordinator, ConsumerGroup and RestoreWorker, with copies of
 * TaskObject / StreamTask / Outbox / SqliteStoreBackend / LogPartition / PartitionStore (this
 * folder) whose changes are switched on per run by the `PROTO` var (comma-separated flags, see
 * flags.ts). With `PROTO` empty it behaves as the application. Used by bench/profile.mjs.
 */
import { app } from "../../workers/api/app";
import type { Env } from "../../workers/env";
import { assignments, taskObject } from "../../workers/api/cluster";
import type { TaskObject } from "./task-object";

export { LogPartition } from "./log-partition";
export { ConsumerGroup } from "../../durable-objects/consumer-group";
export { TaskObject } from "./task-object";
export { Coordinator } from "../../durable-objects/coordinator";
export { RestoreWorker } from "../../durable-objects/restore-worker";

/** `GET /proto/stats?task=0_0`: the prototype counters of a task's active instance (no token). */
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname !== "/proto/stats") return app.fetch(request, env, ctx);
    const taskId = url.searchParams.get("task") ?? "0_0";
    const instance = (await assignments(env, true)).find((i) => i.taskId === taskId && i.role === "active");
    if (!instance) return Response.json({ error: `no active ${taskId}` }, { status: 404 });
    const stub = taskObject(env, instance) as unknown as DurableObjectStub<TaskObject>;
    return Response.json(await stub.protoStats());
  },
} satisfies ExportedHandler<Env>;

/**
 * Entry point of the Edge Streams Worker: the HTTP API (Hono) and the Durable Object classes it
 * binds, exported so wrangler can wire them.
 */
import { app } from "./app";

export { LogPartition } from "../../durable-objects/log-partition";
export { ConsumerGroup } from "../../durable-objects/consumer-group";
export { TaskObject } from "../../durable-objects/task-object";
export { Coordinator } from "../../durable-objects/coordinator";
export { RestoreWorker } from "../../durable-objects/restore-worker";

export default app satisfies ExportedHandler<import("../env").Env>;

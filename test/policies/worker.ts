/** The Worker of the `policies` test project (vitest's `main`), running test/policies/app.ts. */
import { streams } from "./app";

export class TaskObject extends streams.TaskObject {}
export class Coordinator extends streams.Coordinator {}
export class RestoreWorker extends streams.RestoreWorker {}
export class LogPartition extends streams.LogPartition {}
export class ConsumerGroup extends streams.ConsumerGroup {}
export class SubscriptionHub extends streams.SubscriptionHub {}

export default streams;

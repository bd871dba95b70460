/**
 * The third example as a Worker: `npm run start:shop` serves it with examples/shop/wrangler.toml.
 */
import { streams } from "./app";

export class TaskObject extends streams.TaskObject {}
export class Coordinator extends streams.Coordinator {}
export class RestoreWorker extends streams.RestoreWorker {}
export class LogPartition extends streams.LogPartition {}
export class ConsumerGroup extends streams.ConsumerGroup {}
export class SubscriptionHub extends streams.SubscriptionHub {}

export default streams;

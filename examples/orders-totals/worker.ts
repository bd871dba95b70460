/**
 * The default example as a Worker (the root wrangler.toml, `npm start`). A Worker module exports
 * only its handler and its Durable Object classes (workerd refuses other exports); a user's
 * Worker module looks just like this.
 */
import { streams } from "./app";

export class TaskObject extends streams.TaskObject {}
export class Coordinator extends streams.Coordinator {}
export class RestoreWorker extends streams.RestoreWorker {}
export class LogPartition extends streams.LogPartition {}
export class ConsumerGroup extends streams.ConsumerGroup {}
export class SubscriptionHub extends streams.SubscriptionHub {}

export default streams;

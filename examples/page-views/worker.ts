/**
 * The second example as a Worker (page views per region per minute, joined with a region table):
 * `npm run start:page-views` serves it with examples/page-views/wrangler.toml.
 */
import { defineEdgeStreams } from "edge-streams";
import { pageViewsTopology } from "./topology";

const streams = defineEdgeStreams(pageViewsTopology());

/** The application this Worker runs (tests drive it with `TestDriver`). */
export const application = streams.application;

export class TaskObject extends streams.TaskObject {}
export class Coordinator extends streams.Coordinator {}
export class RestoreWorker extends streams.RestoreWorker {}
export class LogPartition extends streams.LogPartition {}
export class ConsumerGroup extends streams.ConsumerGroup {}

export default streams;

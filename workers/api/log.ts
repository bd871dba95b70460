/** Which log a request uses: the embedded Durable Object log, or a Kafka REST endpoint. */
import type { Config } from "../../src/config";
import { DurableLog } from "../../src/log/durable-log";
import type { Log } from "../../src/log/types";
import type { Env } from "../env";
import { topicCatalog } from "./topics";

export function openLog(env: Env, config: Config): Log {
  return new DurableLog(env.LOG_PARTITION, topicCatalog(config));
}

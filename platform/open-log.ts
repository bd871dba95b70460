/** Which log an application uses: the embedded Durable Object log, or a Kafka REST endpoint. */
import type { Config } from "../src/config";
import { UpstashLog } from "../src/kafka-rest/upstash-log";
import { DurableLog } from "../src/log/durable-log";
import type { TopicCatalog } from "../src/log/topics";
import type { Log } from "../src/log/types";

/** The one place a backend is chosen by name: everything else asks the log's `capabilities`. */
export function openLog<P>(partitions: { getByName(name: string): P }, config: Config, catalog: TopicCatalog): Log {
  if (config.LOG_BACKEND === "upstash") {
    // readConfig has checked that URL, username and password are all set for this backend.
    return new UpstashLog({
      url: config.UPSTASH_KAFKA_REST_URL!,
      username: config.UPSTASH_KAFKA_REST_USERNAME!,
      password: config.UPSTASH_KAFKA_REST_PASSWORD!,
      timeoutMs: config.UPSTASH_TIMEOUT_MS,
    });
  }
  return new DurableLog(partitions, catalog);
}

/**
 * The sinks of an application in one environment, as its log partitions run them
 * (src/connectors/partition-sinks.ts): each built from the Worker's bindings and vars (a Queue
 * producer, a webhook's URL and secret; `fetch` for the webhook's requests), its dead letters
 * appended through the application's log.
 */
import type { PartitionOptions } from "../durable-objects/log-partition";
import { buildSink, retryPolicy } from "../src/connectors/sink-config";
import { partitionForKey } from "../src/log/partitioner";
import { DEAD_LETTER_HEADERS } from "../src/streams/runtime/dead-letter";
import type { Host } from "./host";

export function sinkOptions(host: Host): Pick<PartitionOptions, "sinksOf" | "appendDeadLetter"> {
  const { application } = host;
  const env = host.env as unknown as Readonly<Record<string, unknown>>;
  return {
    sinksOf: (topic) =>
      application.sinksOf(topic).map(([name, definition]) => ({
        name,
        sink: buildSink(name, definition, env, (url, init) => fetch(url, init)),
        deadLetterTopic: definition.deadLetterTopic ?? application.topology.errorHandlers.deadLetterQueueTopic,
        retry: retryPolicy(definition),
      })),
    appendDeadLetter: async (topic, record) => {
      // Keyed as any record of the topic; an unkeyed one by the offset of the record it stands for.
      const key = record.key ?? record.headers?.find((h) => h.key === DEAD_LETTER_HEADERS.offset)?.value ?? "";
      await host.log.append({ topic, partition: partitionForKey(key, host.catalog.partitions(topic)) }, [record]);
    },
  };
}

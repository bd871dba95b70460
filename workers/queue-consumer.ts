/**
 * The Worker's `queue()` handler (docs/connectors.md): each Queue named in `defineEdgeStreams`'
 * `queues` feeds a topic. A delivered batch is planned (src/connectors/queue-source.ts), each
 * partition's records appended as one atomic batch that leaves out messages the partition appended
 * already (`Log.appendUnseen`: Queues delivers at least once), and a message is acknowledged only
 * once its append resolved — durable, as a Durable Object answers only after its writes are. A
 * failed append has its messages retried (the Queue's `retry_delay`, `max_retries` and
 * `dead_letter_queue` then apply, as Cloudflare documents); a message that cannot become a record
 * is dead-lettered and acknowledged, or retried when the application has no dead-letter topic.
 * If the invocation dies before it acknowledged, Queues delivers the batch again, and the
 * partitions leave out what they hold.
 */
import { planQueueBatch, type QueueSource } from "../src/connectors/queue-source";
import type { Application } from "../src/application";
import { ConfigError } from "../src/config";
import type { AppendResult, ProducerRecord, TopicPartition } from "../src/log/types";
import { inputSerdes } from "../src/streams/topology/input-encoding";
import { logEvent } from "../src/util/logging";
import type { EdgeStreamsEnv } from "../platform/bindings";
import { Host } from "../platform/host";
import { cachedAssignment } from "./api/cluster";

/** Queue name → where its messages go. */
export type QueueSources = Readonly<Record<string, QueueSource<never>>>;

/** The `queue()` handler of a Worker whose application is `applicationFor(env)`. */
export function queueConsumer(applicationFor: (env: EdgeStreamsEnv) => Application, sources: QueueSources) {
  return async (batch: MessageBatch, env: EdgeStreamsEnv): Promise<void> => {
    const source = sources[batch.queue] as QueueSource | undefined;
    if (!source) throw new ConfigError(`queue ${JSON.stringify(batch.queue)} is consumed by this Worker but not named in defineEdgeStreams' queues`);
    const host = Host.of(applicationFor(env), env);
    const { application, log } = host;
    const topics = await log.topics();
    const deadLetterTopic = source.deadLetterTopic ?? application.topology.errorHandlers.deadLetterQueueTopic;
    checkTopics(batch.queue, application, topics, source.topic, deadLetterTopic);
    // A remote log starts no tasks: as HTTP ingest does, the first append of the isolate gets the assignment first.
    if (!log.capabilities.startsTasks) await cachedAssignment(host);
    const plan = planQueueBatch(batch.queue, batch.messages, source, {
      serdes: inputSerdes(application.topology, source.topic),
      partitions: (topic) => topics.get(topic)!,
      deadLetterTopic,
    });
    const byId = new Map(batch.messages.map((message) => [message.id, message]));
    // A log without appendUnseen (a remote one) appends redeliveries again: at least once.
    const append = (tp: TopicPartition, records: ProducerRecord[]): Promise<AppendResult & { duplicates?: number }> =>
      log.appendUnseen ? log.appendUnseen(tp, records) : log.append(tp, records);
    const appended = await Promise.allSettled(plan.appends.map(({ topic, partition, records }) => append({ topic, partition }, records)));
    appended.forEach((outcome, i) => {
      const { topic, partition, messageIds } = plan.appends[i]!;
      if (outcome.status === "rejected") {
        logEvent("queue.append-failed", { queue: batch.queue, topic, partition, messages: messageIds.length, error: String(outcome.reason) }, "warn");
        for (const id of messageIds) byId.get(id)!.retry();
        return;
      }
      const duplicates = outcome.value.duplicates ?? 0;
      if (duplicates > 0) logEvent("queue.redelivered", { queue: batch.queue, topic, partition, messages: messageIds.length, duplicates }, "debug");
      for (const id of messageIds) byId.get(id)!.ack();
    });
    for (const { id, error } of plan.unplaced) {
      logEvent("queue.message-refused", { queue: batch.queue, topic: source.topic, message: id, error: error.message }, "warn");
      byId.get(id)!.retry();
    }
  };
}

/**
 * The topics a source writes must exist, and the input may not be one the application writes
 * itself (a changelog, a repartition topic, an output), as HTTP ingest refuses them, unless the
 * application opened it (`openTopics`).
 */
function checkTopics(queue: string, application: Application, topics: ReadonlyMap<string, number>, topic: string, deadLetterTopic: string | undefined): void {
  for (const t of [topic, deadLetterTopic]) {
    if (t !== undefined && !topics.has(t)) throw new ConfigError(`queue ${JSON.stringify(queue)}: unknown topic ${JSON.stringify(t)}`);
  }
  if (application.writtenTopics.has(topic)) {
    throw new ConfigError(`queue ${JSON.stringify(queue)}: the application writes ${topic} itself: only its tasks may, unless openTopics names it`);
  }
}

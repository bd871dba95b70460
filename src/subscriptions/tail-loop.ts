/**
 * One topic tail's stream (docs/subscriptions.md): every record of a topic partition from an
 * offset on, as `kafka-console-consumer` prints them. First `event: start` with the offset the
 * stream starts at, then each record as the `/kafka` dialect renders it (src/kafka-rest/fetch.ts),
 * its offset as the event's `id` (a client reconnecting with it continues at the next offset).
 * Offsets the partition no longer holds (retention, compaction, a start below the log's) are
 * skipped with `event: gap` naming them. Reading, back-pressure and keep-alives: follow-log.ts.
 *
 * Platform-free: the Worker gives it the log and the stream (workers/api/routes/tail.ts).
 */
import { toMessage } from "../kafka-rest/fetch";
import type { TopicPartition } from "../log/types";
import { type FollowedLog, followLog, type StreamPorts, Subscriber } from "./follow-log";

/** An event of a tail, as server-sent events carry it. */
export interface TailEvent {
  readonly event?: "start" | "gap";
  readonly data: string;
  readonly id?: string;
}

export interface TailPorts extends StreamPorts, FollowedLog {
  send(event: TailEvent): Promise<void>;
}

/** Sends the partition's records from offset `from` on, until the subscriber goes away. */
export async function runTail(tp: TopicPartition, from: number, ports: TailPorts): Promise<void> {
  const subscriber = new Subscriber(ports);
  await subscriber.send({ event: "start", data: JSON.stringify({ topic: tp.topic, partition: tp.partition, from }) });
  await followLog(
    {
      partitions: [tp.partition],
      positions: new Map([[tp.partition, from]]),
      record: (_partition, record) => subscriber.send({ data: JSON.stringify(toMessage(tp, record)), id: String(record.offset) }),
      gap: async (_partition, gapFrom, to) => {
        ports.recovered?.("gap");
        await subscriber.send({ event: "gap", data: JSON.stringify({ from: gapFrom, to }) });
        return "resume";
      },
    },
    ports,
    subscriber,
  );
}

/**
 * Outbox rows as an earlier version of the task committed them, for tests of what the log refuses
 * at send time: records are checked where they are made now, so a record the log refuses reaches
 * an outbox only from before (an upgrade finds it there) or from a log with stricter rules. A row
 * is planted the way a commit writes it — the next commit id, the partition's next producer
 * sequence, in one transaction — and the instance must be restarted to read it (a running one
 * keeps its outbox in memory): as an upgrade restarts every object.
 */
import { MAX_RECORD_BYTES } from "../../src/log/records";
import type { ProducerRecord, TopicPartition } from "../../src/log/types";
import { CHANGELOG_PHASE, OUTPUT_PHASE, Outbox } from "../../src/task/outbox";
import { TaskStorage } from "../../src/task/task-storage";

export function plantOutboxRow(
  storage: DurableObjectStorage,
  tp: TopicPartition,
  records: readonly ProducerRecord[],
  phase: "output" | "changelog" = "output",
): void {
  const tasks = new TaskStorage(storage);
  const outbox = new Outbox(tasks);
  tasks.transaction(() => {
    const meta = tasks.meta();
    if (!meta) throw new Error("the instance has no assignment");
    outbox.add(meta.nextCommit, phase === "output" ? OUTPUT_PHASE : CHANGELOG_PHASE, tp, records);
    tasks.writeMeta({ ...meta, nextCommit: meta.nextCommit + 1 });
  });
}

/**
 * A dead letter as issue #31 met it: a 999,990-byte order with the headers the earlier dead
 * letters carried, over 1,000,000 bytes in all (1,000,249 there, with a longer message) — more
 * than the log takes.
 */
export function oversizedDeadLetter(key: string, origin: { topic: string; partition: number; offset: number }): ProducerRecord {
  const headers = [
    { key: "edge-streams.dlq.error", value: `cannot deserialize the value of ${origin.topic}/${origin.partition} offset ${origin.offset}: invalid JSON` },
    { key: "edge-streams.dlq.topic", value: origin.topic },
    { key: "edge-streams.dlq.partition", value: String(origin.partition) },
    { key: "edge-streams.dlq.offset", value: String(origin.offset) },
  ];
  const record = { key, value: "x".repeat(999_990), headers, timestamp: 1_000 };
  const bytes = key.length + record.value.length + headers.reduce((n, h) => n + h.key.length + h.value.length, 0);
  if (bytes <= MAX_RECORD_BYTES) throw new Error(`the planted dead letter (${bytes} bytes) would fit`);
  return record;
}

/**
 * A batch of the outbox that the log refuses when it is sent (RecordTooLarge, InvalidRecord):
 * records are checked where they are made, so this is a record the local checks let through — a
 * row an earlier version committed (an oversized dead letter, issue #31), or a log with stricter
 * rules. Sending it again would fail the same way for ever; instead the production handler decides
 * for each record the log refuses (Kafka's `recordSendError`):
 * - `"fail"`: the task stops with the reason, at the source record when the record names it.
 * - continue: the record is dropped (counted); a dead letter topic gets it with Kafka's error
 *   headers when the handler says so — and if that dead letter cannot be written either, the
 *   task stops.
 * A refused changelog record always stops the task: dropping it would leave the store holding a
 * write its changelog lacks. What is decided here is applied by `Outbox.repair`, in one storage
 * transaction, so the send converges whatever crashes: before it, the same batch is refused again
 * and decided again; after it, the outbox holds only what the log takes.
 */
import { checkBatch } from "../log/records";
import { partitionForKey } from "../log/partitioner";
import { TOMBSTONE_HEADER } from "../log/stored-batch";
import type { ProducerRecord, TopicPartition } from "../log/types";
import { decide, type ErrorHandlerContext } from "../streams/error-handlers";
import { messageOf, type RecordOrigin } from "../streams/errors";
import { deadLetterOrigin, deadLetterRecord } from "../streams/runtime/dead-letter";
import { positionFromHeaders } from "../streams/runtime/position-header";
import type { Topology } from "../streams/topology/topology";
import type { OutboxBatch } from "./outbox";
import { topicPartition } from "../names";

/** What replaces the refused batch: the records the log takes (at the batch's sequence), and dead letters to add. */
export interface RefusalRepair {
  readonly keep: readonly ProducerRecord[];
  readonly deadLetters: readonly { readonly tp: TopicPartition; readonly records: readonly ProducerRecord[] }[];
  readonly continued: number;
  readonly deadLettered: number;
}

export type RefusalOutcome = { readonly repair: RefusalRepair } | { readonly fail: string; readonly at?: RecordOrigin };

export interface RefusalDeps {
  readonly taskId: string;
  readonly topology: Topology;
  readonly partitions: (topic: string) => number;
  /** The batch belongs to a changelog of the task's stores. */
  readonly changelog: boolean;
  readonly now: number;
}

/** The production handler's decision for each record of `batch` the log refuses (it refused the batch with `error`). */
export function decideRefusal(batch: OutboxBatch, error: Error, deps: RefusalDeps): RefusalOutcome {
  const where = topicPartition(batch);
  const refused = batch.records.map((record) => refusalOf(record, deps.now));
  if (!refused.some((e) => e !== undefined)) {
    return { fail: `the log refused a batch for ${where} (${error.message}), though each of its records keeps the log's rules as known here` };
  }
  const { production, deadLetterQueueTopic } = deps.topology.errorHandlers;
  const declared = deps.topology.topics();
  const keep: ProducerRecord[] = [];
  const letters = new Map<string, { tp: TopicPartition; records: ProducerRecord[] }>();
  let continued = 0;
  for (const [i, record] of batch.records.entries()) {
    const refusal = refused[i];
    if (refusal === undefined) {
      keep.push(record);
      continue;
    }
    const headers = record.headers ?? [];
    const at = positionFromHeaders(headers) ?? deadLetterOrigin(headers);
    const failed = `the log refused a record for ${where}: ${refusal.message}`;
    if (deps.changelog) return { fail: `${failed} (a changelog must hold every write of its store)`, at };
    const context = contextOfRefused(deps.taskId, record, at);
    const tombstone = headers.some((h) => h.key === TOMBSTONE_HEADER);
    const view = {
      topic: batch.topic,
      partition: batch.partition,
      key: record.key,
      value: tombstone ? null : record.value,
      timestamp: context.timestamp,
      headers,
    };
    const decision = decide("production", production, context, refusal, view, deadLetterQueueTopic);
    if (decision.fail) {
      const handler = decision.handlerError ? `${decision.handlerError.message}: ${messageOf(decision.handlerError.cause)}; ` : "";
      return { fail: `production failed: ${handler}${failed}`, at };
    }
    if (decision.deadLetterTopic === undefined) {
      continued++;
      continue;
    }
    const topic = decision.deadLetterTopic;
    let letter: ProducerRecord;
    try {
      if (declared[topic] === undefined) throw new Error(`dead letter topic ${JSON.stringify(topic)} is not declared`);
      const built = deadLetterRecord(topic, context, record.key, record.value, refusal);
      letter = { key: built.key, value: built.value ?? "", timestamp: built.timestamp, headers: built.headers };
      const stillRefused = refusalOf(letter, deps.now);
      if (stillRefused) throw stillRefused;
    } catch (cannot) {
      return { fail: `production failed: ${failed}; its dead letter cannot be written: ${messageOf(cannot)}`, at };
    }
    const partition = letter.key === null ? 0 : partitionForKey(letter.key, deps.partitions(topic));
    const key = topicPartition({ topic, partition });
    const group = letters.get(key) ?? { tp: { topic, partition }, records: [] };
    group.records.push(letter);
    letters.set(key, group);
  }
  const deadLetters = [...letters.values()];
  return { repair: { keep, deadLetters, continued, deadLettered: deadLetters.reduce((n, g) => n + g.records.length, 0) } };
}

/** Why the log refuses `record` by its rules (`checkBatch`), if it does. */
function refusalOf(record: ProducerRecord, now: number): Error | undefined {
  try {
    checkBatch([record], now);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

/** A refused record's context: its own headers and timestamp, and the source record it names (a changelog's position, a dead letter's origin), if any. */
function contextOfRefused(taskId: string, record: ProducerRecord, at: RecordOrigin | undefined): ErrorHandlerContext {
  return {
    topic: at?.topic ?? null,
    partition: at?.partition ?? -1,
    offset: at?.offset ?? -1,
    headers: record.headers ?? [],
    processorNodeId: null,
    taskId,
    timestamp: record.timestamp ?? -1,
    sourceRawKey: null,
    sourceRawValue: null,
  };
}

/**
 * Sending a task instance's outbox: each commit's batches through the log's idempotent, fenced
 * producer (changelog before output), the acknowledged ones removed together with the checkpoint
 * they advance (I1), and the input progress committed to the group once everything it implies
 * has been sent (I5). A crash anywhere resends the same batches with the same sequences.
 */
import type { Application } from "../application";
import { ProducerFenced } from "../log/errors";
import { REMEMBERED_BATCHES, type AppendResult, type Log, type ProducerId } from "../log/types";
import { checkpointAfterAck } from "./checkpoint";
import { CHANGELOG_PHASE, type Outbox, type OutboxBatch } from "./outbox";
import type { CommitStep } from "./protocol";
import { positionKey, type InputPositions } from "./record-collector";
import type { TaskMeta, TaskStorage } from "./task-storage";

/** Incarnations per epoch in the producer epoch: epoch * this + incarnation stays monotonic. */
const INCARNATIONS_PER_EPOCH = 1_000_000;

/**
 * A task's input progress goes to the group at most this often (Kafka Streams commits offsets
 * every `commit.interval.ms`, 100 ms under exactly-once); an idle task's alarm comes back for what
 * is left (see `offsetsDueAt`), and a revocation or wipe commits at once. The group's offset only
 * says what a reader of the group may skip: the instance resumes from its own positions, and a
 * wiped one from those its restored changelog carries (I5), so a later commit loses and doubles
 * nothing.
 */
export const OFFSET_COMMIT_INTERVAL_MS = 100;

/** When the input progress goes to the group: `now`, or only once `OFFSET_COMMIT_INTERVAL_MS` passed since the last time (`due`). */
export type OffsetCommit = "now" | "due";

export interface OutboxSenderDeps {
  readonly application: Application;
  readonly log: Log;
  readonly storage: TaskStorage;
  readonly outbox: Outbox;
  /** A test hook at the commit steps `mid-send` and `after-send` (see `TaskOptions.onCommitStep`). */
  readonly onCommitStep?: (step: CommitStep) => void | Promise<void>;
  /** Stops the instance: a fenced send means a newer instance owns the task. */
  readonly fail: (reason: string) => void;
  readonly clock?: () => number;
}

export class OutboxSender {
  /** When input progress last went to the group (in memory: after a restart the first commit is due at once). */
  private offsetsCommittedAt = -Infinity;

  constructor(private readonly deps: OutboxSenderDeps) {}

  /**
   * Sends the outbox, oldest commit first and each commit's changelog before its output, through
   * the idempotent producer. The acknowledged batches leave the outbox together, in one
   * transaction that also advances the checkpoints — only if the instance was not wiped or
   * reassigned meanwhile. (Until then a crash resends them, and the log answers with the original
   * offsets: recording each group's acknowledgement before sending the next would cost a storage
   * commit per group and buy nothing.) The exception: the log answers retries only for the last
   * REMEMBERED_BATCHES batches of a partition, so no partition ever has more sent but unrecorded
   * batches than that — as Kafka's idempotent producer keeps at most five requests in flight.
   */
  async flush(offsets: OffsetCommit = "now"): Promise<void> {
    const meta = this.deps.storage.meta();
    if (meta) {
      const sent = new Set<number>();
      let acked: { batch: OutboxBatch; result: AppendResult }[] = [];
      const unrecorded = new Map<string, number>();
      let failure: PromiseRejectedResult | undefined;
      for (;;) {
        const group = this.deps.outbox.nextGroup(sent);
        if (group.length === 0) break;
        let window = sendable(group, unrecorded);
        if (window.length === 0) {
          this.recordAcks(meta, acked);
          acked = [];
          unrecorded.clear();
          window = sendable(group, unrecorded);
        }
        const results = await Promise.allSettled(window.map((batch) => this.send(batch, this.producer(meta, batch.sequence))));
        await this.deps.onCommitStep?.("mid-send");
        window.forEach((batch, i) => {
          const result = results[i]!;
          sent.add(batch.id);
          unrecorded.set(positionKey(batch), (unrecorded.get(positionKey(batch)) ?? 0) + 1);
          if (result.status === "fulfilled") acked.push({ batch, result: result.value });
        });
        failure = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
        if (failure) break;
      }
      if (acked.length > 0) this.recordAcks(meta, acked);
      if (failure) {
        if (failure.reason instanceof ProducerFenced) this.deps.fail(`fenced: ${failure.reason.message}`);
        throw failure.reason;
      }
    }
    await this.deps.onCommitStep?.("after-send");
    await this.commitInputOffsets(offsets);
  }

  /** Appends an outbox batch, as the string stored when the log takes batches encoded. */
  private send(batch: OutboxBatch, producer: ProducerId): Promise<AppendResult> {
    const log = this.deps.log;
    if (batch.encoded !== undefined && log.appendEncoded) return log.appendEncoded(batch, batch.encoded, producer);
    return log.append(batch, batch.records, producer);
  }

  /** Removes acknowledged batches from the outbox and moves the checkpoints of acknowledged changelog batches. */
  private recordAcks(meta: TaskMeta, acked: readonly { batch: OutboxBatch; result: AppendResult }[]): void {
    this.deps.storage.transaction(() => {
      const now = this.deps.storage.meta();
      if (!now || now.incarnation !== meta.incarnation || now.epoch !== meta.epoch) return;
      for (const { batch, result } of acked) {
        this.deps.outbox.remove(batch.id);
        if (batch.phase !== CHANGELOG_PHASE) continue;
        const checkpoint = checkpointAfterAck(
          { incarnation: now.incarnation, checkpoint: this.deps.storage.checkpoint(batch) },
          { incarnation: meta.incarnation, endOffset: result.baseOffset + result.count },
        );
        if (checkpoint !== null) this.deps.storage.writeCheckpoint(batch, checkpoint);
      }
    });
  }

  /**
   * Records the input progress in the log as the group's committed offset, once everything it
   * implies has been sent, and notes what the group holds. Only positions beyond what the group
   * is known to hold are committed; the epoch fences commits of revoked and zombie instances.
   */
  async commitInputOffsets(when: OffsetCommit = "now"): Promise<void> {
    const meta = this.deps.storage.meta();
    if (!meta || meta.role !== "active" || meta.state !== "RUNNING" || !this.deps.outbox.isEmpty()) return;
    const now = (this.deps.clock ?? Date.now)();
    if (when === "due" && now - this.offsetsCommittedAt < OFFSET_COMMIT_INTERVAL_MS) return;
    const pending = this.uncommittedPositions();
    const partitions = Object.keys(pending);
    if (partitions.length === 0) return;
    // Positions still at 0 are nothing processed: they wait for a commit that is asked for.
    if (when === "due" && !Object.values(pending).some((offset) => offset > 0)) return;
    this.offsetsCommittedAt = now;
    const epoch = this.producer(meta, 0).epoch;
    await Promise.all(
      this.deps.application
        .inputPartitions(meta.taskId)
        // A global table's position is kept by its changelog alone (see Application.isGlobalInput).
        .filter((tp) => pending[positionKey(tp)] !== undefined && !this.deps.application.isGlobalInput(meta.taskId, tp.topic))
        .map((tp) =>
          this.deps.log.commitOffset(this.deps.application.groupId, tp, { offset: pending[positionKey(tp)]!, metadata: `epoch=${meta.epoch}`, epoch }),
        ),
    );
    this.deps.storage.transaction(() => {
      const now = this.deps.storage.meta();
      if (now && now.incarnation === meta.incarnation && now.epoch === meta.epoch) this.deps.storage.writeCommitted(pending);
    });
  }

  /** Input positions processed and sent but not yet committed to the group. */
  private uncommittedPositions(): InputPositions {
    const positions = this.deps.storage.positions();
    const committed = this.deps.storage.committedPositions();
    return Object.fromEntries(Object.entries(positions).filter(([key, offset]) => offset > (committed[key] ?? -1)));
  }

  /** Processed input the group does not know of yet (see `commitInputOffsets`). */
  hasUncommittedInput(): boolean {
    return Object.keys(this.uncommittedPositions()).length > 0;
  }

  /** When the input progress not yet committed is due to go to the group; undefined when there is none. */
  offsetsDueAt(): number | undefined {
    // Positions still at 0 are nothing processed: not worth an alarm.
    if (!this.deps.outbox.isEmpty() || !Object.values(this.uncommittedPositions()).some((offset) => offset > 0)) return undefined;
    return Math.max(this.offsetsCommittedAt + OFFSET_COMMIT_INTERVAL_MS, 0);
  }

  producer(meta: TaskMeta, sequence: number): ProducerId {
    return {
      producerId: `${this.deps.application.applicationId}-${meta.taskId}`,
      epoch: meta.epoch * INCARNATIONS_PER_EPOCH + meta.incarnation,
      sequence,
    };
  }

  /**
   * Before a wipe: delivers what earlier commits left in the outbox, and commits the input
   * positions they imply. Part of a commit may already be in the log (its changelog is sent
   * before its output, and a crash can come in between), and restoration brings that part back
   * into the store, so the rest must follow, not be dropped. Records that wrote no store (dead
   * letters, filtered records) are covered only by the group's committed offset: unless it is
   * committed now, they would be processed, and their output sent, again after the wipe. A
   * fenced (zombie) instance's outbox is dropped by the wipe instead: a newer instance owns the
   * task. A log that cannot take them fails the wipe, which is tried again later.
   */
  async deliverBeforeWipe(): Promise<void> {
    try {
      if (!this.deps.outbox.isEmpty()) await this.flush();
      else await this.commitInputOffsets();
    } catch (error) {
      if (!(error instanceof ProducerFenced)) throw error;
    }
  }
}

/**
 * The longest prefix of `group` (oldest first) that keeps every partition's sent but unrecorded
 * batches, `unrecorded` included, within what the log remembers for retries. Empty only when
 * some partition is already at the limit: its acknowledgements must be recorded first.
 */
export function sendable<B extends { topic: string; partition: number }>(
  group: readonly B[],
  unrecorded: ReadonlyMap<string, number>,
  limit = REMEMBERED_BATCHES,
): B[] {
  const counts = new Map(unrecorded);
  const window: B[] = [];
  for (const batch of group) {
    const key = positionKey(batch);
    const count = (counts.get(key) ?? 0) + 1;
    if (count > limit) break;
    counts.set(key, count);
    window.push(batch);
  }
  return window;
}

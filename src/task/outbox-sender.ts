/**
 * Sending a task instance's outbox: each commit's batches through the log's idempotent, fenced
 * producer (changelog before output), the acknowledged ones removed together with the checkpoint
 * they advance (I1), and the input progress committed to the group once everything it implies
 * has been sent (I5). A crash anywhere resends the same batches with the same sequences.
 */
import type { Application } from "../application";
import { ProducerFenced } from "../log/errors";
import { messageOf, type RecordOrigin } from "../streams/errors";
import type { AppendResult, Log, ProducerId, TopicPartition } from "../log/types";
import { checkpointAfterAck } from "./checkpoint";
import { CHANGELOG_PHASE, type Outbox, type OutboxBatch } from "./outbox";
import type { CommitStep } from "./protocol";
import type { InputPositions } from "./record-collector";
import { decideRefusal } from "./refused-records";
import { SendStopped, sendErrorKind } from "./send-errors";
import type { TaskMeta, TaskStorage } from "./task-storage";
import { topicPartition } from "../names";
import { WatchHold } from "./watch-hold";
import { sendable } from "./send-window";
import { taskProducer } from "./task-producer";

/**
 * The default commit interval (`COMMIT_INTERVAL_MS`): how often a task under load commits its
 * processing (Kafka Streams commits every `commit.interval.ms`, 100 ms under exactly-once).
 */
export const OFFSET_COMMIT_INTERVAL_MS = 100;

/**
 * How long progress may stay owed (see `Owed`: input the group has not taken, acknowledgements not
 * written down) with no commit to take it; a revocation, wipe, reset or echo asks for it at once.
 * A group commit and a book row per partition append cost a request and two rows (issue #33). The
 * group's offset is not the truth: the instance resumes from its book, a wiped one commits first (I5).
 */
export const RECORD_OWED_MS = 10_000;

/** When the input progress goes to the group: `now`, or only once it has been owed for `RECORD_OWED_MS` (`due`). */
export type OffsetCommit = "now" | "due";

/** When what is owed (see `Owed`) is written down: `now`, in a transaction of its own, or `with-next-commit`. */
export type OwedRecord = "now" | "with-next-commit";

export interface OutboxSenderDeps {
  readonly application: Application;
  readonly log: Log;
  readonly storage: TaskStorage;
  readonly outbox: Outbox;
  /** A test hook at the commit steps `mid-send` and `after-send` (see `TaskOptions.onCommitStep`). */
  readonly onCommitStep?: (step: CommitStep) => void | Promise<void>;
  /** Stops the instance (a fenced send: a newer instance owns the task; a record the log refuses and the production handler says fail), at the source record when known. */
  readonly fail: (reason: string, at?: RecordOrigin) => void;
  /** Records the log refused were handled by going on: so many dropped, so many dead-lettered (now in the outbox). */
  readonly onRefusedRecords?: (continued: number, deadLettered: number) => void;
  readonly clock?: () => number;
  /** How long progress may stay owed when no commit takes it (default `RECORD_OWED_MS`). */
  readonly owedMs?: number;
}

/** A batch sent and acknowledged, for the instance (incarnation and epoch) that sent it. */
interface Ack {
  readonly batch: OutboxBatch;
  readonly result: AppendResult;
  readonly incarnation: number;
  readonly epoch: number;
}

/** Input offsets the group took from the instance (incarnation and epoch) that committed them. */
interface GroupCommit {
  readonly positions: InputPositions;
  readonly incarnation: number;
  readonly epoch: number;
}

/**
 * What the log and the group acknowledged and the instance has not written down yet: batches
 * acknowledged (their removal from the outbox, the checkpoints they advance) and the offsets the
 * group holds. Written by a transaction the instance makes anyway (`writeOwed`), or by one of its
 * own (`recordOwed`). Lost in a crash, each is only done again: the batches are resent and
 * answered as retries, the offsets committed again.
 */
export interface Owed {
  readonly acks: readonly Ack[];
  readonly committed: GroupCommit | undefined;
}

export class OutboxSender {
  /** Since when progress is owed (see `RECORD_OWED_MS`); undefined: nothing owed as last looked. In memory: after a restart it is owed from the first look. */
  private owedSince: number | undefined;
  /**
   * Batches acknowledged whose removal from the outbox (and the checkpoint they advance) is not
   * written yet: it is written with the next commit, or the next offset commit, not in a storage
   * commit of its own. In memory only: after a restart (or a rolled-back transaction) the rows are
   * sent again, and the log answers them as retries.
   */
  private readonly acked = new Map<number, Ack>();
  /** Offsets the group took that are not written down yet (see `Owed`); in memory only, as `acked`. */
  private committed: GroupCommit | undefined;
  /** Whether a partition sent to is watched, as appends answered (watch-hold.ts). */
  private readonly watchHold = new WatchHold();

  constructor(private readonly deps: OutboxSenderDeps) {}

  private get owedMs(): number {
    return this.deps.owedMs ?? RECORD_OWED_MS;
  }

  private now(): number {
    return (this.deps.clock ?? Date.now)();
  }

  /** Whether anything is owed: acknowledgements or group offsets not written down, or processed input the group has not taken. */
  private owedAnything(): boolean {
    return this.owes || processedAny(this.uncommittedPositions());
  }

  /** When what is owed is due (starting the clock when something is newly owed); undefined: nothing owed. */
  private owedDueAt(now: number): number | undefined {
    if (!this.owedAnything()) {
      this.owedSince = undefined;
      return undefined;
    }
    this.owedSince ??= now;
    return this.owedSince + this.owedMs;
  }

  /**
   * Someone asks for the progress owed now: a partition's echo (its group offset behind its end
   * keeps waking the instance). The next look commits it, rather than another echo later.
   */
  owedDueNow(): void {
    if (this.owedAnything()) this.owedSince = -Infinity;
  }

  /**
   * Sends the outbox, oldest commit first and each commit's changelog before its output, through
   * the idempotent producer. The acknowledged batches leave the outbox, and advance the
   * checkpoints, in the next transaction the instance makes anyway — its next commit, or its next
   * offset commit — or at once when `offsets` is `now` (a revocation, a wipe, a new assignment),
   * and only if the instance was not wiped or reassigned meanwhile. (Until then a crash resends
   * them, and the log answers with the original offsets: a storage commit per acknowledgement
   * would buy nothing.) A batch the log refuses goes to the production handler (see
   * `handleRefusal`); a send that fails otherwise throws (the caller backs off: send-errors.ts),
   * after stopping the instance when retrying cannot help (fenced, a sequence the log holds other
   * records under). A refusal that stops the instance throws `SendStopped`.
   */
  async flush(offsets: OffsetCommit = "now", record: OwedRecord = "now"): Promise<void> {
    const meta = this.deps.storage.meta();
    if (meta) {
      for (;;) {
        const failure = await this.sendOutbox(meta);
        // Asked for now (revocation, wipe, a new assignment): recorded now; else with the next commit.
        if (offsets === "now" && this.acked.size > 0) this.recordOwed();
        if (!failure) break;
        const kind = sendErrorKind(failure.error);
        if (kind === "fenced") this.deps.fail(`fenced: ${messageOf(failure.error)}`);
        if (kind === "fatal") this.deps.fail(`the log cannot take the outbox: ${messageOf(failure.error)}`);
        // A refusal decided and repaired: what is left is sent again at once.
        if (kind === "refused" && this.handleRefusal(meta, failure.batch, failure.error as Error)) continue;
        throw kind === "refused" ? new SendStopped(this.deps.storage.meta()?.failure ?? messageOf(failure.error)) : failure.error;
      }
    }
    await this.deps.onCommitStep?.("after-send");
    await this.commitInputOffsets(offsets, record);
  }

  /**
   * Sends the outbox, oldest commit first, until it is sent or a send fails (its batch and
   * error). The log answers retries only for the last REMEMBERED_BATCHES batches
   * of a partition, so no partition ever has more sent but unrecorded batches than that — as
   * Kafka's idempotent producer keeps at most five requests in flight.
   */
  private async sendOutbox(meta: TaskMeta): Promise<{ batch: OutboxBatch; error: unknown } | undefined> {
    // Acknowledged earlier but not recorded: not sent again, and counted against the log's window.
    const sent = new Set<number>(this.acked.keys());
    const unrecorded = new Map<string, number>();
    for (const { batch } of this.acked.values()) unrecorded.set(topicPartition(batch), (unrecorded.get(topicPartition(batch)) ?? 0) + 1);
    for (;;) {
      const group = this.deps.outbox.nextGroup(sent);
      if (group.length === 0) return undefined;
      let window = sendable(group, unrecorded);
      if (window.length === 0) {
        this.recordOwed();
        unrecorded.clear();
        window = sendable(group, unrecorded);
      }
      this.deps.outbox.seal(window[0]!.commitId);
      const results = await Promise.allSettled(window.map((batch) => this.send(batch, this.producer(meta, batch.sequence))));
      await this.deps.onCommitStep?.("mid-send");
      window.forEach((batch, i) => {
        const result = results[i]!;
        sent.add(batch.id);
        unrecorded.set(topicPartition(batch), (unrecorded.get(topicPartition(batch)) ?? 0) + 1);
        if (result.status === "fulfilled") this.acked.set(batch.id, { batch, result: result.value, incarnation: meta.incarnation, epoch: meta.epoch });
      });
      // A refusal first: a batch behind a refused one of its partition fails only by its sequence.
      const failed = window.flatMap((batch, i) => {
        const result = results[i]!;
        return result.status === "rejected" ? [{ batch, error: result.reason as unknown }] : [];
      });
      const failure = failed.find((f) => sendErrorKind(f.error) === "refused") ?? failed[0];
      if (failure) return failure;
    }
  }

  /**
   * The log refuses records of `batch`: the production handler decides for each (see
   * refused-records.ts). A decision to go on is applied to the outbox in one transaction —
   * only if the instance is still the one that sent it — and true returned: the rest is sent
   * again. Otherwise the instance stops with the reason.
   */
  private handleRefusal(meta: TaskMeta, batch: OutboxBatch, error: Error): boolean {
    const { application } = this.deps;
    const outcome = decideRefusal(batch, error, {
      taskId: meta.taskId,
      topology: application.topology,
      partitions: (topic) => application.catalog.partitions(topic),
      changelog: batch.phase === CHANGELOG_PHASE,
      now: (this.deps.clock ?? Date.now)(),
    });
    if ("fail" in outcome) {
      this.deps.fail(outcome.fail, outcome.at);
      return false;
    }
    const { keep, deadLetters, continued, deadLettered } = outcome.repair;
    let repaired = false;
    this.deps.storage.transaction(() => {
      const now = this.deps.storage.meta();
      if (now && sameInstance(now, meta)) repaired = this.deps.outbox.repair(batch, keep, deadLetters);
    });
    if (repaired) this.deps.onRefusedRecords?.(continued, deadLettered);
    return repaired;
  }

  /** Appends an outbox batch, as the string stored when the log takes batches encoded. */
  private async send(batch: OutboxBatch, producer: ProducerId): Promise<AppendResult> {
    const log = this.deps.log;
    const result =
      batch.encoded !== undefined && log.appendEncoded
        ? await log.appendEncoded(batch, batch.encoded.text, producer, batch.encoded.measure)
        : await log.append(batch, batch.records, producer);
    this.watchHold.heard(result, this.now());
    return result;
  }

  /** Whether live subscribers wait on a partition this instance sends to (watch-hold.ts). */
  watched(now: number): boolean {
    return this.watchHold.watched(now);
  }

  /** Something acknowledged is not written down yet (see `Owed`). */
  private get owes(): boolean {
    return this.acked.size > 0 || this.committed !== undefined;
  }

  /** Writes down everything owed, in a transaction of its own (none when nothing is owed). */
  private recordOwed(): void {
    if (!this.owes) return;
    const owed = this.owed();
    this.deps.storage.transaction(() => this.writeOwed(owed));
    this.forgetOwed(owed);
  }

  /** What is owed now (see `Owed`), for `writeOwed` in the caller's transaction. */
  owed(): Owed {
    return { acks: [...this.acked.values()], committed: this.committed };
  }

  /**
   * Inside the caller's transaction: removes acknowledged batches from the outbox, moves the
   * checkpoints of acknowledged changelog batches (I1), and notes the offsets the group holds —
   * only those of the instance as it still is. Call `forgetOwed` once the transaction committed.
   */
  writeOwed({ acks, committed }: Owed): void {
    const now = this.deps.storage.meta();
    if (!now) return;
    if (committed && sameInstance(now, committed)) this.deps.storage.writeCommitted(committed.positions);
    for (const ack of acks) {
      if (!sameInstance(now, ack)) continue;
      const { batch, result, incarnation } = ack;
      this.deps.outbox.remove(batch.id);
      if (batch.phase !== CHANGELOG_PHASE) continue;
      const checkpoint = checkpointAfterAck(
        { incarnation: now.incarnation, checkpoint: this.deps.storage.checkpoint(batch) },
        { incarnation, endOffset: result.baseOffset + result.count },
      );
      if (checkpoint !== null) this.deps.storage.writeCheckpoint(batch, checkpoint);
    }
  }

  /** What `writeOwed` wrote is durable (its transaction committed). */
  forgetOwed({ acks, committed }: Owed): void {
    for (const { batch } of acks) this.acked.delete(batch.id);
    if (this.committed === committed) this.committed = undefined;
  }

  /** Forgets everything owed: the outbox was cleared, or a transaction rolled back (the rows are sent again, the offsets committed again). */
  forget(): void {
    this.acked.clear();
    this.committed = undefined;
  }

  /**
   * The end offsets of the changelog batches of `tp` the log acknowledged to `meta`'s instance and
   * the instance has not written down yet, with the ids of those batches (they are still in the
   * outbox, see `Owed`).
   */
  ackedChangelog(tp: TopicPartition, meta: TaskMeta): { ids: Set<number>; ends: number[] } {
    const ids = new Set<number>();
    const ends: number[] = [];
    for (const ack of this.acked.values()) {
      const { batch, result } = ack;
      if (batch.phase !== CHANGELOG_PHASE || batch.topic !== tp.topic || batch.partition !== tp.partition || !sameInstance(meta, ack)) continue;
      ids.add(batch.id);
      ends.push(result.baseOffset + result.count);
    }
    return { ids, ends };
  }

  /** Outbox batches not sent yet (or whose send failed). */
  unsentBatches(): number {
    return Math.max(this.deps.outbox.pendingBatches() - this.acked.size, 0);
  }

  /**
   * Records the input progress in the log as the group's committed offset, once everything it
   * implies has been sent, and notes what the group holds. Only positions beyond what the group
   * is known to hold are committed; the epoch fences commits of revoked and zombie instances.
   * What the group took, and the acknowledgements held, are written down now or with the next
   * processing commit (`record`); until then the instance knows them in memory.
   */
  async commitInputOffsets(when: OffsetCommit = "now", record: OwedRecord = "now"): Promise<void> {
    const meta = this.deps.storage.meta();
    if (!meta || meta.role !== "active" || meta.state !== "RUNNING" || this.unsentBatches() > 0) return;
    const now = this.now();
    let pending = this.uncommittedPositions();
    if (when === "due" && (this.owedDueAt(now) ?? Infinity) > now) {
      // Not due: input progress waits. Once the group holds everything, what is left owed (the
      // offsets it took, acknowledgements) is written down when asked: no commit is coming.
      if (processedAny(pending) || record !== "now" || !this.owes) return;
      pending = {};
    }
    if (when === "due" && !processedAny(pending)) pending = {};
    // Nothing for the group: only what is owed, which waits for the next commit when asked to.
    if (Object.keys(pending).length === 0 && (record === "with-next-commit" || !this.owes)) return;
    if (Object.keys(pending).length > 0) {
      const epoch = this.producer(meta, 0).epoch;
      await Promise.all(
        this.deps.application
          .inputPartitions(meta.taskId)
          // A global table's position is kept by its changelog alone (see Application.isGlobalInput).
          .filter((tp) => pending[topicPartition(tp)] !== undefined && !this.deps.application.isGlobalInput(meta.taskId, tp.topic))
          .map((tp) =>
            this.deps.log.commitOffset(this.deps.application.groupId, tp, { offset: pending[topicPartition(tp)]!, metadata: `epoch=${meta.epoch}`, epoch }),
          ),
      );
      const held = this.committed && sameInstance(meta, this.committed) ? this.committed.positions : {};
      this.committed = { positions: { ...held, ...pending }, incarnation: meta.incarnation, epoch: meta.epoch };
    }
    if (record === "now") this.recordOwed();
    // The group took everything processed: the clock starts again with what is owed next.
    if (Object.keys(pending).length > 0) this.owedSince = undefined;
  }

  /** The instance found no input: what is owed goes once due (see `commitInputOffsets`). */
  async caughtUp(record: OwedRecord = "now"): Promise<void> {
    await this.commitInputOffsets("due", record);
  }

  /** Per input partition, the offset the group is known to hold: as written down, or taken since (see `Owed`). */
  committedPositions(): InputPositions {
    const committed = this.deps.storage.committedPositions();
    const meta = this.deps.storage.meta();
    if (!this.committed || !meta || !sameInstance(meta, this.committed)) return committed;
    for (const [key, offset] of Object.entries(this.committed.positions)) committed[key] = Math.max(committed[key] ?? 0, offset);
    return committed;
  }

  /** Input positions processed and sent but not yet committed to the group. */
  private uncommittedPositions(): InputPositions {
    const positions = this.deps.storage.positions();
    const committed = this.committedPositions();
    return Object.fromEntries(Object.entries(positions).filter(([key, offset]) => offset > (committed[key] ?? -1)));
  }

  /** Processed input the group does not know of yet (see `commitInputOffsets`). */
  hasUncommittedInput(): boolean {
    return Object.keys(this.uncommittedPositions()).length > 0;
  }

  /**
   * Whether the log wakes this instance again while it owes progress, so that no alarm of its own
   * need stand behind the in-memory timer: some input written in its book is not committed to the
   * group on a partition where the group holds an offset. That partition's end lies beyond the
   * group's offset, so it echoes to its task readers while they lag, backing off without end
   * (src/log/echoes.ts), and an echo asks for everything owed at once (sends, offsets, acknowledgements).
   */
  echoedWhileOwed(): boolean {
    const meta = this.deps.storage.meta();
    if (!meta) return false;
    const pending = this.uncommittedPositions();
    const committed = this.committedPositions();
    return this.deps.application.inputPartitions(meta.taskId).some((tp) => {
      const key = topicPartition(tp);
      return pending[key] !== undefined && committed[key] !== undefined && !this.deps.application.isGlobalInput(meta.taskId, tp.topic);
    });
  }

  /** When the input progress not yet committed (and acknowledgements not yet recorded) are due (see `RECORD_OWED_MS`); undefined when there are none. */
  offsetsDueAt(): number | undefined {
    if (this.unsentBatches() > 0) return undefined;
    const at = this.owedDueAt(this.now());
    return at === undefined ? undefined : Math.max(at, 0);
  }

  producer(meta: TaskMeta, sequence: number): ProducerId {
    return taskProducer(this.deps.application.applicationId, meta, sequence);
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

/** Whether what was acknowledged to `owner` belongs to the instance as it is now. */
function sameInstance(now: TaskMeta, owner: { readonly incarnation: number; readonly epoch: number }): boolean {
  return now.incarnation === owner.incarnation && now.epoch === owner.epoch;
}

/**
 * Whether uncommitted positions hold any processed input: positions still at 0 are nothing
 * processed, so they wait for a commit that is asked for (not worth a timer).
 */
function processedAny(positions: InputPositions): boolean {
  return Object.values(positions).some((offset) => offset > 0);
}

/**
 * Restoration as the task instance sees it: restore batches applied at its position and
 * incarnation only (I4), the checkpoint moved to exactly the restored position (I1) in the same
 * transaction, and the turn to RUNNING once every changelog is restored to its end, resuming input
 * from what is restored (I5). The restore worker reads the changelogs; this is the applying side.
 */
import type { Application } from "../application";
import type { Log, TopicPartition } from "../log/types";
import { ReachedPositions } from "../streams/runtime/position-header";
import { restoredWrites } from "../streams/state/time-keyed-changelog";
import { canApplyRestoreBatch, checkpointAfterRestore } from "./checkpoint";
import { NotAssigned } from "./not-assigned";
import { recordsRead, type RestoreBatch, type RestoreReply } from "./protocol";
import { TOMBSTONE_HEADER, type InputPositions } from "./record-collector";
import type { SqliteStoreBackend } from "./sqlite-stores";
import { transition, type TaskRole } from "./state";
import type { TaskCounters } from "./task-metrics";
import type { TaskStorage } from "./task-storage";
import { topicPartition } from "../names";

/** The changelogs an instance registers with its restore worker, with where each stands. */
export interface RestoreRegistration {
  readonly incarnation: number;
  readonly epoch: number;
  readonly role: TaskRole;
  readonly changelogs: (TopicPartition & { store: string; checkpoint: number | null })[];
}

export interface RestorationDeps {
  readonly application: Application;
  readonly log: Log;
  readonly storage: TaskStorage;
  readonly stores: SqliteStoreBackend;
  readonly counters: TaskCounters;
}

export class Restoration {
  constructor(private readonly deps: RestorationDeps) {}

  /**
   * A restoring active task turns RUNNING once every changelog is restored to its end. (Restoring
   * itself is the restore worker's job; the task only checks whether it is done.)
   */
  async tryComplete(): Promise<boolean> {
    const meta = this.deps.storage.meta();
    if (meta?.state !== "RESTORING") return meta?.state === "RUNNING";
    const changelogs = this.deps.application.changelogPartitions(meta.taskId);
    const inputs = this.deps.application.inputPartitions(meta.taskId);
    // The group's offsets first, then the changelogs' ends: an offset is committed only after the
    // changelog records of what it covers were appended, so ends read after it include them all.
    const starts = await Promise.all(inputs.map((tp) => this.startingPosition(tp, this.deps.application.isGlobalInput(meta.taskId, tp.topic))));
    const ends = await Promise.all(changelogs.map(async (tp) => (await this.deps.log.offsets(tp)).latest));
    return this.deps.storage.transaction(() => {
      const now = this.deps.storage.meta();
      if (now?.state !== "RESTORING" || now.incarnation !== meta.incarnation) return false;
      const caughtUp = changelogs.every((tp, i) => (this.deps.storage.checkpoint(tp) ?? 0) >= ends[i]!);
      if (!caughtUp) return false;
      const positions = this.deps.storage.positions();
      const resumed: InputPositions = {};
      const committed: InputPositions = {};
      inputs.forEach((tp, i) => {
        const { position, committed: held } = starts[i]!;
        resumed[topicPartition(tp)] = Math.max(positions[topicPartition(tp)] ?? 0, position);
        if (held !== undefined) committed[topicPartition(tp)] = held;
      });
      this.deps.storage.writePositions(resumed);
      this.deps.storage.writeCommitted(committed);
      this.deps.storage.writeMeta({ ...now, state: transition(now.state, "RUNNING") });
      return true;
    });
  }

  /**
   * Where input resumes when the instance has no position of its own: the group's committed
   * offset (committed only after everything before it reached the changelog and outputs, so the
   * restored store reflects it; only task instances can commit for the group, under their epoch),
   * else the earliest kept offset.
   */
  private async startingPosition(tp: TopicPartition, global: boolean): Promise<{ position: number; committed?: number }> {
    // A global table's input resumes where its restored copy says (the positions its changelog carries), else from the start.
    if (global) return { position: (await this.deps.log.offsets(tp)).earliest };
    const committed = await this.deps.log.committedOffset(this.deps.application.groupId, tp);
    if (committed) return { position: committed.offset, committed: committed.offset };
    return { position: (await this.deps.log.offsets(tp)).earliest };
  }

  /**
   * Applies a restore batch (active RESTORING or standby UPDATING): the store writes, the new
   * checkpoint (= the restored position) and the input positions the records carry, in one
   * transaction — and only at the current position of the current incarnation (I4).
   */
  apply(batch: RestoreBatch): RestoreReply {
    const reply = this.applyNow(batch);
    if (reply.applied) (reply.state === "UPDATING" ? this.deps.counters.standbyUpdated : this.deps.counters.restored).add(recordsRead(batch));
    return reply;
  }

  private applyNow(batch: RestoreBatch): RestoreReply {
    return this.deps.storage.transaction(() => {
      const meta = this.deps.storage.meta();
      if (!meta) throw new NotAssigned();
      const checkpoint = this.deps.storage.checkpoint(batch);
      const reply = (applied: boolean, at: number | null): RestoreReply => ({
        applied,
        incarnation: meta.incarnation,
        epoch: meta.epoch,
        role: meta.role,
        state: meta.state,
        checkpoint: at,
        caughtUp: at !== null && at >= batch.end,
      });
      const restoring = meta.state === "RESTORING" || meta.state === "UPDATING";
      const store = this.deps.application.changelogPartitions(meta.taskId).find((c) => c.topic === batch.topic && c.partition === batch.partition);
      const staleEpoch = batch.epoch !== undefined && batch.epoch !== meta.epoch;
      const progress = { incarnation: meta.incarnation, checkpoint };
      if (!restoring || !store || staleEpoch || !canApplyRestoreBatch(progress, batch)) return reply(false, checkpoint);
      // A restore window says what its records named (those it compacted away too); a batch's records name them.
      const reached = new ReachedPositions();
      if (batch.positions) reached.merge(batch.positions);
      const writes = batch.records.flatMap((record) => {
        reached.add(record.headers);
        const tombstone = record.headers.some((h) => h.key === TOMBSTONE_HEADER);
        // The record's timestamp is the value's (the changelog carries it as Kafka's does); a
        // windowed store's record also stands for the rows derived from it (its index and meta rows).
        return restoredWrites(record.key ?? "", tombstone ? null : record.value, record.timestamp, record.headers);
      });
      this.deps.stores.keyValue(store.store).writeAll(writes);
      // Exactly the restored position (I1), by the rule every checkpoint follows.
      const restored = checkpointAfterRestore(progress, batch)!;
      this.deps.storage.writeCheckpoint(batch, restored);
      this.deps.storage.addReplayed(batch, recordsRead(batch));
      this.deps.storage.writePositions(reached.reached);
      return reply(true, restored);
    });
  }

  /** The changelogs restoration must bring up to date, with where each stands. */
  registration(): RestoreRegistration | undefined {
    const meta = this.deps.storage.meta();
    if (!meta || (meta.state !== "RESTORING" && meta.state !== "UPDATING")) return undefined;
    return {
      incarnation: meta.incarnation,
      epoch: meta.epoch,
      role: meta.role,
      changelogs: this.deps.application.changelogPartitions(meta.taskId).map((tp) => ({ ...tp, checkpoint: this.deps.storage.checkpoint(tp) })),
    };
  }
}

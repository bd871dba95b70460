/**
 * What crosses RPC to and from a task instance: the coordinator's assignments, the restore
 * worker's batches and the instance's replies, store reads, and the points where tests may kill
 * it. The task knows neither the coordinator nor the restore worker; they meet here.
 */
import type { LogRecord, TopicPartition } from "../log/types";
import type { RestoredBatch } from "./checkpoint";
import type { TaskDescription } from "./describe";
import type { TaskRole, TaskState } from "./state";
import type { TaskMeta } from "./task-storage";

/** An assignment from the coordinator: which task, where, in which role and epoch. */
export interface Assignment {
  readonly taskId: string;
  readonly placement: string;
  readonly role: TaskRole;
  readonly epoch: number;
  /** The application is shut down (an uncaught error's `"shutdown-application"`): the instance starts stopped, with this reason. */
  readonly halted?: string;
  /**
   * An operator lifted the application's shutdown: an active instance holding this assignment
   * clears its failure, whatever stopped it (its own error that asked for the shutdown too).
   */
  readonly resume?: true;
}

/**
 * What an instance answers an assignment or a revocation with: the state it took, from its own
 * storage alone (an answer that needed the log would fail, after the fact, with it).
 */
export type InstanceAck = Pick<TaskMeta, "taskId" | "placement" | "role" | "state" | "epoch" | "incarnation">;

export function instanceAck(meta: TaskMeta): InstanceAck {
  const { taskId, placement, role, state, epoch, incarnation } = meta;
  return { taskId, placement, role, state, epoch, incarnation };
}

/** Points of a commit where tests (and the crash fault route) can kill the instance. */
export type CommitStep = "before-commit" | "after-commit" | "mid-send" | "after-send";

export const COMMIT_STEPS: readonly CommitStep[] = ["before-commit", "after-commit", "mid-send", "after-send"];

/**
 * Points between the awaits of the instance's lifecycle operations where tests can kill it: each
 * operation must converge from every one of them without outside help (the object's alarm
 * reconciles what the outside knows with its durable state).
 */
export type LifecycleStep =
  /** The assignment is durable; input subscriptions and the restore registration are not made yet. */
  | "assign:after-meta"
  /** Revoked (idle) durably; still subscribed to its input and registered for restoration. */
  | "revoke:after-suspend"
  /** The outbox is delivered before a wipe; nothing is wiped yet. */
  | "corrupt:after-deliver"
  /** Wiped and revived as a new incarnation; not yet registered with the restore worker. */
  | "corrupt:after-wipe"
  /** Subscriptions match the assignment; the restore registration does not yet. */
  | "sync:after-subscriptions"
  /** Restored and RUNNING durably; still registered with the restore worker, no processing scheduled. */
  | "restore:after-running"
  /** An operator's skip is durable (the failure cleared, the record among the skips); nothing processed yet, the answer not sent. */
  | "skip:after-write";

export const LIFECYCLE_STEPS: readonly LifecycleStep[] = [
  "assign:after-meta",
  "revoke:after-suspend",
  "corrupt:after-deliver",
  "corrupt:after-wipe",
  "sync:after-subscriptions",
  "restore:after-running",
  "skip:after-write",
];

/**
 * What a step found: `more` input may be waiting; `idle` none; `blocked` the instance is stopped
 * by a failure; `waiting` it is backing off after an uncaught error it will retry (`wakeAt`).
 */
export type StepOutcome = "more" | "idle" | "blocked" | "waiting";

/** Changelog records read by the restore worker for one changelog partition of an instance. */
export interface RestoreBatch extends RestoredBatch, TopicPartition {
  /** The assignment epoch the batch was read for; a batch for another assignment is a no-op (I3). */
  readonly epoch?: number;
  readonly records: readonly LogRecord[];
  /** The changelog's end offset when the batch was read. */
  readonly end: number;
  /**
   * Changelog records the batch stands for, when a restore window compacted them into fewer
   * `records` (src/restore/compacted-window.ts); absent: `records.length`.
   */
  readonly recordsRead?: number;
  /**
   * Input partition (`topic/partition`) → one past the highest offset named by the records read,
   * those compacted away too: the positions a restore derives (I5) whatever compaction kept.
   */
  readonly positions?: Readonly<Record<string, number>>;
}

/** The changelog records a batch stands for (a restore window's compacted away ones too). */
export function recordsRead(batch: RestoreBatch): number {
  return batch.recordsRead ?? batch.records.length;
}

/** What the instance says after a restore batch: the restore worker's only source of positions. */
export interface RestoreReply {
  readonly applied: boolean;
  readonly incarnation: number;
  /** The instance's assignment epoch now: another than the batch's means its registration is over. */
  readonly epoch: number;
  readonly role: TaskRole;
  readonly state: TaskState;
  /** Where this changelog's restoration stands now (null: nothing restored since the last wipe). */
  readonly checkpoint: number | null;
  /** The batch brought this changelog to the end it was read against. */
  readonly caughtUp: boolean;
}

/** Bounds of a store scan: `from <= key <= to`, key starts with `prefix`, key strictly after `after`; at most `limit`. */
export interface ScanBounds {
  readonly from?: string;
  readonly to?: string;
  readonly prefix?: string;
  /** Only keys strictly after this one (where the previous page ended). */
  readonly after?: string;
  readonly limit: number;
}

/** Restore progress of a restoring instance, summed over its changelogs. */
export interface RestoreProgress {
  readonly restored: number;
  readonly total: number;
}

/**
 * A point read. `ok` with `stale: true` comes from an instance holding part of the store's
 * changelog, up to `restored`; `not-owner`: this instance cannot answer (it is not the active
 * one, or for a stale read it holds none of the store's changelog).
 */
export type QueryAnswer =
  | { readonly status: "ok"; readonly value: string | undefined; readonly stale: boolean; readonly restored?: number }
  | { readonly status: "restoring"; readonly progress: RestoreProgress }
  | { readonly status: "not-owner" };

/** A page of a store from one task: like `QueryAnswer`, with entries in key order. */
export type ScanAnswer =
  | { readonly status: "ok"; readonly items: { key: string; value: string }[]; readonly stale?: boolean; readonly restored?: number }
  | { readonly status: "restoring"; readonly progress: RestoreProgress }
  | { readonly status: "not-owner" };

/** The windows (or sessions) of a key, from the RUNNING active instance, or stale as `QueryAnswer`. */
export type WindowsAnswer =
  | {
      readonly status: "ok";
      readonly windows: { window: { start: number; end: number }; value: string }[];
      readonly stale?: boolean;
      readonly restored?: number;
    }
  | { readonly status: "restoring"; readonly progress: RestoreProgress }
  | { readonly status: "not-owner" };

/** Which entries a subscription's snapshot reads: one key, or every key with a prefix (at most `limit`). */
export type SnapshotSelection = { readonly key: string } | { readonly prefix: string; readonly limit: number };

/**
 * A subscription's snapshot from the RUNNING active instance (src/task/committed-read.ts): the
 * committed entries selected, and `offset`, the changelog offset they are the fold of (null: the
 * changelog holds nothing of the store yet, start from its earliest offset). `waiting`: a
 * changelog batch is on its way to the log; ask again shortly.
 */
export type SnapshotAnswer =
  | { readonly status: "ok"; readonly entries: { key: string; value: string }[]; readonly offset: number | null }
  | { readonly status: "waiting" }
  | { readonly status: "restoring"; readonly progress: RestoreProgress }
  | { readonly status: "not-owner" };

/** What a skip request gets from the task's active instance: done (with the instance now), or refused with the reason. */
export type SkipAnswer =
  | { readonly status: "skipped"; readonly already: boolean; readonly task: TaskDescription }
  | { readonly status: "refused"; readonly reason: string };

/** How the reason of an instance stopped by an application shutdown begins. */
export const APPLICATION_SHUT_DOWN = "application shut down";

/**
 * The lifecycle history of a task instance: assignments, revocations, migrations away, wipes
 * (corruption), turning RUNNING, stopping on a failure and being resumed, records an operator
 * skipped and input resets. Each event is logged as a structured line (task, placement,
 * epoch, incarnation) and the most recent ones are kept in the object's synchronous key-value
 * storage, apart from the task's tables, so they survive wipes and restarts and the status page
 * can show recent corruptions and migrations.
 */
import type { RecordOrigin } from "../streams/errors";
import { logEvent, type LogLevel } from "../util/logging";
import type { AppliedReset, InputReset } from "./input-reset";
import type { TaskRole, TaskState } from "./state";
import type { TaskMeta } from "./task-storage";
import { topicPartition } from "../names";

export type LifecycleEventName =
  | "assign"
  | "revoke"
  | "migrated-away"
  | "wipe"
  | "running"
  | "failed"
  | "resumed"
  | "input-reset"
  /** An operator had the record the instance stopped at passed over (`POST /admin/tasks/:id/skip`). */
  | "skipped"
  /** An operator's input reset moved the instance's positions forward (`POST /admin/reset`). */
  | "offsets-reset";

export interface LifecycleEvent {
  readonly event: LifecycleEventName;
  /** Epoch milliseconds. */
  readonly at: number;
  readonly role: TaskRole;
  readonly state: TaskState;
  readonly epoch: number;
  readonly incarnation: number;
  readonly detail?: string;
}

export interface LifecycleSnapshot {
  /** Most recent last. */
  readonly recent: readonly LifecycleEvent[];
  /** Times the active instance here was revoked to move elsewhere (only migrations do that). */
  readonly migrationsAway: number;
  readonly wipes: number;
  /** Times input was found below its partition's earliest offset (retention deleted it) and resumed at the earliest: records lost. */
  readonly inputResets: number;
  /** Records an operator had passed over here (each never processed), and the last one. */
  readonly skips: number;
  readonly lastSkipped?: RecordOrigin;
  /** Input records operators' resets moved this instance past (never processed). */
  readonly resetSkipped: number;
}

/** What an event adds to the counts: the record skipped, the records a reset passed over. */
export interface EventFacts {
  readonly skipped?: RecordOrigin;
  readonly resetSkipped?: number;
}

/** The slice of `ctx.storage.kv` this needs. */
export interface SyncKv {
  get<T = unknown>(key: string): T | undefined;
  put<T>(key: string, value: T): void;
}

/** What an event names of the instance (its meta row has these and more). */
type Described = Pick<TaskMeta, "taskId" | "placement" | "role" | "state" | "epoch" | "incarnation">;

const KEY = "lifecycle";
const KEEP = 20;
const LEVELS: Record<LifecycleEventName, LogLevel> = {
  assign: "info",
  revoke: "info",
  "migrated-away": "info",
  wipe: "warn",
  running: "info",
  failed: "error",
  resumed: "info",
  "input-reset": "error",
  skipped: "warn",
  "offsets-reset": "warn",
};

export class LifecycleHistory {
  constructor(
    private readonly kv: SyncKv,
    private readonly clock: () => number = Date.now,
  ) {}

  snapshot(): LifecycleSnapshot {
    const held = this.kv.get<Partial<LifecycleSnapshot>>(KEY);
    return {
      recent: held?.recent ?? [],
      migrationsAway: held?.migrationsAway ?? 0,
      wipes: held?.wipes ?? 0,
      inputResets: held?.inputResets ?? 0,
      skips: held?.skips ?? 0,
      ...(held?.lastSkipped ? { lastSkipped: held.lastSkipped } : {}),
      resetSkipped: held?.resetSkipped ?? 0,
    };
  }

  /** Logs the event and keeps it (with what it adds to the counts). */
  record(event: LifecycleEventName, instance: Described, detail?: string, facts: EventFacts = {}): void {
    const { taskId, placement, role, state, epoch, incarnation } = instance;
    logEvent(`task.${event}`, { task: taskId, placement, role, state, epoch, incarnation, detail }, LEVELS[event]);
    const now = this.snapshot();
    const entry: LifecycleEvent = { event, at: this.clock(), role, state, epoch, incarnation, ...(detail ? { detail } : {}) };
    this.kv.put<LifecycleSnapshot>(KEY, {
      recent: [...now.recent, entry].slice(-KEEP),
      migrationsAway: now.migrationsAway + (event === "migrated-away" ? 1 : 0),
      wipes: now.wipes + (event === "wipe" ? 1 : 0),
      inputResets: now.inputResets + (event === "input-reset" ? 1 : 0),
      skips: now.skips + (facts.skipped ? 1 : 0),
      ...(facts.skipped ? { lastSkipped: facts.skipped } : now.lastSkipped ? { lastSkipped: now.lastSkipped } : {}),
      resetSkipped: now.resetSkipped + (facts.resetSkipped ?? 0),
    });
  }

  /** An assignment taken: a new epoch or role, and a halt or resume it brought (the same assignment again may do either). */
  noteAssigned(before: TaskMeta | undefined, now: TaskMeta): void {
    if (!before || before.epoch !== now.epoch || before.role !== now.role) {
      this.record("assign", now, before ? `was ${before.role} at epoch ${before.epoch}` : undefined);
    }
    if (before?.failure === null && now.failure !== null) this.record("failed", now, now.failure);
    if (before?.failure && now.failure === null) this.record("resumed", now, `was stopped: ${before.failure}`);
  }

  /** A revocation: only a migration revokes an active instance; other revocations retire standbys. */
  noteRevoked(before: TaskMeta | undefined, now: TaskMeta | undefined): void {
    if (now && before && before.role !== "idle") this.record(before.role === "active" ? "migrated-away" : "revoke", now, `was ${before.role}`);
  }

  /** The turn to RUNNING, when the instance made it since `before`. */
  noteRunning(before: TaskMeta | undefined, now: TaskMeta | undefined): void {
    if (now?.state !== "RUNNING") return;
    if (before?.state === "RUNNING" && before.incarnation === now.incarnation && before.epoch === now.epoch) return;
    this.record("running", now);
  }

  /** A failure that stopped the instance since `before`. */
  noteFailure(before: TaskMeta | undefined, now: TaskMeta | undefined): void {
    if (now?.failure && !before?.failure) this.record("failed", now, now.failure);
  }

  /** An operator's input reset applied (once per reset), and the failure it cleared. */
  noteReset(reset: InputReset, applied: AppliedReset, before: TaskMeta | undefined, now: TaskMeta): void {
    if (before?.lastReset?.id === reset.id) return;
    const skipped = applied.partitions.reduce((n, p) => n + p.skipped, 0);
    const moved = applied.partitions.filter((p) => p.skipped > 0).map((p) => `${topicPartition(p)} ${p.from}→${p.to}`);
    this.record("offsets-reset", now, `input reset ${reset.id}: ${moved.join(", ") || "nothing to skip"}`, { resetSkipped: skipped });
    if (before?.failure && now.failure === null) this.record("resumed", now, `was stopped: ${before.failure}`);
  }
}

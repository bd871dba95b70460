/**
 * The lifecycle history of a task instance: assignments, revocations, migrations away, wipes
 * (corruption), turning RUNNING, stopping on a failure and being resumed. Each event is logged as a structured line (task, placement,
 * epoch, incarnation) and the most recent ones are kept in the object's synchronous key-value
 * storage, apart from the task's tables, so they survive wipes and restarts and the status page
 * can show recent corruptions and migrations.
 */
import { logEvent, type LogLevel } from "../util/log";
import type { TaskRole, TaskState } from "./state";
import type { TaskMeta } from "./task-storage";

export type LifecycleEventName = "assign" | "revoke" | "migrated-away" | "wipe" | "running" | "failed" | "resumed" | "input-reset";

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
};

export class LifecycleHistory {
  constructor(
    private readonly kv: SyncKv,
    private readonly clock: () => number = Date.now,
  ) {}

  snapshot(): LifecycleSnapshot {
    const held = this.kv.get<Partial<LifecycleSnapshot>>(KEY);
    return { recent: held?.recent ?? [], migrationsAway: held?.migrationsAway ?? 0, wipes: held?.wipes ?? 0, inputResets: held?.inputResets ?? 0 };
  }

  /** Logs the event and keeps it. */
  record(event: LifecycleEventName, instance: Described, detail?: string): void {
    const { taskId, placement, role, state, epoch, incarnation } = instance;
    logEvent(`task.${event}`, { task: taskId, placement, role, state, epoch, incarnation, detail }, LEVELS[event]);
    const now = this.snapshot();
    const entry: LifecycleEvent = { event, at: this.clock(), role, state, epoch, incarnation, ...(detail ? { detail } : {}) };
    this.kv.put<LifecycleSnapshot>(KEY, {
      recent: [...now.recent, entry].slice(-KEEP),
      migrationsAway: now.migrationsAway + (event === "migrated-away" ? 1 : 0),
      wipes: now.wipes + (event === "wipe" ? 1 : 0),
      inputResets: now.inputResets + (event === "input-reset" ? 1 : 0),
    });
  }
}

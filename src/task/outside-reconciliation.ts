/**
 * Brings what other objects know of a task instance in line with its durable state: it is
 * subscribed to its input partitions exactly when active, and registered with its placement's
 * restore worker exactly when restoring or standing by (for its current incarnation, epoch and
 * role), with the restore worker shard its task hashes to. Done once per state and shard (what was
 * last brought in line is kept in the object's storage), or again when forced. The other objects
 * are reached through the ports below, so a task still knows neither the log partitions' objects
 * nor the restore worker (they meet in `protocol.ts` and `durable-objects/calls.ts`).
 */
import type { TopicPartition } from "../log/types";
import { instanceName } from "../names";
import { logEvent } from "../util/logging";
import { withTimeout } from "../util/timeout";
import type { LifecycleStep } from "./protocol";
import type { RestoreRegistration } from "./restoration";
import type { TaskMeta } from "./task-storage";

/** Registering and unregistering with the restore worker wait at most this long (KAFKA-10199). */
export const RESTORE_CALL_TIMEOUT_MS = 5_000;
/** Key in the object's KV storage: the state of the instance that the outside was last brought in line with. */
export const SYNCED_KEY = "synced";

/** An input partition's list of the instances it wakes. */
export interface Subscriptions {
  subscribe(instance: string): unknown;
  unsubscribe(instance: string): unknown;
}

/** A restore worker shard, as far as an instance registers with it. */
export interface RestoreRegistrations {
  register(registration: RestoreRegistration & { instance: string; taskId: string; placement: string; worker: string }): Promise<boolean>;
  unregister(instance: string, incarnation: number, end: "finished" | "revoked", epoch: number): Promise<unknown>;
}

export interface OutsideDeps {
  /** The instance's meta row and, while it restores or stands by, its registration (`StreamTask`). */
  readonly task: { meta(): TaskMeta | undefined; restoreRegistration(): RestoreRegistration | undefined };
  readonly inputPartitions: (taskId: string) => readonly TopicPartition[];
  readonly partition: (tp: TopicPartition) => Subscriptions;
  readonly restoreWorkerNameOf: (meta: TaskMeta) => string;
  readonly restoreWorker: (name: string) => RestoreRegistrations;
  /** The slice of `ctx.storage.kv` this needs. */
  readonly kv: { get<T>(key: string): T | undefined; put<T>(key: string, value: T): void; delete(key: string): unknown };
  /** Crash points of the lifecycle operations (tests plan a crash between the two halves). */
  readonly reachAfterWrites: (step: LifecycleStep) => Promise<void>;
}

export class OutsideReconciliation {
  /** `SYNCED_KEY` as stored (null: absent), once read: this class alone writes it, so every run need not read storage. */
  private synced: string | null | undefined;

  constructor(private readonly deps: OutsideDeps) {}

  /** Makes the outside match the instance's durable state (see the file's comment). False when it could not be done now (the alarm tries again). */
  async reconcile(force = false): Promise<boolean> {
    const { task, kv } = this.deps;
    const meta = task.meta();
    if (!meta) return true;
    const goal = `${outsideGoal(meta)}/${this.deps.restoreWorkerNameOf(meta)}`;
    this.synced ??= kv.get<string>(SYNCED_KEY) ?? null;
    if (!force && this.synced === goal) return true;
    try {
      const name = instanceName(meta);
      await Promise.all(
        this.deps.inputPartitions(meta.taskId).map(async (tp) => {
          const partition = this.deps.partition(tp);
          return meta.role === "active" ? partition.subscribe(name) : partition.unsubscribe(name);
        }),
      );
      await this.deps.reachAfterWrites("sync:after-subscriptions");
      if (!(await this.syncRestoreRegistration(meta))) return false;
    } catch (error) {
      const { taskId: task, placement, epoch, incarnation } = meta;
      logEvent("task.reconcile-failed", { task, placement, epoch, incarnation, error: String(error) }, "warn");
      return false;
    }
    kv.put(SYNCED_KEY, goal);
    this.synced = goal;
    return true;
  }

  /** Forgets what the outside was last brought in line with: the next reconciliation does it all again. */
  forget(): void {
    this.deps.kv.delete(SYNCED_KEY);
    this.synced = null;
  }

  /**
   * Registers with the placement's restore worker while restoring or standing by, else
   * unregisters (the restore worker takes rows of older incarnations as ended by a wipe). True
   * once the restore worker has taken it.
   */
  private async syncRestoreRegistration(meta: TaskMeta): Promise<boolean> {
    const registration = this.deps.task.restoreRegistration();
    const workerName = this.deps.restoreWorkerNameOf(meta);
    const worker = this.deps.restoreWorker(workerName);
    const instance = instanceName(meta);
    if (registration) {
      const registered = worker.register({ ...registration, instance, taskId: meta.taskId, placement: meta.placement, worker: workerName });
      return withTimeout(registered, RESTORE_CALL_TIMEOUT_MS, false);
    }
    // Running now (restored), or revoked: only a revocation cuts a restoration or an update short.
    const end = meta.state === "RUNNING" ? "finished" : "revoked";
    const unregistered = worker.unregister(instance, meta.incarnation, end, meta.epoch).then(() => true);
    return withTimeout(unregistered, RESTORE_CALL_TIMEOUT_MS, false);
  }
}

/** The durable state the outside must know of: subscriptions follow the role, registration the restoring states. */
export function outsideGoal(meta: TaskMeta): string {
  const restoring = meta.state === "RESTORING" || meta.state === "UPDATING";
  return `${meta.epoch}/${meta.incarnation}/${meta.role}/${restoring ? "restoring" : meta.state}`;
}

/**
 * The pure half of the model-based randomized test (test/model.test.ts): a seeded PRNG, the
 * schedule of operations it generates over the example application (orders → totals), and the
 * model those operations are checked against — the fold of every order produced. Nothing here
 * touches the runtime, so a schedule is a value: printed on failure, regenerated from its seed.
 */
import { partitionForKey } from "../../src/log/partitioner";
import type { RestoreStep } from "../../src/restore/restorer";
import type { CoordinatorStep } from "../../src/coordinator/coordinator-context";
import { COMMIT_STEPS, LIFECYCLE_STEPS, type CommitStep, type LifecycleStep } from "../../src/task/protocol";

/** mulberry32: a tiny 32-bit PRNG, uniform in [0, 1). The same seed gives the same sequence. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const PARTITIONS = 4;
export const KEYS_PER_PARTITION = 3;
export const RESTORE_STEPS: readonly RestoreStep[] = ["mid-window", "after-fetch", "after-apply", "after-report"];
export const COORDINATOR_STEPS: readonly CoordinatorStep[] = ["migrate:after-intent", "push:after-instance"];

/** An order to produce: `key` indexes the seed's keys (key i lives on partition i % PARTITIONS). */
export interface PlannedOrder {
  readonly key: number;
  readonly amount: number;
}

export type Op =
  | { readonly kind: "produce"; readonly orders: readonly PlannedOrder[] }
  /** TaskCorrupted on the task's active instance: wipe, revive, restore. */
  | { readonly kind: "corrupt"; readonly task: number }
  /** The active instance's process dies at once (fault route). */
  | { readonly kind: "crash"; readonly task: number }
  /** The active instance dies at `step` of the next commit a drain runs, with `orders` as its input. */
  | { readonly kind: "crash-at"; readonly task: number; readonly step: CommitStep; readonly orders: readonly PlannedOrder[] }
  /** Moves the active to the other placement (a second move of the same task is a move back). */
  | { readonly kind: "migrate"; readonly task: number }
  /** The next `times` calls to a partition fail, on the task's input or its changelog. */
  | { readonly kind: "log-fail"; readonly log: "orders" | "changelog"; readonly partition: number; readonly times: number }
  | { readonly kind: "pause" }
  | { readonly kind: "resume"; readonly maxBatches?: number }
  /** One round of every placement's restore worker. */
  | { readonly kind: "restore-round" }
  /** One round of one placement's restore worker. */
  | { readonly kind: "restore-one"; readonly placement: number }
  /** The restore worker's process dies at once. */
  | { readonly kind: "restore-worker-crash"; readonly placement: number }
  /** The restore worker dies at `step` of a batch of the next round it is made to run (mid-batch). */
  | { readonly kind: "restore-crash-at"; readonly placement: number; readonly step: RestoreStep }
  | { readonly kind: "coordinator-restart" }
  /**
   * A task instance dies at `step` of a lifecycle operation, which is then run: a corruption of the
   * active (corrupt, sync and restore steps), or a migration (the new instance dies taking it, or
   * the old one being revoked).
   */
  | { readonly kind: "crash-in"; readonly task: number; readonly step: LifecycleStep }
  /** The coordinator dies at `step` of a migration of the task. */
  | { readonly kind: "coordinator-crash-in"; readonly task: number; readonly step: CoordinatorStep }
  /** Someone outside commits the application's consumer group at the end of the task's input (refused). */
  | { readonly kind: "foreign-commit"; readonly task: number }
  /** Every Durable Object dies at once (storage stays): a restart of the whole cluster. */
  | { readonly kind: "abort-all" }
  /** Partial progress: one task processes what it has. */
  | { readonly kind: "drain"; readonly task: number };

/** Relative weights of the operations in a schedule. */
const WEIGHTS: Readonly<Record<Op["kind"], number>> = {
  produce: 24,
  corrupt: 7,
  crash: 6,
  "crash-at": 8,
  migrate: 9,
  "log-fail": 6,
  pause: 7,
  resume: 5,
  "restore-round": 7,
  "restore-one": 4,
  "restore-worker-crash": 3,
  "restore-crash-at": 4,
  "coordinator-restart": 3,
  "crash-in": 6,
  "coordinator-crash-in": 3,
  "foreign-commit": 2,
  "abort-all": 2,
  drain: 7,
};

/** The schedule of `length` operations a seed stands for. */
export function generateSchedule(seed: number, length: number): Op[] {
  const random = mulberry32(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const kinds = Object.entries(WEIGHTS) as [Op["kind"], number][];
  const total = kinds.reduce((n, [, w]) => n + w, 0);
  const keysOn = (partition: number) => Array.from({ length: KEYS_PER_PARTITION }, (_, j) => partition + j * PARTITIONS);
  const orders = (count: number, keys: readonly number[]): PlannedOrder[] => Array.from({ length: count }, () => ({ key: pick(keys), amount: 1 + int(100) }));
  const allKeys = Array.from({ length: PARTITIONS * KEYS_PER_PARTITION }, (_, i) => i);

  const schedule: Op[] = [];
  for (let i = 0; i < length; i++) {
    let roll = random() * total;
    const [kind] = kinds.find(([, w]) => (roll -= w) < 0) ?? kinds[0]!;
    const task = int(PARTITIONS);
    switch (kind) {
      case "produce":
        // Now and then a burst: changelogs long enough that restoring one takes several batches.
        schedule.push({ kind, orders: orders(random() < 0.3 ? 20 + int(41) : 1 + int(6), allKeys) });
        break;
      case "crash-at":
        schedule.push({ kind, task, step: pick(COMMIT_STEPS), orders: orders(1 + int(3), keysOn(task)) });
        break;
      case "corrupt":
      case "crash":
      case "migrate":
      case "drain":
        schedule.push({ kind, task });
        break;
      case "log-fail":
        schedule.push({ kind, log: random() < 0.5 ? "orders" : "changelog", partition: task, times: 1 + int(3) });
        break;
      case "resume":
        schedule.push(random() < 0.5 ? { kind } : { kind, maxBatches: 1 + int(3) });
        break;
      case "restore-one":
      case "restore-worker-crash":
        schedule.push({ kind, placement: int(2) });
        break;
      case "restore-crash-at":
        schedule.push({ kind, placement: int(2), step: pick(RESTORE_STEPS) });
        break;
      case "crash-in":
        schedule.push({ kind, task, step: pick(LIFECYCLE_STEPS) });
        break;
      case "coordinator-crash-in":
        schedule.push({ kind, task, step: pick(COORDINATOR_STEPS) });
        break;
      case "foreign-commit":
        schedule.push({ kind, task });
        break;
      default:
        schedule.push({ kind } as Op);
    }
  }
  return schedule;
}

/** One line per operation, for failure reports. */
export function formatOp(op: Op, keys: readonly string[]): string {
  const orders = (list: readonly PlannedOrder[]) => list.map((o) => `${keys[o.key]}+${o.amount}`).join(" ");
  switch (op.kind) {
    case "produce":
      return `produce ${orders(op.orders)}`;
    case "crash-at":
      return `crash-at 0_${op.task} ${op.step}, drain with ${orders(op.orders)}`;
    case "corrupt":
    case "crash":
    case "migrate":
    case "drain":
      return `${op.kind} 0_${op.task}`;
    case "log-fail":
      return `log-fail ${op.log}/${op.partition} ×${op.times}`;
    case "resume":
      return op.maxBatches === undefined ? "resume" : `resume maxBatches=${op.maxBatches}`;
    case "restore-one":
    case "restore-worker-crash":
      return `${op.kind} ${op.placement === 0 ? "a" : "b"}`;
    case "restore-crash-at":
      return `restore-crash-at ${op.placement === 0 ? "a" : "b"} ${op.step}, then a round there`;
    case "crash-in":
      return `crash-in 0_${op.task} ${op.step}`;
    case "coordinator-crash-in":
      return `coordinator-crash-in ${op.step}, migrate 0_${op.task}`;
    case "foreign-commit":
      return `foreign-commit orders/${op.task}`;
    default:
      return op.kind;
  }
}

/**
 * A schedule's customer keys: key i lands on partition i % PARTITIONS under Kafka's partitioner,
 * so each task holds KEYS_PER_PARTITION of them. Prefixed (with the seed): schedules never share a key.
 */
export function keysFor(prefix: string): string[] {
  const byPartition: string[][] = Array.from({ length: PARTITIONS }, () => []);
  for (let i = 0; byPartition.some((keys) => keys.length < KEYS_PER_PARTITION); i++) {
    const key = `${prefix}-${i}`;
    const keys = byPartition[partitionForKey(key, PARTITIONS)]!;
    if (keys.length < KEYS_PER_PARTITION) keys.push(key);
  }
  return Array.from({ length: PARTITIONS * KEYS_PER_PARTITION }, (_, i) => byPartition[i % PARTITIONS]![Math.floor(i / PARTITIONS)]!);
}

export interface Totals {
  readonly count: number;
  readonly sum: number;
}

/** The application's fold, as the model computes it: per key, the totals after each of its orders. */
export function runningTotals(orders: readonly { key: string; amount: number }[]): Map<string, Totals[]> {
  const history = new Map<string, Totals[]>();
  for (const { key, amount } of orders) {
    const list = history.get(key) ?? [];
    const last = list[list.length - 1] ?? { count: 0, sum: 0 };
    list.push({ count: last.count + 1, sum: last.sum + amount });
    history.set(key, list);
  }
  return history;
}

/** Per key, the last of a sequence of values (a changelog or a running fold, folded). */
export function lastValues<V>(history: ReadonlyMap<string, readonly V[]>): Map<string, V> {
  const out = new Map<string, V>();
  for (const [key, values] of history) if (values.length > 0) out.set(key, values[values.length - 1]!);
  return out;
}

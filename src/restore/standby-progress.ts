/**
 * Where each registered changelog stands, as the restore worker last heard it — kept in memory and
 * written to the registry's rows at most every PROGRESS_FLUSH_MS (and on shutdown), instead of a
 * row per batch applied and per wake-up (SQLite bills every row written; issue #33). Nothing here
 * is the truth: each instance's own checkpoint is (I1, I4). A restore worker that dies before a
 * flush resumes from the last one written: it reads batches the instance already has again, the
 * instance applies them only at its current position — a batch behind it is a no-op whose reply
 * names the position — and the registry takes that position. After a start, no changelog counts
 * as caught up until a reply says so: a growth heard and not written down is not lost. Pure.
 */
import type { TopicPartition } from "../log/types";
import { topicPartition } from "../names";

/** How long progress stays in memory only, at most (the in-memory timer of the restore worker). */
export const PROGRESS_FLUSH_MS = 10_000;

/** The fields of a registration that change with each reply and wake-up (the rest is the registration). */
export interface Progress {
  readonly position: number | null;
  readonly caughtUp: boolean;
  readonly restored: number;
  readonly failures: number;
  readonly grown: number;
}

/** Which registration progress belongs to: an instance's changelog, in one incarnation and epoch. */
export interface ProgressKey extends TopicPartition {
  readonly instance: string;
  readonly incarnation: number;
  readonly epoch: number;
}

interface Held extends Progress {
  readonly incarnation: number;
  readonly epoch: number;
}

export class StandbyProgress {
  /** Every registration heard of since the start, by instance and changelog. */
  private readonly held = new Map<string, Held>();
  /** Keys changed since the last flush. */
  private readonly dirty = new Set<string>();

  /** The registration's progress as known now: held in memory, else the row's, not caught up (see the file's comment). */
  current<P extends Progress & ProgressKey>(row: P): P {
    const held = this.held.get(keyOf(row));
    if (!held || held.incarnation !== row.incarnation || held.epoch !== row.epoch) return { ...row, caughtUp: false };
    return { ...row, position: held.position, caughtUp: held.caughtUp, restored: held.restored, failures: held.failures, grown: held.grown };
  }

  /** Notes the registration's progress (to be written by the next flush). */
  set(key: ProgressKey, progress: Progress): void {
    const k = keyOf(key);
    this.held.set(k, { incarnation: key.incarnation, epoch: key.epoch, ...pick(progress) });
    this.dirty.add(k);
  }

  /** The instance's registrations are gone or replaced: nothing of theirs is written any more. */
  forgetInstance(instance: string): void {
    const prefix = `${instance}\u0000`;
    for (const k of [...this.held.keys()]) {
      if (!k.startsWith(prefix)) continue;
      this.held.delete(k);
      this.dirty.delete(k);
    }
  }

  /** Something is not written yet. */
  get pending(): boolean {
    return this.dirty.size > 0;
  }

  /** What to write now (kept in memory), and nothing pending after it. */
  takeDirty(): (ProgressKey & Progress)[] {
    const out: (ProgressKey & Progress)[] = [];
    for (const k of this.dirty) {
      const held = this.held.get(k);
      if (!held) continue;
      const [instance, tp] = k.split("\u0000") as [string, string];
      const slash = tp.lastIndexOf("/");
      out.push({ instance, topic: tp.slice(0, slash), partition: Number(tp.slice(slash + 1)), ...held });
    }
    this.dirty.clear();
    return out;
  }

  /** A flush failed: what it took is written by the next one. */
  restore(taken: readonly ProgressKey[]): void {
    for (const key of taken) if (this.held.has(keyOf(key))) this.dirty.add(keyOf(key));
  }
}

function keyOf(key: TopicPartition & { readonly instance: string }): string {
  return `${key.instance}\u0000${topicPartition(key)}`;
}

function pick(p: Progress): Progress {
  return { position: p.position, caughtUp: p.caughtUp, restored: p.restored, failures: p.failures, grown: p.grown };
}

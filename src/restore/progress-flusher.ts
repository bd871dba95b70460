/**
 * When the restore worker writes down what it holds in memory — the registrations' progress
 * (standby-progress.ts) and the instances' reports (reports.ts) — and how: within
 * PROGRESS_FLUSH_MS of the first thing held (an in-memory timer: nothing stays armed once all is
 * written), on shutdown, and all of it in one transaction. A flush that fails puts back what it
 * took, so the next one writes it, and looks again within PROGRESS_FLUSH_MS. Pure: the timer,
 * the clock and the transaction are given.
 *
 * Crash at any point: nothing here is the truth. A worker that dies before a flush resumes from
 * the last one written (the instances' checkpoints answer the rest, I4); one that dies inside the
 * transaction writes none of it.
 */
import { PROGRESS_FLUSH_MS } from "./standby-progress";

/** What one part took to write: written inside the flush's transaction, or put back when it fails. */
export interface Taken {
  write(): void;
  putBack(): void;
}

/** A part that holds writes in memory: the registry's progress, the reports. */
export interface HeldWrites {
  readonly pending: boolean;
  /** What is held now, no longer pending. */
  take(): Taken;
}

export interface FlusherPorts {
  readonly parts: readonly HeldWrites[];
  /** Runs `fn` in one storage transaction (`transactionSync`): all of it or none. */
  transaction(fn: () => void): void;
  /** Arms the in-memory timer by `at` (the earliest asked for wins); it calls `flush`. */
  armBy(at: number): void;
  now(): number;
  failed(error: unknown): void;
}

export class ProgressFlusher {
  constructor(private readonly ports: FlusherPorts) {}

  /** Something was held: it is written within PROGRESS_FLUSH_MS. */
  later(): void {
    if (this.ports.parts.some((part) => part.pending)) this.ports.armBy(this.ports.now() + PROGRESS_FLUSH_MS);
  }

  /** Writes everything held, in one transaction. False when it failed: then it is put back and written later. */
  flush(): boolean {
    const taken = this.ports.parts.filter((part) => part.pending).map((part) => part.take());
    if (taken.length === 0) return true;
    try {
      this.ports.transaction(() => {
        for (const part of taken) part.write();
      });
      return true;
    } catch (error) {
      for (const part of taken) part.putBack();
      this.ports.failed(error);
      this.later();
      return false;
    }
  }
}

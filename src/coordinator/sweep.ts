/**
 * The sweep: pushes every acknowledged assignment again, a chunk per alarm, and checks what the
 * instances answer. The same assignment again changes nothing at an instance that has it, and
 * gives one that lost it (or its subscriptions, or its restore registration) back what it lacks.
 * Runs when due (every SWEEP_INTERVAL_MS); its schedule and cursor are kept in the settings.
 */
import type { AssignmentPusher } from "./assignment-pusher";
import type { CoordinatorContext } from "./coordinator-context";
import { stillHolds } from "./holds";
import { assignmentOf } from "./push-plan";
import { logEvent } from "../util/logging";

/** How often the sweep pushes every acknowledged assignment again. */
const SWEEP_INTERVAL_MS = 5 * 60_000;
/** Instances pushed per alarm by the sweep (each push is a subrequest or a few). */
const SWEEP_CHUNK = 100;

export interface SweepResult {
  readonly pushed: number;
  readonly repaired: number;
  /** A sweep is under way: more chunks follow. */
  readonly more: boolean;
}

export class Sweep {
  constructor(
    private readonly context: CoordinatorContext,
    private readonly pusher: AssignmentPusher,
  ) {}

  /** When the next sweep is due (epoch ms; 0 before the first is scheduled). */
  dueAt(): number {
    return this.context.store.settings.nextSweepAt() ?? 0;
  }

  /** A chunk of the sweep when one is due (the first call schedules the first sweep); true while a sweep is under way. */
  async ifDue(): Promise<boolean> {
    const { settings } = this.context.store;
    const due = settings.nextSweepAt();
    if (due === undefined) {
      settings.setNextSweepAt(Date.now() + SWEEP_INTERVAL_MS);
      return false;
    }
    if (due > Date.now()) return false;
    return (await this.chunk()).more;
  }

  async chunk(): Promise<SweepResult> {
    const { store } = this.context;
    const all = store.instances();
    const from = store.settings.sweepCursor();
    const chunk = all.slice(from, from + SWEEP_CHUNK).filter((i) => i.acknowledged);
    const state = this.pusher.applicationState();
    const results = await Promise.allSettled(chunk.map((instance) => this.context.instance(instance).check(assignmentOf(instance, state))));
    let repaired = 0;
    store.transaction(() => {
      results.forEach((result, i) => {
        const instance = chunk[i]!;
        if (result.status === "rejected" || stillHolds(result.value, instance)) return;
        // The instance lost what it was told (its storage, say): assigned again under a new
        // epoch, so that nothing it does can be mistaken for what it did before.
        store.put({ ...instance, epoch: store.nextEpoch(), acknowledged: false });
        repaired++;
      });
    });
    const more = from + SWEEP_CHUNK < all.length;
    store.settings.setSweepCursor(more ? from + SWEEP_CHUNK : 0);
    if (!more) store.settings.setNextSweepAt(Date.now() + SWEEP_INTERVAL_MS);
    if (repaired > 0) {
      logEvent("coordinator.sweep-repaired", { instances: repaired }, "warn");
      await this.pusher.pushUnacknowledged();
    }
    return { pushed: chunk.length, repaired, more };
  }
}

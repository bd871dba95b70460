/**
 * Brings the stored assignment in line with the configuration (the plan: ./reconcile.ts): an
 * active per task (sticky, balanced), NUM_STANDBYS standbys at other placements, and a warm-up
 * standby for every active on a placement no longer configured. Only writes (pushing comes after),
 * all under fresh epochs, in one transaction; nothing to do while the assignment has not changed
 * since it was last reconciled.
 */
import type { CoordinatorStore } from "./coordinator-store";
import { planReconcile, type ReconcileInput } from "./reconcile";

export class Reconciler {
  /** The assignment version last reconciled (nothing to plan until it changes); in memory only. */
  private reconciled: number | undefined;

  constructor(
    private readonly store: CoordinatorStore,
    /** The tasks, the configured placements and NUM_STANDBYS. */
    private readonly goal: () => Omit<ReconcileInput, "instances">,
  ) {}

  reconcile(): void {
    if (this.reconciled === this.store.version() && this.reconciled !== undefined) return;
    const changes = planReconcile({ ...this.goal(), instances: this.store.instances() });
    if (changes.length > 0) {
      this.store.transaction(() => {
        let epoch = this.store.allocateEpochs(changes.length);
        for (const change of changes) this.store.put({ ...change, epoch: epoch++, acknowledged: false });
      });
    }
    this.reconciled = this.store.version();
  }
}

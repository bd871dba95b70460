/**
 * The application's shutdown (Kafka's SHUTDOWN_APPLICATION), as the coordinator drives it: a
 * task's uncaught error chose `"shutdown-application"`, so every active instance stops, and
 * instances assigned later start stopped, until an operator lifts it. Each step is stored first
 * (the alarm armed before), then pushed, in chunks: a crash at any await leaves the goal for the
 * alarm to push.
 */
import type { AssignmentPusher } from "./assignment-pusher";
import { type CoordinatorContext, REBALANCE_CHECK_MS } from "./coordinator-context";
import type { ApplicationShutdown } from "./coordinator-store";
import type { InstanceAck } from "../task/protocol";

export class Shutdowns {
  constructor(
    private readonly context: CoordinatorContext,
    private readonly pusher: AssignmentPusher,
  ) {}

  /**
   * Shuts the application down: the first request's reason stays, and survives restarts of the
   * coordinator. The actives' assignments are marked to be pushed again, halted.
   */
  async shutDown(request: Omit<ApplicationShutdown, "at">): Promise<ApplicationShutdown> {
    const { store } = this.context;
    const existing = store.shutdown();
    if (existing) return existing;
    await this.context.armAlarm(REBALANCE_CHECK_MS);
    const shutdown = store.transaction(() => {
      store.unacknowledge("active");
      return store.shutDown({ ...request, at: Date.now() });
    });
    await this.context.reach("shutdown:after-record");
    await this.pusher.pushUnacknowledged();
    return shutdown;
  }

  /**
   * Lifts the shutdown: every active instance's assignment is pushed again without the halt and
   * with `resume`, which clears its failure, and it processes again. Answers the actives resumed
   * by this call (the first chunk); the alarm resumes any others.
   */
  async lift(): Promise<InstanceAck[]> {
    const { store } = this.context;
    await this.context.armAlarm(REBALANCE_CHECK_MS);
    store.transaction(() => {
      store.clearShutdown();
      store.unacknowledge("active");
      store.settings.setResuming(true);
    });
    await this.context.reach("resume:after-clear");
    const { acks } = await this.pusher.pushUnacknowledged();
    return acks.filter((a): a is InstanceAck => a !== undefined && a.role === "active");
  }
}

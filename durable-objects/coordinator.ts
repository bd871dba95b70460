/**
 * `Coordinator`: one per application. It owns the assignment of task instances to placements —
 * actives, standbys, and idle instances that keep state where a task used to run — and hands every
 * assignment a fresh epoch (I3). Revocation is acknowledged before the task is assigned elsewhere;
 * corruption reports wipe and revive the instances named, all of a report together. An uncaught
 * error under `"shutdown-application"` stops every active instance until an operator resumes the
 * application.
 *
 * Every change is first written as the goal (the stored assignment, unacknowledged) and only then
 * pushed; the alarm is armed before any push. So a crash at any await — or the whole runtime
 * killed — leaves a goal that the alarm pushes again, idempotently, until every instance has
 * acknowledged it. A periodic sweep pushes acknowledged assignments again too and checks what the
 * instances report, repairing what they may have lost.
 */
import { DurableObject } from "cloudflare:workers";
import type { Config } from "../src/config";
import { assignActives } from "../src/coordinator/assignor";
import { MigrationRefused, MigrationUnderWay } from "../src/coordinator/migration";
import { CoordinatorStore, type ApplicationShutdown, type InstanceAssignment } from "../src/coordinator/coordinator-store";
import { placeStandbys, warmUpTargets } from "../src/coordinator/standbys";
import type { TaskDescription } from "../src/task/describe";
import { holds } from "../src/coordinator/holds";
import { APPLICATION_SHUT_DOWN, type Assignment, type InstanceAck } from "../src/task/protocol";
import { instanceName } from "../src/names";
import { CrashPoints } from "../src/util/crash-points";
import { logEvent } from "../src/util/log";
import { Serial } from "../src/util/serial";
import type { CoordinatorCalls, ObjectHost, ShutdownRequest } from "./calls";

/** How soon the alarm pushes again what could not be pushed, and re-checks pending automatic moves. */
const REBALANCE_CHECK_MS = 1_000;
/** ... doubling per failed attempt in a row, up to this. */
const MAX_RETRY_MS = 30_000;
/** How often the sweep pushes every acknowledged assignment again. */
const SWEEP_INTERVAL_MS = 5 * 60_000;
/** Instances pushed per alarm by the sweep (each push is a subrequest or a few). */
const SWEEP_CHUNK = 100;
/** Keys in the object's KV storage: when the next sweep is due, and where the current one stands. */
const NEXT_SWEEP_KEY = "next-sweep-at";
const SWEEP_CURSOR_KEY = "sweep-cursor";

/**
 * Points between the awaits of the coordinator's operations where tests can kill it; each must
 * converge from there without outside help.
 */
export type CoordinatorStep =
  /** A migration is stored as the goal (old instance to revoke, new active); nothing pushed. */
  | "migrate:after-intent"
  /** An instance took its assignment (or revocation); the coordinator has not recorded it. */
  | "push:after-instance"
  /** The shutdown is stored; no active instance halted yet. */
  | "shutdown:after-record"
  /** The shutdown is lifted in storage; no instance resumed yet. */
  | "resume:after-clear";

export type MigrationResult = { readonly changed: boolean; readonly from: string; readonly to: string; readonly epoch: number };

/** What resuming one task found: resumed, or refused because the whole application is shut down. */
export type TaskResumeResult =
  | { readonly status: "resumed"; readonly task: TaskDescription }
  | { readonly status: "application-shut-down"; readonly shutdown: ApplicationShutdown };

/** The coordinator; a Worker exports the class `defineEdgeStreams` makes of it (see TaskObject). */
export class Coordinator extends DurableObject implements CoordinatorCalls {
  private readonly store: CoordinatorStore;
  private readonly serial = new Serial();
  private readonly crashes: CrashPoints<CoordinatorStep>;
  /** Alarm rounds in a row that left something unpushed (for the back-off). */
  private failures = 0;

  constructor(
    ctx: DurableObjectState,
    env: unknown,
    private readonly host: ObjectHost,
  ) {
    super(ctx, env as never);
    this.store = new CoordinatorStore(ctx.storage);
    this.crashes = new CrashPoints(
      (reason) => this.ctx.abort(reason),
      () => this.ctx.storage.sync(),
    );
    // On start: whatever a crash left unpushed gets an alarm (one armed before is kept).
    void ctx.blockConcurrencyWhile(async () => {
      if (this.store.instances().some((i) => !i.acknowledged) && (await ctx.storage.getAlarm()) === null) await ctx.storage.setAlarm(Date.now());
    });
  }

  private get config(): Config {
    return this.host.config;
  }

  /**
   * The assignment, made or repaired as needed, and pushed to the instances that have not
   * acknowledged theirs. An instance that cannot be told now does not fail the call (callers
   * need the assignment, not the push): the alarm pushes again shortly.
   */
  async ensureAssigned(): Promise<InstanceAssignment[]> {
    return this.serial.run(async () => {
      await this.converge();
      return this.store.instances();
    });
  }

  /** Every step toward the goal, each of which may be cut short (the alarm comes back to it). True when nothing is left. */
  private async converge(): Promise<boolean> {
    this.reconcile();
    const pushed = await this.pushUnacknowledged();
    const moved = await this.moveOffRemovedPlacements().catch((error: unknown) => {
      logEvent("coordinator.move-failed", { error: String(error) }, "warn");
      return false;
    });
    const halted = await this.haltActives();
    return pushed && moved && halted;
  }

  /** Whether (and why) the application is shut down. */
  async shutdownState(): Promise<ApplicationShutdown | null> {
    return this.store.shutdown() ?? null;
  }

  /**
   * A task's uncaught error chose `"shutdown-application"` (Kafka's SHUTDOWN_APPLICATION): every
   * active instance stops, and instances assigned later start stopped, until `resumeApplication`.
   * The first request's reason stays; the shutdown survives restarts of the coordinator.
   */
  async shutdownApplication(request: ShutdownRequest): Promise<ApplicationShutdown> {
    return this.serial.run(async () => {
      await this.armAlarm(REBALANCE_CHECK_MS);
      const shutdown = this.store.transaction(() => this.store.shutDown({ ...request, at: Date.now() }));
      await this.crashes.reachAfterWrites("shutdown:after-record");
      await this.haltActives();
      return shutdown;
    });
  }

  /**
   * An operator lifts the shutdown: every active instance's failure is cleared and it processes
   * again. A crash after the shutdown is lifted leaves the rest to the sweep, due at once.
   */
  async resumeApplication(): Promise<TaskDescription[]> {
    return this.serial.run(async () => {
      this.ctx.storage.kv.put(NEXT_SWEEP_KEY, 0);
      await this.armAlarm(REBALANCE_CHECK_MS);
      this.store.transaction(() => this.store.clearShutdown());
      await this.crashes.reachAfterWrites("resume:after-clear");
      const actives = this.store.instances().filter((i) => i.role === "active");
      return Promise.all(actives.map((active) => this.instance(active).resume()));
    });
  }

  /** An operator resumes one task stopped by its own uncaught error; refused while the application is shut down. */
  async resumeTask(taskId: string): Promise<TaskResumeResult> {
    return this.serial.run(async () => {
      const shutdown = this.store.shutdown();
      if (shutdown) return { status: "application-shut-down" as const, shutdown };
      this.reconcile();
      await this.pushUnacknowledged();
      const active = this.store.instances().find((i) => i.taskId === taskId && i.role === "active")!;
      return { status: "resumed" as const, task: await this.instance(active).resume() };
    });
  }

  /** While the application is shut down, stops every active instance still processing. False when one could not be told (the alarm retries). */
  private async haltActives(): Promise<boolean> {
    const shutdown = this.store.shutdown();
    if (!shutdown) return true;
    const actives = this.store.instances().filter((i) => i.role === "active");
    const results = await Promise.allSettled(actives.map((active) => this.instance(active).halt(haltReason(shutdown))));
    if (results.every((r) => r.status === "fulfilled")) return true;
    await this.armAlarm(REBALANCE_CHECK_MS);
    return false;
  }

  /** The current assignment, without changing it. */
  async assignments(): Promise<InstanceAssignment[]> {
    return this.store.instances();
  }

  /**
   * Moves a task's active instance: revoke at the current placement (flush, commit, checkpoint,
   * close clean) and only once that is acknowledged, assign at `to` with a new epoch. The instance
   * left behind stays as an idle (or standby) instance with its store and checkpoint. The move is
   * stored as the goal first: once this call has begun it, a crash or a failed revocation only
   * delays it (the alarm completes it), and the call fails saying so.
   */
  async migrate(taskId: string, to: string): Promise<MigrationResult> {
    return this.serial.run(() => this.migrateNow(taskId, to));
  }

  private async migrateNow(taskId: string, to: string): Promise<MigrationResult> {
    if (!this.host.application.task(taskId)) throw new MigrationRefused(`unknown task ${JSON.stringify(taskId)}`);
    if (!this.config.PLACEMENTS.includes(to)) throw new MigrationRefused(`unknown placement ${JSON.stringify(to)}`);
    this.reconcile();
    const active = this.activeOf(taskId);
    if (active.placement !== to) {
      await this.armAlarm(REBALANCE_CHECK_MS);
      this.store.transaction(() => {
        this.store.put({ ...active, role: "idle", acknowledged: false });
        this.store.put({ taskId, placement: to, role: "active", epoch: this.store.nextEpoch(), acknowledged: false });
      });
      await this.crashes.reachAfterWrites("migrate:after-intent");
      this.reconcile();
    }
    await this.pushUnacknowledged();
    const now = this.activeOf(taskId);
    if (!now.acknowledged)
      throw new MigrationUnderWay(
        `the move of task ${taskId} to ${to} is under way and completes on its own: ${this.lastPushError ?? "an instance has not answered yet"}`,
      );
    return { changed: active.placement !== to, from: active.placement, to, epoch: now.epoch };
  }

  private activeOf(taskId: string): InstanceAssignment {
    return this.store.instances().find((i) => i.taskId === taskId && i.role === "active")!;
  }

  /**
   * Corruption reported by the restore worker (or a task): every instance named is closed dirty,
   * wiped and revived as a new incarnation, all of one report together. A report about an
   * incarnation already wiped changes nothing. (A report that fails is made again by the restore
   * worker, which keeps the registrations until it got through.)
   */
  async reportCorruption(corrupted: readonly { instance: string; incarnation: number }[]): Promise<void> {
    await Promise.all(corrupted.map(({ instance, incarnation }) => this.host.objects.taskObject(instance).corrupt(incarnation)));
  }

  /**
   * Pushes what is unacknowledged, completes automatic moves and the shutdown, and sweeps when
   * due. Never fails (an alarm that fails 6 times is dropped): it comes back with a back-off.
   */
  override async alarm(): Promise<void> {
    let done = false;
    let sweeping = false;
    try {
      done = await this.serial.run(() => this.converge());
      sweeping = await this.serial.run(() => this.sweepIfDue());
    } catch (error) {
      logEvent("coordinator.alarm-failed", { error: String(error) }, "warn");
    }
    this.failures = done ? 0 : this.failures + 1;
    if (!done) await this.armAlarm(Math.min(MAX_RETRY_MS, REBALANCE_CHECK_MS * 2 ** Math.min(this.failures - 1, 16)));
    else if (sweeping) await this.armAlarm(REBALANCE_CHECK_MS);
    else await this.armAlarm(Math.max(0, (this.ctx.storage.kv.get<number>(NEXT_SWEEP_KEY) ?? 0) - Date.now()));
  }

  /**
   * The sweep: pushes every acknowledged assignment again, a chunk per alarm, and checks what the
   * instances answer. The same assignment again changes nothing at an instance that has it, and
   * gives one that lost it (or its subscriptions, or its restore registration) back what it
   * lacks. Runs when due (every SWEEP_INTERVAL_MS); true while a sweep is under way.
   */
  async sweep(): Promise<{ pushed: number; repaired: number; more: boolean }> {
    return this.serial.run(() => this.sweepChunk());
  }

  private async sweepIfDue(): Promise<boolean> {
    const due = this.ctx.storage.kv.get<number>(NEXT_SWEEP_KEY);
    if (due === undefined) {
      this.ctx.storage.kv.put(NEXT_SWEEP_KEY, Date.now() + SWEEP_INTERVAL_MS);
      return false;
    }
    if (due > Date.now()) return false;
    return (await this.sweepChunk()).more;
  }

  private async sweepChunk(): Promise<{ pushed: number; repaired: number; more: boolean }> {
    const all = this.store.instances();
    const from = this.ctx.storage.kv.get<number>(SWEEP_CURSOR_KEY) ?? 0;
    const chunk = all.slice(from, from + SWEEP_CHUNK).filter((i) => i.acknowledged);
    const shutdown = this.store.shutdown();
    const results = await Promise.allSettled(chunk.map((instance) => this.instance(instance).check(this.assignmentOf(instance, shutdown))));
    let repaired = 0;
    this.store.transaction(() => {
      results.forEach((result, i) => {
        const instance = chunk[i]!;
        if (result.status === "rejected") return;
        const ack = result.value;
        const intact = instance.role === "idle" ? ack === undefined || holds(ack, instance) : ack !== undefined && holds(ack, instance);
        if (intact) return;
        // The instance lost what it was told (its storage, say): assigned again under a new
        // epoch, so that nothing it does can be mistaken for what it did before.
        this.store.put({ ...instance, epoch: this.store.nextEpoch(), acknowledged: false });
        repaired++;
      });
    });
    const more = from + SWEEP_CHUNK < all.length;
    this.ctx.storage.kv.put(SWEEP_CURSOR_KEY, more ? from + SWEEP_CHUNK : 0);
    if (!more) this.ctx.storage.kv.put(NEXT_SWEEP_KEY, Date.now() + SWEEP_INTERVAL_MS);
    if (repaired > 0) {
      logEvent("coordinator.sweep-repaired", { instances: repaired }, "warn");
      await this.pushUnacknowledged();
    }
    return { pushed: chunk.length, repaired, more };
  }

  /**
   * Brings the stored assignment in line with the configuration: an active per task (sticky,
   * balanced), NUM_STANDBYS standbys at other placements, and a warm-up standby for every active
   * on a placement no longer configured. Only writes; pushing comes after.
   */
  private reconcile(): void {
    const { PLACEMENTS: placements, NUM_STANDBYS: standbys } = this.config;
    this.store.transaction(() => {
      const instances = this.store.instances();
      const actives = instances.filter((i) => i.role === "active");
      const taskIds = this.host.application.taskIds();
      const activeTasks = new Set(actives.map((a) => a.taskId));
      const missing = new Set(taskIds.filter((t) => !activeTasks.has(t)));
      if (missing.size > 0) {
        const wanted = assignActives(
          taskIds,
          placements,
          actives.filter((a) => placements.includes(a.placement)),
        );
        for (const { taskId, placement } of wanted) {
          if (!missing.has(taskId)) continue;
          this.store.put({ taskId, placement, role: "active", epoch: this.store.nextEpoch(), acknowledged: false });
        }
      }
      const current = this.store.instances();
      const activePlacements = current.filter((i) => i.role === "active" && placements.includes(i.placement));
      const desired = [...placeStandbys(activePlacements, placements, current, standbys), ...warmUpTargets(current, placements)];
      const isDesired = (i: { taskId: string; placement: string }) => desired.some((d) => d.taskId === i.taskId && d.placement === i.placement);
      for (const instance of current) {
        if (instance.role === "active") continue;
        const wanted = isDesired(instance);
        if (wanted && instance.role !== "standby") this.store.put({ ...instance, role: "standby", epoch: this.store.nextEpoch(), acknowledged: false });
        if (!wanted && instance.role === "standby") this.store.put({ ...instance, role: "idle", epoch: this.store.nextEpoch(), acknowledged: false });
      }
      for (const d of desired) {
        if (!current.some((i) => i.taskId === d.taskId && i.placement === d.placement)) {
          this.store.put({ ...d, role: "standby", epoch: this.store.nextEpoch(), acknowledged: false });
        }
      }
    });
  }

  /** Why the last push failed, for the error of a migration left under way. */
  private lastPushError: string | undefined;

  /**
   * Tells instances their unacknowledged assignments, the alarm armed first. Revocations and
   * standby assignments go first; a task's new active only once every other instance of that task
   * has acknowledged (so the previous active has flushed and stopped). Every instance is told even
   * when one cannot be; false when some could not (they stay unacknowledged, for the alarm).
   */
  private async pushUnacknowledged(): Promise<boolean> {
    const pending = this.store.instances().filter((i) => !i.acknowledged);
    if (pending.length === 0) return true;
    await this.armAlarm(REBALANCE_CHECK_MS);
    const others = pending.filter((i) => i.role !== "active");
    const failed = (await this.pushAll(others)).length > 0;
    const waiting = new Set(
      this.store
        .instances()
        .filter((i) => !i.acknowledged && i.role !== "active")
        .map((i) => i.taskId),
    );
    const actives = pending.filter((i) => i.role === "active" && !waiting.has(i.taskId));
    const failedActives = await this.pushAll(actives);
    return !failed && failedActives.length === 0 && waiting.size === 0;
  }

  /** Pushes each instance's assignment and records each acknowledgement; returns the ones that failed. */
  private async pushAll(instances: readonly InstanceAssignment[]): Promise<InstanceAssignment[]> {
    const results = await Promise.allSettled(
      instances.map(async (instance) => {
        await this.push(instance);
        await this.crashes.reachAfterWrites("push:after-instance");
        this.store.transaction(() => this.store.acknowledge(instance.taskId, instance.placement, instance.epoch));
      }),
    );
    const failed = instances.filter((_, i) => results[i]!.status === "rejected");
    const reasons = results.filter((r): r is PromiseRejectedResult => r.status === "rejected").map((r) => String(r.reason));
    if (reasons.length > 0) {
      this.lastPushError = reasons[0];
      logEvent("coordinator.push-failed", { instances: failed.map(instanceName).join(","), error: reasons[0] }, "warn");
    }
    return failed;
  }

  /**
   * Tells one instance its assignment: a revocation for an idle one, else the assignment (halted
   * while the application is shut down). Answers the state the instance took (none: an instance
   * revoked before it ever had an assignment).
   */
  private async push(instance: InstanceAssignment): Promise<InstanceAck | undefined> {
    const stub = this.instance(instance);
    if (instance.role === "idle") return stub.revoke();
    return stub.assign(this.assignmentOf(instance, this.store.shutdown()));
  }

  /** What an instance is told: its assignment, halted while the application is shut down. */
  private assignmentOf(instance: InstanceAssignment, shutdown: ApplicationShutdown | undefined): Assignment {
    const { taskId, placement, role, epoch } = instance;
    return { taskId, placement, role, epoch, ...(shutdown && role === "active" ? { halted: haltReason(shutdown) } : {}) };
  }

  /**
   * Actives on placements no longer configured move once their warm-up standby (see `reconcile`)
   * is within ACCEPTABLE_RECOVERY_LAG (Kafka's acceptable.recovery.lag). False while one is still
   * catching up (the alarm checks again shortly).
   */
  private async moveOffRemovedPlacements(): Promise<boolean> {
    const targets = warmUpTargets(this.store.instances(), this.config.PLACEMENTS);
    let waiting = false;
    for (const { taskId, placement: to } of targets) {
      const warm = this.store.instances().find((i) => i.taskId === taskId && i.placement === to);
      if (!warm?.acknowledged) {
        waiting = true;
        continue;
      }
      const description = await this.instance(warm).describe();
      if (description.lag <= this.config.ACCEPTABLE_RECOVERY_LAG) await this.migrateNow(taskId, to);
      else waiting = true;
    }
    if (waiting) await this.armAlarm(REBALANCE_CHECK_MS);
    return !waiting;
  }

  /** Arms the alarm `delayMs` from now, unless one is armed sooner. */
  private async armAlarm(delayMs: number): Promise<void> {
    const at = Date.now() + delayMs;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > at) await this.ctx.storage.setAlarm(at);
  }

  /**
   * Fault hook (tests): the coordinator dies the next time one of its operations reaches `at`.
   * In memory only: the restarted object has no crash planned.
   */
  async crash(at: CoordinatorStep): Promise<void> {
    await this.serial.run(() => this.crashes.plan(at));
  }

  private instance(instance: { taskId: string; placement: string }) {
    return this.host.objects.taskObject(instanceName(instance));
  }
}

function haltReason(shutdown: ApplicationShutdown): string {
  return `${APPLICATION_SHUT_DOWN}: task ${shutdown.taskId} at ${shutdown.placement} failed: ${shutdown.reason}`;
}

/**
 * `Coordinator`: one per application. It owns the assignment of task instances to placements —
 * actives, standbys, and idle instances that keep state where a task used to run — and hands every
 * assignment a fresh epoch (I3). Revocation is acknowledged before the task is assigned elsewhere;
 * corruption reports wipe and revive the instances named, all of a report together. An uncaught
 * error under `"shutdown-application"` stops every active instance until an operator resumes the
 * application. Operators' requests about one task (resume, skip a record) go through it to the
 * task's active instance; an input reset of the whole application is a goal it stores and pushes
 * to every task reading the topics reset, as it pushes assignments.
 *
 * Every change is first written as the goal (the stored assignment, unacknowledged) and only then
 * pushed; the alarm is armed before any push. So a crash at any await — or the whole runtime
 * killed — leaves a goal that the alarm pushes again, idempotently, until every instance has
 * acknowledged it. A periodic sweep pushes acknowledged assignments again too and checks what the
 * instances report, repairing what they may have lost.
 *
 * It is off the data path: ingest and queries of running tasks never wait for it (the API caches
 * the versioned assignment, see workers/api/cluster.ts). Pushes go out in chunks of PUSH_CHUNK
 * instances per invocation (each is a subrequest), the alarm continuing with the next chunk; the
 * reconcile plan is O(T log T) (src/coordinator/reconcile.ts).
 */
import { DurableObject } from "cloudflare:workers";
import { EarliestAlarm } from "../src/util/alarm";
import type { Config } from "../src/config";
import { MigrationRefused, MigrationUnderWay } from "../src/coordinator/migration";
import { CoordinatorStore, type ApplicationShutdown, type InstanceAssignment } from "../src/coordinator/coordinator-store";
import { resets, type InputReset, type PartitionReset, type ResetTarget } from "../src/task/input-reset";
import type { RecordOrigin } from "../src/streams/errors";
import { planReconcile } from "../src/coordinator/reconcile";
import { warmUpTargets } from "../src/coordinator/standbys";
import { CoordinatorUnavailable } from "../src/coordinator/unavailable";
import { newSessionKey, SESSION_KEY_KEY } from "../src/coordinator/session-key";
import type { TaskDescription } from "../src/task/describe";
import { holds } from "../src/coordinator/holds";
import { APPLICATION_SHUT_DOWN, type Assignment, type InstanceAck, type SkipAnswer } from "../src/task/protocol";
import type { TopicPartition } from "../src/log/types";
import { instanceName } from "../src/names";
import { CrashPoints } from "../src/util/crash-points";
import { logEvent } from "../src/util/log";
import { backoffDelay } from "../src/util/backoff";
import { Serial } from "../src/util/serial";
import type { AssignmentPage, AssignmentSnapshot, CoordinatorCalls, ObjectHost, ShutdownRequest } from "./calls";

/** How soon the alarm pushes again what could not be pushed, and re-checks pending automatic moves. */
const REBALANCE_CHECK_MS = 1_000;
/** ... doubling per failed attempt in a row, up to this. */
const MAX_RETRY_MS = 30_000;
/** How often the sweep pushes every acknowledged assignment again. */
const SWEEP_INTERVAL_MS = 5 * 60_000;
/** Instances pushed per alarm by the sweep (each push is a subrequest or a few). */
const SWEEP_CHUNK = 100;
/**
 * Assignments pushed per invocation (each is one subrequest): with the sweep's chunk and the
 * checks of automatic moves, an alarm stays far below the 1,000 subrequests of the Free plan.
 */
export const PUSH_CHUNK = 200;
/** Warm-up instances described per invocation to decide automatic moves. */
const MOVE_CHECK_CHUNK = 50;
/** Keys in the object's KV storage: when the next sweep is due, where the current one stands, and an injected outage. */
const NEXT_SWEEP_KEY = "next-sweep-at";
const SWEEP_CURSOR_KEY = "sweep-cursor";
const FAILING_UNTIL_KEY = "failing-until";
/** Names this coordinator's storage, for caches of its versioned assignment. */
const GENERATION_KEY = "generation";
/** Set while the actives' assignments are pushed again after the shutdown was lifted (they carry `resume`). */
const RESUMING_KEY = "resuming";

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
  | "resume:after-clear"
  /** An input reset is stored as the goal; no task told yet. */
  | "reset:after-record";

export type MigrationResult = { readonly changed: boolean; readonly from: string; readonly to: string; readonly epoch: number };

/** What resuming one task found: resumed, or refused because the whole application is shut down. */
export type TaskResumeResult =
  | { readonly status: "resumed"; readonly task: TaskDescription }
  | { readonly status: "application-shut-down"; readonly shutdown: ApplicationShutdown };

/** An input reset as operators see it: what was asked, what the tasks that applied it did, and how many have not yet. */
export interface InputResetView {
  readonly id: string;
  readonly target: ResetTarget;
  readonly topics: readonly string[];
  readonly startedAt: number;
  /** When the last task applied it; null while some have not (the coordinator's alarm goes on). */
  readonly finishedAt: number | null;
  readonly partitions: readonly PartitionReset[];
  /** Tasks that have not applied it yet. */
  readonly pending: number;
}

/** What asking for a reset did: started one; found this very reset (the same `id`) made already; or another one still under way. */
export type ResetAnswer = { readonly status: "started" | "same" | "busy"; readonly reset: InputResetView };

/** Where converging stands: everything pushed; more to push (at once); or something failed or waits (back off). */
type Progress = { readonly done: boolean; readonly more: boolean };

/** The coordinator; a Worker exports the class `defineEdgeStreams` makes of it (see TaskObject). */
export class Coordinator extends DurableObject implements CoordinatorCalls {
  /** The object's one alarm (see EarliestAlarm). */
  private readonly alarms = new EarliestAlarm(this.ctx.storage);
  private readonly store: CoordinatorStore;
  private readonly serial = new Serial();
  private readonly crashes: CrashPoints<CoordinatorStep>;
  /** Alarm rounds in a row that left something unpushed (for the back-off). */
  private failures = 0;
  /** Calls received since the object started (tests check that ingest in steady state makes none). */
  private received = 0;
  /** The assignment version last reconciled with the configuration (nothing to plan until it changes). */
  private reconciled: number | undefined;
  /** Until when an injected outage lasts (epoch ms; kept in storage too). */
  private failingUntil: number;

  constructor(
    ctx: DurableObjectState,
    env: unknown,
    private readonly host: ObjectHost,
  ) {
    super(ctx, env as never);
    this.store = new CoordinatorStore(ctx.storage);
    this.failingUntil = ctx.storage.kv.get<number>(FAILING_UNTIL_KEY) ?? 0;
    this.crashes = new CrashPoints(
      (reason) => this.ctx.abort(reason),
      () => this.ctx.storage.sync(),
    );
    // On start: whatever a crash left unpushed gets an alarm (one armed before is kept).
    void ctx.blockConcurrencyWhile(async () => {
      if (this.store.instances().some((i) => !i.acknowledged)) await this.alarms.armBy(Date.now());
    });
  }

  private get config(): Config {
    return this.host.config;
  }

  /**
   * Every call starts here: counted, and refused while an injected outage lasts (the fault route
   * `POST /admin/coordinator/fail`), as a coordinator that cannot be reached would fail.
   */
  private enter(): void {
    this.received++;
    const left = this.failingUntil - Date.now();
    if (left > 0) throw new CoordinatorUnavailable(`the coordinator does not answer (injected failure, ${Math.ceil(left / 1000)} s left)`);
  }

  /**
   * The assignment, made or repaired as needed, and pushed (a chunk) to the instances that have
   * not acknowledged theirs. An instance that cannot be told now does not fail the call (callers
   * need the assignment, not the push): the alarm pushes again shortly.
   */
  async ensureAssigned(): Promise<InstanceAssignment[]> {
    this.enter();
    return this.serial.run(async () => {
      await this.converge();
      return this.store.instances();
    });
  }

  /**
   * The versioned assignment the API caches at the edge; made first when some task has no active
   * instance yet (first use, or a task the application gained), and pushed (a chunk) while an
   * active has not taken its assignment, so that it names owners that answer.
   */
  async snapshot(): Promise<AssignmentSnapshot> {
    this.enter();
    if (!this.everyActiveAcknowledged()) await this.serial.run(() => this.converge());
    return { generation: this.generation(), version: this.store.version(), instances: this.store.instances() };
  }

  private generation(): string {
    const stored = this.ctx.storage.kv.get<string>(GENERATION_KEY);
    if (stored !== undefined) return stored;
    const generation = crypto.randomUUID();
    this.ctx.storage.kv.put(GENERATION_KEY, generation);
    return generation;
  }

  /**
   * A log partition had its first append while no one listened (src: `LogPartition`): tasks are
   * made when their input first arrives. Cheap when every task has an active instance already.
   */
  async inputArrived(_tp: TopicPartition): Promise<void> {
    this.enter();
    if (this.everyTaskAssigned()) return;
    await this.serial.run(() => this.converge());
  }

  /** A page of the assignment for `GET /tasks` and the views: instances after `after`, the total and the shutdown. */
  async page(after: { taskId: string; placement: string } | undefined, limit: number): Promise<AssignmentPage> {
    this.enter();
    if (!this.everyTaskAssigned()) await this.serial.run(() => this.converge());
    const instances = this.store.page(after, limit);
    const all = this.store.instances();
    const last = instances[instances.length - 1];
    const more = last !== undefined && all[all.length - 1] !== last;
    return { generation: this.generation(), version: this.store.version(), instances, total: all.length, more, shutdown: this.store.shutdown() ?? null };
  }

  /** Calls received since the object started (tests count them: ingest in steady state makes none). */
  async callsReceived(): Promise<number> {
    return this.received;
  }

  /**
   * Fault route: for `ms`, every call fails as if the coordinator could not be reached, and its
   * alarm does no work (rebalancing stops). Kept in storage, so a restart does not end it; 0 ends it.
   */
  async failFor(ms: number): Promise<{ until: number }> {
    const until = Date.now() + Math.max(0, ms);
    if (ms > 0) this.ctx.storage.kv.put(FAILING_UNTIL_KEY, until);
    else this.ctx.storage.kv.delete(FAILING_UNTIL_KEY);
    this.failingUntil = ms > 0 ? until : 0;
    // Afterwards, whatever waits is pushed.
    await this.armAlarm(Math.max(0, ms));
    return { until };
  }

  /** The key signing browser sessions, made on first use (src/coordinator/session-key.ts). */
  async sessionKey(): Promise<string> {
    this.enter();
    const kept = this.ctx.storage.kv.get<string>(SESSION_KEY_KEY);
    if (kept !== undefined) return kept;
    // No await between the read and the write: two first calls cannot make two keys.
    const key = newSessionKey();
    this.ctx.storage.kv.put(SESSION_KEY_KEY, key);
    return key;
  }

  /** A new session key: every session signed with the old one ends. Answered once it is durable (the output gate). */
  async rotateSessionKey(): Promise<string> {
    this.enter();
    const key = newSessionKey();
    this.ctx.storage.kv.put(SESSION_KEY_KEY, key);
    logEvent("coordinator.sessions_revoked", {});
    return key;
  }

  private everyTaskAssigned(): boolean {
    return this.host.application.taskIds().every((t) => this.store.activeOf(t) !== undefined);
  }

  /** Every task has an active instance that took its assignment: the snapshot names owners that answer. */
  private everyActiveAcknowledged(): boolean {
    return this.host.application.taskIds().every((t) => this.store.activeOf(t)?.acknowledged === true);
  }

  /** Every step toward the goal, each of which may be cut short (the alarm comes back to it). */
  private async converge(): Promise<Progress> {
    this.reconcile();
    const pushed = await this.pushUnacknowledged();
    const moved = await this.moveOffRemovedPlacements().catch((error: unknown) => {
      logEvent("coordinator.move-failed", { error: String(error) }, "warn");
      return { done: false, more: false };
    });
    const reset = await this.pushReset();
    return { done: pushed.done && moved.done && reset.done, more: (pushed.more || moved.more || reset.more) && !pushed.failed };
  }

  /** Whether (and why) the application is shut down. */
  async shutdownState(): Promise<ApplicationShutdown | null> {
    this.enter();
    return this.store.shutdown() ?? null;
  }

  /**
   * A task's uncaught error chose `"shutdown-application"` (Kafka's SHUTDOWN_APPLICATION): every
   * active instance stops, and instances assigned later start stopped, until `resumeApplication`.
   * The first request's reason stays; the shutdown survives restarts of the coordinator. The
   * actives' assignments are marked to be pushed again (halted), in chunks, with the shutdown.
   */
  async shutdownApplication(request: ShutdownRequest): Promise<ApplicationShutdown> {
    this.enter();
    return this.serial.run(async () => {
      const existing = this.store.shutdown();
      if (existing) return existing;
      await this.armAlarm(REBALANCE_CHECK_MS);
      const shutdown = this.store.transaction(() => {
        this.store.unacknowledge("active");
        return this.store.shutDown({ ...request, at: Date.now() });
      });
      await this.crashes.reachAfterWrites("shutdown:after-record");
      await this.pushUnacknowledged();
      return shutdown;
    });
  }

  /**
   * An operator lifts the shutdown: every active instance's assignment is pushed again without
   * the halt, which clears its failure, and it processes again. Answers the actives resumed by
   * this call (the first chunk); the alarm resumes any others.
   */
  async resumeApplication(): Promise<InstanceAck[]> {
    this.enter();
    return this.serial.run(async () => {
      await this.armAlarm(REBALANCE_CHECK_MS);
      this.store.transaction(() => {
        this.store.clearShutdown();
        this.store.unacknowledge("active");
        this.ctx.storage.kv.put(RESUMING_KEY, true);
      });
      await this.crashes.reachAfterWrites("resume:after-clear");
      const { acks } = await this.pushUnacknowledged();
      return acks.filter((a): a is InstanceAck => a !== undefined && a.role === "active");
    });
  }

  /** An operator resumes one task stopped by its own uncaught error; refused while the application is shut down. */
  async resumeTask(taskId: string): Promise<TaskResumeResult> {
    this.enter();
    return this.serial.run(async () => {
      const shutdown = this.store.shutdown();
      if (shutdown) return { status: "application-shut-down" as const, shutdown };
      this.reconcile();
      await this.pushUnacknowledged(taskId);
      const active = this.store.activeOf(taskId)!;
      return { status: "resumed" as const, task: await this.instance(active).resume() };
    });
  }

  /**
   * An operator passes over the record a task stopped at (`POST /admin/tasks/:id/skip`): its
   * active instance keeps the skip and runs again — or, while the application is shut down, stays
   * stopped with the shutdown and passes over the record once it is lifted.
   */
  async skipRecord(taskId: string, at: RecordOrigin): Promise<SkipAnswer> {
    this.enter();
    return this.serial.run(async () => {
      this.reconcile();
      await this.pushUnacknowledged(taskId);
      const active = this.store.activeOf(taskId)!;
      const shutdown = this.store.shutdown();
      return this.instance(active).skip(at, shutdown ? haltReason(shutdown) : undefined);
    });
  }

  /**
   * An input reset of the application (`POST /admin/reset`, src/task/input-reset.ts): stored as
   * the goal first (the alarm armed before), then pushed to the active instance of every task
   * reading a topic reset, PUSH_CHUNK per invocation, the alarm going on with the rest. Each task
   * applies a reset once (it keeps its id), so pushing again after a crash changes nothing. One
   * reset at a time; asking again with the id of the last one answers its state.
   */
  async resetInput(request: InputReset): Promise<ResetAnswer> {
    this.enter();
    return this.serial.run(async () => {
      const current = this.store.inputReset();
      if (current?.id === request.id) return { status: "same" as const, reset: this.resetView()! };
      if (current && current.finishedAt === null) return { status: "busy" as const, reset: this.resetView()! };
      const application = this.host.application;
      const tasks = application
        .taskIds()
        .filter((t) => application.inputPartitions(t).some((tp) => !application.isGlobalInput(t, tp.topic) && resets(request, tp)));
      await this.armAlarm(REBALANCE_CHECK_MS);
      this.store.transaction(() => this.store.startReset(request, tasks, Date.now()));
      logEvent("coordinator.input-reset", { id: request.id, to: request.target.to, topics: request.topics.join(","), tasks: tasks.length }, "warn");
      await this.crashes.reachAfterWrites("reset:after-record");
      this.reconcile();
      await this.pushReset();
      return { status: "started" as const, reset: this.resetView()! };
    });
  }

  /** The last input reset and how far it is (undefined when there never was one). */
  async inputResetState(): Promise<InputResetView | undefined> {
    this.enter();
    return this.resetView();
  }

  private resetView(): InputResetView | undefined {
    const reset = this.store.inputReset();
    if (!reset) return undefined;
    const { applied, pending } = this.store.resetResults();
    return { ...reset, partitions: applied.flatMap((a) => a.partitions), pending };
  }

  /**
   * Tells the active instances of tasks that have not applied the input reset yet (a chunk), and
   * notes what each did; the reset is finished once none is left. A task whose active has not
   * taken its assignment yet, or does not answer, is told again later (the alarm).
   */
  private async pushReset(): Promise<Progress> {
    const reset = this.store.inputReset();
    if (!reset || reset.finishedAt !== null) return { done: true, more: false };
    const pending = this.store.resetPending(PUSH_CHUNK);
    if (pending.length > 0) {
      await this.armAlarm(REBALANCE_CHECK_MS);
      const shutdown = this.store.shutdown();
      const halted = shutdown ? haltReason(shutdown) : undefined;
      const results = await Promise.allSettled(
        pending.map(async (taskId) => {
          const active = this.store.activeOf(taskId);
          return active?.acknowledged ? this.instance(active).resetInput(reset, halted) : undefined;
        }),
      );
      this.store.transaction(() =>
        results.forEach((result, i) => {
          if (result.status === "fulfilled" && result.value) this.store.resetApplied(pending[i]!, result.value);
        }),
      );
      const failed = results.filter((r) => r.status === "rejected" || !r.value).length;
      if (failed > 0) logEvent("coordinator.input-reset-waiting", { id: reset.id, tasks: failed }, "warn");
      if (this.store.resetPending(1).length > 0) return { done: false, more: failed === 0 && pending.length >= PUSH_CHUNK };
    }
    this.store.transaction(() => this.store.finishReset(Date.now()));
    logEvent("coordinator.input-reset-done", { id: reset.id }, "warn");
    return { done: true, more: false };
  }

  /**
   * Tasks with no active instance that took its assignment (`GET /health`): the first `limit` and
   * how many. The assignment is made first if it is not yet (as for the views).
   */
  async tasksWithoutActive(limit: number): Promise<{ tasks: string[]; count: number }> {
    this.enter();
    if (!this.everyTaskAssigned()) await this.serial.run(() => this.converge());
    const missing = this.host.application.taskIds().filter((t) => this.store.activeOf(t)?.acknowledged !== true);
    return { tasks: missing.slice(0, limit), count: missing.length };
  }

  /** The current assignment, without changing it. */
  async assignments(): Promise<InstanceAssignment[]> {
    this.enter();
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
    this.enter();
    return this.serial.run(() => this.migrateNow(taskId, to));
  }

  private async migrateNow(taskId: string, to: string): Promise<MigrationResult> {
    if (!this.host.application.task(taskId)) throw new MigrationRefused(`unknown task ${JSON.stringify(taskId)}`);
    if (!this.config.PLACEMENTS.includes(to)) throw new MigrationRefused(`unknown placement ${JSON.stringify(to)}`);
    this.reconcile();
    const active = this.store.activeOf(taskId)!;
    if (active.placement !== to) {
      await this.armAlarm(REBALANCE_CHECK_MS);
      this.store.transaction(() => this.storeMove(active, to));
      await this.crashes.reachAfterWrites("migrate:after-intent");
      this.reconcile();
    }
    await this.pushUnacknowledged(taskId);
    const now = this.store.activeOf(taskId)!;
    if (!now.acknowledged)
      throw new MigrationUnderWay(
        `the move of task ${taskId} to ${to} is under way and completes on its own: ${this.lastPushError ?? "an instance has not answered yet"}`,
      );
    return { changed: active.placement !== to, from: active.placement, to, epoch: now.epoch };
  }

  /** The goal of a move: the active becomes idle (to revoke), the instance at `to` the new active. */
  private storeMove(active: InstanceAssignment, to: string): void {
    this.store.put({ ...active, role: "idle", acknowledged: false });
    this.store.put({ taskId: active.taskId, placement: to, role: "active", epoch: this.store.nextEpoch(), acknowledged: false });
  }

  /**
   * Corruption reported by the restore worker (or a task): every instance named is closed dirty,
   * wiped and revived as a new incarnation, all of one report together. A report about an
   * incarnation already wiped changes nothing. (A report that fails is made again by the restore
   * worker, which keeps the registrations until it got through.)
   */
  async reportCorruption(corrupted: readonly { instance: string; incarnation: number }[]): Promise<void> {
    this.enter();
    await Promise.all(corrupted.map(({ instance, incarnation }) => this.host.objects.taskObject(instance).corrupt(incarnation)));
  }

  /**
   * Pushes what is unacknowledged (a chunk per invocation), completes automatic moves, and sweeps
   * when due. Never fails (an alarm that fails 6 times is dropped): it comes back with a back-off.
   * During an injected outage it does nothing until the outage ends.
   */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    if (this.failingUntil > Date.now()) {
      await this.alarms.set(this.failingUntil);
      return;
    }
    let progress: Progress = { done: false, more: false };
    let sweeping = false;
    try {
      progress = await this.serial.run(() => this.converge());
      sweeping = await this.serial.run(() => this.sweepIfDue());
    } catch (error) {
      logEvent("coordinator.alarm-failed", { error: String(error) }, "warn");
    }
    this.failures = progress.done || progress.more ? 0 : this.failures + 1;
    if (progress.more) await this.armAlarm(0);
    else if (!progress.done) await this.armAlarm(backoffDelay(REBALANCE_CHECK_MS, MAX_RETRY_MS, this.failures - 1));
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
    this.enter();
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
   * Brings the stored assignment in line with the configuration (src/coordinator/reconcile.ts):
   * an active per task (sticky, balanced), NUM_STANDBYS standbys at other placements, and a
   * warm-up standby for every active on a placement no longer configured. Only writes (pushing
   * comes after), all under fresh epochs, in one transaction; nothing to do while the assignment
   * has not changed since it was last reconciled.
   */
  private reconcile(): void {
    if (this.reconciled === this.store.version() && this.reconciled !== undefined) return;
    const changes = planReconcile({
      taskIds: this.host.application.taskIds(),
      placements: this.config.PLACEMENTS,
      standbys: this.config.NUM_STANDBYS,
      instances: this.store.instances(),
    });
    if (changes.length > 0) {
      this.store.transaction(() => {
        let epoch = this.store.allocateEpochs(changes.length);
        for (const change of changes) this.store.put({ ...change, epoch: epoch++, acknowledged: false });
      });
    }
    this.reconciled = this.store.version();
  }

  /** Why the last push failed, for the error of a migration left under way. */
  private lastPushError: string | undefined;

  /**
   * Tells instances their unacknowledged assignments (at most PUSH_CHUNK; `focus`'s first), the
   * alarm armed first. Revocations and standby assignments go first; a task's new active only
   * once every other instance of that task has acknowledged (so the previous active has flushed
   * and stopped). Every instance of the chunk is told even when one cannot be. `done` when nothing
   * is left unacknowledged; `more` when the chunk was full; `failed` when some could not be told.
   */
  private async pushUnacknowledged(focus?: string): Promise<{ done: boolean; more: boolean; failed: boolean; acks: (InstanceAck | undefined)[] }> {
    let pending = this.store.instances().filter((i) => !i.acknowledged);
    if (pending.length === 0) return { done: true, more: false, failed: false, acks: [] };
    await this.armAlarm(REBALANCE_CHECK_MS);
    if (focus !== undefined) pending = [...pending.filter((i) => i.taskId === focus), ...pending.filter((i) => i.taskId !== focus)];
    const others = pending.filter((i) => i.role !== "active").slice(0, PUSH_CHUNK);
    const first = await this.pushAll(others);
    const waiting = new Set(
      this.store
        .instances()
        .filter((i) => !i.acknowledged && i.role !== "active")
        .map((i) => i.taskId),
    );
    const actives = pending.filter((i) => i.role === "active" && !waiting.has(i.taskId)).slice(0, PUSH_CHUNK - others.length);
    const second = await this.pushAll(actives);
    const failed = first.failed.length + second.failed.length > 0;
    const left = this.store.instances().some((i) => !i.acknowledged);
    if (this.ctx.storage.kv.get(RESUMING_KEY) && !this.store.instances().some((i) => !i.acknowledged && i.role === "active"))
      this.ctx.storage.kv.delete(RESUMING_KEY);
    return { done: !left, more: left && !failed && others.length + actives.length >= PUSH_CHUNK, failed, acks: [...first.acks, ...second.acks] };
  }

  /** Pushes each instance's assignment and records each acknowledgement; returns the acknowledgements and the ones that failed. */
  private async pushAll(instances: readonly InstanceAssignment[]): Promise<{ acks: (InstanceAck | undefined)[]; failed: InstanceAssignment[] }> {
    const results = await Promise.allSettled(
      instances.map(async (instance) => {
        const ack = await this.push(instance);
        await this.crashes.reachAfterWrites("push:after-instance");
        this.store.transaction(() => this.store.acknowledge(instance.taskId, instance.placement, instance.epoch));
        return ack;
      }),
    );
    const failed = instances.filter((_, i) => results[i]!.status === "rejected");
    const reasons = results.filter((r): r is PromiseRejectedResult => r.status === "rejected").map((r) => String(r.reason));
    if (reasons.length > 0) {
      this.lastPushError = reasons[0];
      logEvent("coordinator.push-failed", { instances: failed.map(instanceName).join(","), error: reasons[0] }, "warn");
    }
    const acks = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    return { acks, failed };
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

  /**
   * What an instance is told: its assignment, halted while the application is shut down, and for
   * an active whose shutdown was just lifted, to resume.
   */
  private assignmentOf(instance: InstanceAssignment, shutdown: ApplicationShutdown | undefined): Assignment {
    const { taskId, placement, role, epoch } = instance;
    if (role !== "active") return { taskId, placement, role, epoch };
    if (shutdown) return { taskId, placement, role, epoch, halted: haltReason(shutdown) };
    return this.ctx.storage.kv.get(RESUMING_KEY) && !instance.acknowledged
      ? { taskId, placement, role, epoch, resume: true }
      : { taskId, placement, role, epoch };
  }

  /**
   * Actives on placements no longer configured move once their warm-up standby (see `reconcile`)
   * is within ACCEPTABLE_RECOVERY_LAG (Kafka's acceptable.recovery.lag): MOVE_CHECK_CHUNK warm-up
   * instances described per call, the moves found stored together and pushed. Not done while one
   * is still catching up or left unchecked (the alarm checks again).
   */
  private async moveOffRemovedPlacements(): Promise<Progress> {
    const targets = warmUpTargets(this.store.instances(), this.config.PLACEMENTS);
    if (targets.length === 0) return { done: true, more: false };
    let waiting = false;
    const checks: InstanceAssignment[] = [];
    for (const { taskId, placement: to } of targets) {
      const warm = this.store.get(taskId, to);
      if (!warm?.acknowledged || checks.length >= MOVE_CHECK_CHUNK) waiting = true;
      else checks.push(warm);
    }
    const described = await Promise.allSettled(checks.map((warm) => this.instance(warm).describe()));
    const ready = checks.filter((_, i) => {
      const d = described[i]!;
      const caughtUp = d.status === "fulfilled" && d.value.lag <= this.config.ACCEPTABLE_RECOVERY_LAG;
      if (!caughtUp) waiting = true;
      return caughtUp;
    });
    if (ready.length > 0) {
      await this.armAlarm(REBALANCE_CHECK_MS);
      this.store.transaction(() => {
        for (const warm of ready) this.storeMove(this.store.activeOf(warm.taskId)!, warm.placement);
      });
      this.reconcile();
      const pushed = await this.pushUnacknowledged();
      if (!pushed.done) waiting = true;
    }
    if (waiting) await this.armAlarm(REBALANCE_CHECK_MS);
    return { done: !waiting, more: false };
  }

  /** Arms the alarm `delayMs` from now, unless one is armed sooner. */
  private async armAlarm(delayMs: number): Promise<void> {
    await this.alarms.armBy(Date.now() + delayMs);
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

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
 *
 * The class only wires storage, RPC and the alarm to the plain parts in src/coordinator: the
 * store and its settings, convergence (reconciler, pusher in the push plan's order, automatic
 * moves), task moves, input resets, shutdowns, operators' requests about a task, and the sweep.
 */
import { DurableObject } from "cloudflare:workers";
import { AssignmentPusher } from "../src/coordinator/assignment-pusher";
import { Convergence } from "../src/coordinator/convergence";
import type { CoordinatorContext, CoordinatorStep, Progress } from "../src/coordinator/coordinator-context";
import { CoordinatorStore, type ApplicationShutdown, type InstanceAssignment } from "../src/coordinator/coordinator-store";
import { InputResets, type InputResetView, type ResetAnswer } from "../src/coordinator/input-resets";
import { Reconciler } from "../src/coordinator/reconciler";
import { Shutdowns } from "../src/coordinator/shutdowns";
import { Sweep, type SweepResult } from "../src/coordinator/sweep";
import { type MigrationResult, TaskMoves } from "../src/coordinator/task-moves";
import { TaskRequests, type TaskResumeResult } from "../src/coordinator/task-requests";
import { InjectedOutage } from "../src/coordinator/unavailable";
import type { TopicPartition } from "../src/log/types";
import { instanceName } from "../src/names";
import type { RecordOrigin } from "../src/streams/errors";
import type { InputReset } from "../src/task/input-reset";
import type { InstanceAck, SkipAnswer } from "../src/task/protocol";
import { EarliestAlarm } from "../src/util/alarm";
import { CrashPoints } from "../src/util/crash-points";
import { logEvent } from "../src/util/logging";
import { Serial } from "../src/util/serial";
import type { AssignmentPage, AssignmentSnapshot, CoordinatorCalls, ObjectHost, ShutdownRequest } from "./calls";

/** The coordinator; a Worker exports the class `defineEdgeStreams` makes of it (see TaskObject). */
export class Coordinator extends DurableObject implements CoordinatorCalls {
  /** The object's one alarm (see EarliestAlarm). */
  private readonly alarms = new EarliestAlarm(this.ctx.storage);
  private readonly store: CoordinatorStore;
  private readonly serial = new Serial();
  private readonly crashes: CrashPoints<CoordinatorStep>;
  private readonly convergence: Convergence;
  private readonly moves: TaskMoves;
  private readonly resets: InputResets;
  private readonly sweeper: Sweep;
  private readonly shutdowns: Shutdowns;
  private readonly requests: TaskRequests;
  /** Calls received since the object started (tests check that ingest in steady state makes none). */
  private received = 0;
  /** An injected outage (src/coordinator/unavailable.ts; kept in the settings). */
  private readonly outage: InjectedOutage;

  constructor(
    ctx: DurableObjectState,
    env: unknown,
    private readonly host: ObjectHost,
  ) {
    super(ctx, env as never);
    const store = new CoordinatorStore(ctx.storage);
    this.store = store;
    this.outage = new InjectedOutage(store.settings);
    this.crashes = new CrashPoints(
      (reason) => this.ctx.abort(reason),
      () => this.ctx.storage.sync(),
    );
    const context: CoordinatorContext = {
      store,
      instance: (at) => this.instance(at),
      armAlarm: (delayMs) => this.armAlarm(delayMs),
      reach: (step) => this.crashes.reachAfterWrites(step),
    };
    const { application, config } = host;
    const reconciler = new Reconciler(store, () => ({ taskIds: application.taskIds(), placements: config.PLACEMENTS, standbys: config.NUM_STANDBYS }));
    const pusher = new AssignmentPusher(context);
    const moves = {
      hasTask: (t: string) => application.task(t) !== undefined,
      placements: config.PLACEMENTS,
      acceptableRecoveryLag: config.ACCEPTABLE_RECOVERY_LAG,
    };
    this.moves = new TaskMoves(context, moves, reconciler, pusher);
    this.resets = new InputResets(context, application, reconciler);
    this.convergence = new Convergence(reconciler, pusher, this.moves, this.resets);
    this.sweeper = new Sweep(context, pusher);
    this.shutdowns = new Shutdowns(context, pusher);
    this.requests = new TaskRequests(context, reconciler, pusher);
    // On start: whatever a crash left unpushed gets an alarm (one armed before is kept).
    void ctx.blockConcurrencyWhile(async () => {
      if (store.instances().some((i) => !i.acknowledged)) await this.alarms.armBy(Date.now());
    });
  }

  /**
   * Every call starts here: counted, and refused while an injected outage lasts (the fault route
   * `POST /admin/coordinator/fail`), as a coordinator that cannot be reached would fail.
   */
  private enter(): void {
    this.received++;
    this.outage.refuse(Date.now());
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
    return { generation: this.store.settings.generation(), version: this.store.version(), instances: this.store.instances() };
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
    return {
      generation: this.store.settings.generation(),
      version: this.store.version(),
      instances,
      total: all.length,
      more,
      shutdown: this.store.shutdown() ?? null,
    };
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
    const until = this.outage.start(ms, Date.now());
    // Afterwards, whatever waits is pushed.
    await this.armAlarm(Math.max(0, ms));
    return { until };
  }

  /** The key signing browser sessions, made on first use (src/coordinator/session-key.ts). */
  async sessionKey(): Promise<string> {
    this.enter();
    return this.store.settings.sessionKey();
  }

  /** A new session key: every session signed with the old one ends. Answered once it is durable (the output gate). */
  async rotateSessionKey(): Promise<string> {
    this.enter();
    const key = this.store.settings.rotateSessionKey();
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

  /** Every step toward the goal (src/coordinator/convergence.ts). */
  private converge(): Promise<Progress> {
    return this.convergence.converge();
  }

  /** Whether (and why) the application is shut down. */
  async shutdownState(): Promise<ApplicationShutdown | null> {
    this.enter();
    return this.store.shutdown() ?? null;
  }

  /** A task's uncaught error chose `"shutdown-application"`: every active stops (src/coordinator/shutdown.ts). */
  async shutdownApplication(request: ShutdownRequest): Promise<ApplicationShutdown> {
    this.enter();
    return this.serial.run(() => this.shutdowns.shutDown(request));
  }

  /** An operator lifts the shutdown; answers the actives resumed by this call (the alarm resumes any others). */
  async resumeApplication(): Promise<InstanceAck[]> {
    this.enter();
    return this.serial.run(() => this.shutdowns.lift());
  }

  /** An operator resumes one task stopped by its own uncaught error; refused while the application is shut down. */
  async resumeTask(taskId: string): Promise<TaskResumeResult> {
    this.enter();
    return this.serial.run(() => this.requests.resume(taskId));
  }

  /** An operator passes over the record a task stopped at (`POST /admin/tasks/:id/skip`, src/coordinator/task-requests.ts). */
  async skipRecord(taskId: string, at: RecordOrigin): Promise<SkipAnswer> {
    this.enter();
    return this.serial.run(() => this.requests.skip(taskId, at));
  }

  /**
   * An input reset of the application (`POST /admin/reset`, src/coordinator/input-resets.ts). One
   * at a time; asking again with the id of the last one answers its state.
   */
  async resetInput(request: InputReset): Promise<ResetAnswer> {
    this.enter();
    return this.serial.run(() => this.resets.start(request));
  }

  /** The last input reset and how far it is (undefined when there never was one). */
  async inputResetState(): Promise<InputResetView | undefined> {
    this.enter();
    return this.resets.view();
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
   * Moves a task's active instance: revoke at the current placement and only once that is
   * acknowledged, assign at `to` with a new epoch (src/coordinator/task-moves.ts). Once this call
   * has begun the move, a crash or a failed revocation only delays it, and the call fails saying so.
   */
  async migrate(taskId: string, to: string): Promise<MigrationResult> {
    this.enter();
    return this.serial.run(() => this.moves.migrate(taskId, to));
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
    const outageEnd = this.outage.endAfter(Date.now());
    if (outageEnd !== undefined) {
      await this.alarms.set(outageEnd);
      return;
    }
    let progress: Progress = { done: false, more: false };
    let sweeping = false;
    try {
      progress = await this.serial.run(() => this.converge());
      sweeping = await this.serial.run(() => this.sweeper.ifDue());
    } catch (error) {
      logEvent("coordinator.alarm-failed", { error: String(error) }, "warn");
    }
    await this.armAlarm(this.convergence.nextAlarmIn(progress, sweeping, this.sweeper.dueAt() - Date.now()));
  }

  /** A chunk of the sweep now, due or not (src/coordinator/sweep.ts). */
  async sweep(): Promise<SweepResult> {
    this.enter();
    return this.serial.run(() => this.sweeper.chunk());
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

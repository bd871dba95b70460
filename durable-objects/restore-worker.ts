/**
 * `RestoreWorker`: the restore worker of one placement (named `restore@<placement>`), in the role
 * of Kafka Streams' state updater. It alone reads changelogs for restoration: task objects
 * register and unregister with it, it fetches batches and applies them to them by RPC, keeps
 * standbys current, and reports corruption to the coordinator. A Durable Object with alarms keeps
 * its registrations durable and its rounds retried (alarms are at-least-once), and batches
 * applied twice are no-ops at the instance (I4).
 */
import { DurableObject } from "cloudflare:workers";
import { EarliestAlarm } from "../src/util/alarm";
import type { Log, TopicPartition } from "../src/log/types";
import { RestoreRegistry, type ChangelogWork, type Registration } from "../src/restore/registry";
import { InstanceReports } from "../src/restore/reports";
import type { InstanceReport, Summary } from "../src/summary/summary";
import { Restorer, type CorruptedInstance, type RestoreStep } from "../src/restore/restorer";
import { suspensionsOnEnd, suspensionsOnRegister, type RegistrationEnd, type Suspension } from "../src/restore/suspensions";
import type { RestoreBatch, RestoreReply } from "../src/task/protocol";
import { parseRestoreWorkerName, restoreWorkerName } from "../src/names";
import { instancesOfOtherShards, restoreShardOf } from "../src/restore/sharding";
import { CrashPoints } from "../src/util/crash-points";
import { logEvent } from "../src/util/logging";
import { Serial } from "../src/util/serial";
import { withTimeout } from "../src/util/timeout";
import { EarliestTimer } from "../src/util/timer";
import { ProgressFlusher } from "../src/restore/progress-flusher";
import { RoundPacing } from "../src/restore/round-pacing";
import type { ObjectHost, RestoreWorkerCalls } from "./calls";

/** Key in the object's KV storage: the name instances reach this worker by (`restore@<placement>[#<shard>]`). */
const NAME_KEY = "name";

/** The restore worker; a Worker exports the class `defineEdgeStreams` makes of it (see TaskObject). */
export class RestoreWorker extends DurableObject implements RestoreWorkerCalls {
  /** The object's one alarm (see EarliestAlarm). */
  private readonly alarms = new EarliestAlarm(this.ctx.storage);
  private readonly registry: RestoreRegistry;
  /** The latest report of each instance this shard serves, for the application summary. */
  private readonly reports: InstanceReports;
  private readonly restorer: Restorer;
  private readonly log: Log;
  private readonly serial = new Serial();
  private stopping = false;
  /** Crashes planned by `crash(at)` (tests) for a step of the next round run by `runRound`. */
  private readonly crashes: CrashPoints<RestoreStep>;
  /** When the alarm brings the next round (src/restore/round-pacing.ts). */
  private readonly pacing: RoundPacing;
  /** Writes the progress and reports held in memory, when and how src/restore/progress-flusher.ts says. */
  private readonly progress: ProgressFlusher;
  private readonly progressTimer = new EarliestTimer(() => this.progress.flush());
  /** `NAME_KEY` as stored, once read (see `name`). */
  private knownName: string | undefined;

  constructor(
    ctx: DurableObjectState,
    env: unknown,
    private readonly host: ObjectHost,
  ) {
    super(ctx, env as never);
    this.crashes = new CrashPoints(
      (reason) => this.ctx.abort(reason),
      () => this.ctx.storage.sync(),
    );
    const { application, config } = host;
    // A log that sends no wake-ups (a remote one): standbys' changelogs are polled.
    this.pacing = new RoundPacing(!host.log.capabilities.wakesReaders, config.STANDBY_UPDATE_INTERVAL_MS);
    this.registry = new RestoreRegistry(ctx.storage);
    this.reports = new InstanceReports(ctx.storage);
    this.log = host.log;
    const registry = this.registry;
    this.progress = new ProgressFlusher({
      parts: [
        {
          get pending() {
            return registry.progressPending;
          },
          take: () => registry.takeProgress(),
        },
        this.reports,
      ],
      transaction: (fn) => registry.transaction(fn),
      armBy: (at) => this.progressTimer.armBy(at),
      now: Date.now,
      failed: (error) => logEvent("restore.progress-flush-failed", { error: String(error) }, "warn"),
    });
    this.restorer = new Restorer({
      registry: this.registry,
      log: this.log,
      batchRecords: config.RESTORE_BATCH_RECORDS,
      batchBytes: config.RESTORE_BATCH_BYTES,
      readAhead: config.RESTORE_READ_AHEAD,
      // Its fetches say who reads: the partition skips wake-ups until then (see `wake`).
      reader: () => this.name(),
      apply: (instance, batch) => this.apply(instance, batch),
      reportCorruption: (corrupted) => this.reportCorrupted(corrupted),
      restoreListener: application.restoreListener,
      standbyListener: application.standbyListener,
      onStep: (step) => this.crashes.reach(step),
      onEnded: (suspensions) => this.notify(suspensions),
    });
  }

  /**
   * A task instance wants its changelogs restored (active) or kept current (standby). Idempotent:
   * instances repeat it until they hear it was taken. The alarm is armed first, so a registration
   * that became durable always has a round coming, whatever happens after.
   */
  async register(registration: Registration & { placement: string; worker?: string }): Promise<boolean> {
    await this.schedule();
    const name = registration.worker ?? restoreWorkerName(registration.placement);
    if (this.name() !== name) {
      this.ctx.storage.kv.put(NAME_KEY, name);
      this.knownName = name;
    }
    const previous = this.registry.ofInstance(registration.instance);
    const outcome = this.registry.register(registration);
    this.progress.later();
    if (outcome === "refused") return false;
    if (outcome === "registered") await this.notify(suspensionsOnRegister(previous, registration));
    if (registration.role === "standby") {
      // Standbys wait for their changelogs to grow: the partitions wake this worker on appends.
      await Promise.all(registration.changelogs.map((tp) => this.partition(tp).subscribe(name)));
    }
    return true;
  }

  /**
   * The instance no longer needs restoring: it restored to the end and runs now (`finished`: no
   * restoration was suspended, and its last reply is still on its way to the round, which then
   * tells the listener the restoration ended), or it was revoked, or wiped.
   */
  async unregister(instance: string, incarnation: number, end: RegistrationEnd = "revoked", epoch?: number): Promise<void> {
    const removed = this.registry.unregister(instance, incarnation, epoch);
    // Rows of an older incarnation than the one unregistering ended with its wipe.
    const wiped = removed.filter((w) => w.incarnation < incarnation);
    await this.notify([
      ...suspensionsOnEnd(wiped, "wiped"),
      ...suspensionsOnEnd(
        removed.filter((w) => w.incarnation === incarnation),
        end,
      ),
    ]);
  }

  /** Tells the application's listeners; a standby's suspension names the changelog's current end. */
  private async notify(suspensions: readonly Suspension[]): Promise<void> {
    for (const suspension of suspensions) {
      const { work } = suspension;
      if (suspension.listener === "restore") {
        this.host.application.restoreListener?.onRestoreSuspended?.(work, work.store, work.restored);
        continue;
      }
      const listener = this.host.application.standbyListener?.onUpdateSuspended;
      if (!listener) continue;
      // The end is a courtesy to the listener: a log that cannot say falls back to the position.
      const end = await this.log.offsets(work).then(
        (o) => o.latest,
        () => work.position ?? 0,
      );
      listener(work, work.store, work.position ?? 0, end, suspension.reason);
    }
  }

  /**
   * A changelog this worker keeps standbys on grew. Answers true when a round is coming that reads
   * it (the alarm is armed; a restarted worker reads every changelog once): its partition then skips
   * waking this worker until it fetched (src/log/wake-ups.ts). Not while stopping, nor while a test
   * holds rounds for `runRound`.
   */
  async wake(source?: TopicPartition): Promise<boolean> {
    if (source) this.registry.changelogGrew(source);
    this.progress.later();
    // Standbys are fed at most every STANDBY_UPDATE_INTERVAL_MS; a round armed sooner (a restoration) stays.
    await this.schedule(this.pacing.afterGrowth(Date.now()));
    return source !== undefined && !this.stopping && !this.crashes.pending;
  }

  async pause(): Promise<void> {
    this.registry.transaction(() => this.registry.setControl(true, 0));
  }

  /** Resumes restoration; with `maxBatches`, for at most that many batches, then paused again. */
  async resume(maxBatches?: number): Promise<void> {
    this.registry.transaction(() => this.registry.setControl(maxBatches !== undefined, maxBatches ?? null));
    await this.schedule();
  }

  async status(): Promise<{ paused: boolean; budget: number | null; changelogs: ChangelogWork[] }> {
    return { ...this.registry.control(), changelogs: this.registry.all() };
  }

  /** An instance of this shard says what it is now (throttled at the instance; a later report wins). */
  async report(report: InstanceReport): Promise<void> {
    this.reports.put(report);
    this.progress.later();
  }

  /**
   * This shard's part of the application summary — the reports of the tasks that hash to
   * `shard` of `shards` (others are left from before `RESTORE_SHARDS` changed) — and its
   * restore control. One call per shard makes a view, whatever the number of tasks.
   */
  async summary(shard: number, shards: number): Promise<Summary & { paused: boolean; budget: number | null }> {
    return { ...this.reports.summary((r) => restoreShardOf(r.taskId, shards) === shard), ...this.registry.control() };
  }

  /** Runs one round now (tests and the test driver; alarms do the same). */
  async runRound() {
    try {
      return await this.serial.run(() => this.round());
    } finally {
      this.progress.later();
    }
  }

  /**
   * One round; more follow while there is work, when src/restore/round-pacing.ts says (a round that
   * fails, or applies nothing though work remains, with a growing back-off; never by failing).
   */
  override async alarm(): Promise<void> {
    this.alarms.fired();
    // While a crash is planned, only `runRound` runs rounds, so the test chooses where it dies.
    if (this.stopping || this.crashes.pending) return;
    let more: boolean;
    let backlog = true;
    let progressed = false;
    try {
      this.dropForeignRegistrations();
      const result = await this.serial.run(() => this.round());
      more = result.more;
      backlog = result.backlog;
      progressed = result.applied > 0 || result.corrupted.length > 0;
    } catch (error) {
      logEvent("restore.round-failed", { error: String(error) }, "warn");
      more = true;
    }
    this.progress.later();
    const next = this.pacing.next({ more, backlog, progressed }, () => this.registry.everyChangelogMayHaveGrown(), Date.now());
    if (next !== undefined) await this.schedule(next);
  }

  /** One round of the restorer, its start noted for the pacing of standbys' updates. */
  private round() {
    this.pacing.began(Date.now());
    return this.restorer.round();
  }

  /**
   * After `RESTORE_SHARDS` changed, registrations of tasks that hash to another shard now are
   * dropped here: their instances register with their new shard (the shard is part of what an
   * instance keeps in line, see TaskObject), and batches are idempotent meanwhile (I4).
   */
  private dropForeignRegistrations(): void {
    const name = this.name();
    const self = name === undefined ? undefined : parseRestoreWorkerName(name);
    if (!self) return;
    for (const instance of instancesOfOtherShards(this.registry.all(), self.shard, this.host.restoreShards))
      this.registry.unregister(instance, Number.MAX_SAFE_INTEGER);
  }

  /** Stops taking rounds; waits at most `timeoutMs` for the one in progress. True when it ended in time. */
  async shutdown(timeoutMs: number): Promise<boolean> {
    this.stopping = true;
    await this.alarms.delete();
    return withTimeout(
      // After the round in progress: what it heard is written down before the worker stops.
      this.serial.run(() => {
        this.progress.flush();
        return true;
      }),
      timeoutMs,
      false,
    );
  }

  /**
   * Fault hook (tests), like `TaskObject.crash(at)`: the object's process dies at `at` of the next
   * batch of the next round that `runRound` runs (alarms take no rounds until then). In memory
   * only: the restarted object has no crash planned.
   */
  async crash(at: RestoreStep): Promise<void> {
    // After any round already running, so the plan applies to the next one.
    await this.serial.run(() => this.crashes.plan(at));
  }

  private async apply(instance: string, batch: RestoreBatch): Promise<RestoreReply> {
    return this.host.objects.taskObject(instance).applyRestoreBatch(batch);
  }

  private async reportCorrupted(corrupted: CorruptedInstance[]): Promise<void> {
    await this.host.objects.coordinator().reportCorruption(corrupted);
  }

  private partition(tp: TopicPartition) {
    return this.host.objects.partition(tp);
  }

  /** The name instances reach this worker by (its shard): written by `register` alone, so read once and kept. */
  private name(): string | undefined {
    this.knownName ??= this.ctx.storage.kv.get<string>(NAME_KEY);
    return this.knownName;
  }

  /** Arms the alarm `delayMs` from now, unless one is armed sooner. */
  private async schedule(delayMs = 0): Promise<void> {
    if (this.stopping) return;
    await this.alarms.armBy(Date.now() + delayMs);
  }
}

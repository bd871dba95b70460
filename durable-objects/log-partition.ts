/**
 * `LogPartition`: one partition of one topic of the embedded log. The class only wires storage and
 * RPC to `PartitionStore`; log errors travel back as values because RPC drops error classes.
 */
import { DurableObject } from "cloudflare:workers";
import { EarliestAlarm } from "../src/util/alarm";
import { LogUnavailable, outcome, type Outcome } from "../src/log/errors";
import { PartitionStore, Subscribers, type MaintenanceResult, type PartitionStats } from "../src/log/partition-store";
import { logEvent } from "../src/util/logging";
import { decodeFetch, type EncodedFetch } from "../src/log/record-batch";
import type { AppendOrigin } from "../src/log/durable-log";
import type {
  AppendResult,
  BatchMeasure,
  CommittedOffset,
  FetchBounds,
  FetchResult,
  OffsetRange,
  ProducerId,
  ProducerRecord,
  TopicPartition,
  UnseenAppendResult,
} from "../src/log/types";
import { hearsByAnswering, isSubscriptionHubName, subscriptionHubName } from "../src/names";
import { PartitionWakes } from "../src/log/partition-wakes";
import { ALARM_SLACK_MS, EchoSchedule, echoTargets, SETTLE_MS, type TaskReaders } from "../src/log/echoes";
import { compacts, type TopicConfig } from "../src/log/topic-config";
import { PartitionSinks, sinkPartition, type PartitionSink, type SinkCrashPoint } from "../src/connectors/partition-sinks";
import type { SinkPartitionStatus } from "../src/connectors/sink-delivery";
import { CrashPoints } from "../src/util/crash-points";
import { earliestOf } from "../src/util/earliest";
import type { ObjectDirectory, PartitionCalls } from "./calls";
import { RemoteLogManager, type SegmentBucket, type TieringCrashPoint, type TieringResult } from "../src/log/remote-log-manager";
import { CoordinatorNotice } from "../src/log/partition/coordinator-notice";
import { MAINTENANCE_RETRY_MS } from "../src/log/partition/log-cleaner-manager";

/** What a partition knows of the application it serves: which topics its tasks read (none for a bare log). */
export interface PartitionOptions {
  readonly isTaskInput?: (topic: string) => boolean;
  /** The sinks delivering a topic (src/connectors/partition-sinks.ts): run by the partition's alarm after appends. */
  readonly sinksOf?: (topic: string) => readonly PartitionSink[];
  /** Appends a sink's dead letter to its topic. */
  readonly appendDeadLetter?: (topic: string, record: ProducerRecord) => Promise<void>;
  /** Tiered storage: the R2 bucket (`TIERED_STORAGE`) and the prefix of this application's objects in it. */
  readonly remoteStorage?: { readonly bucket: SegmentBucket; readonly prefix: string };
}

/** A partition of the embedded log; a Worker exports the class `defineEdgeStreams` makes of it (see TaskObject). */
export class LogPartition extends DurableObject implements PartitionCalls {
  /** The object's one alarm (see EarliestAlarm). */
  private readonly alarms = new EarliestAlarm(this.ctx.storage);
  private readonly store: PartitionStore;
  private readonly subscribers: Subscribers;
  /** Tiered storage (src/log/remote-log-manager.ts), when the Worker binds a bucket for it. */
  private readonly remote: RemoteLogManager | undefined;
  /** Planned crashes of tiered storage's steps (tests). */
  readonly tieringCrashes = new CrashPoints<TieringCrashPoint>((reason) => this.ctx.abort(reason));
  /** Calls still to fail, set by the fault-injection route; kept in memory like a flaky link. */
  private failuresToInject = 0;
  /** Whom appends and echoes wake, and when (src/log/partition-wakes.ts). */
  private readonly wakes: PartitionWakes;
  /** The echoes' bookkeeping between appends and the alarm, in memory (src/log/echoes.ts). */
  private readonly echoes = new EchoSchedule();
  /** Appends since the object started: a settling planned before the latest one is void. */
  private appends = 0;
  /** Takes the echo alarm back once every subscriber has heard (see `settleSoon`). */
  private settleTimer: ReturnType<typeof setTimeout> | undefined;
  /** A call to the coordinator is on its way. */
  private tellingCoordinator = false;
  /** Whether the coordinator must still hear of this partition's input (src/log/partition/coordinator-notice.ts). */
  private readonly notice: CoordinatorNotice;
  /** The sinks of this partition's topic, delivered from the alarm. */
  private readonly sinks: PartitionSinks;
  private readonly sinkCrashes = new CrashPoints<SinkCrashPoint>(
    (reason) => this.ctx.abort(reason),
    () => this.ctx.storage.sync(),
  );

  constructor(
    ctx: DurableObjectState,
    env: unknown,
    private readonly objects: ObjectDirectory,
    private readonly options: PartitionOptions = {},
  ) {
    super(ctx, env as never);
    this.store = new PartitionStore(ctx.storage);
    this.subscribers = new Subscribers(ctx.storage);
    this.notice = new CoordinatorNotice(ctx.storage.kv);
    const deadLetter = options.appendDeadLetter ?? (async () => Promise.reject(new Error("this partition has no dead-letter path")));
    this.sinks = new PartitionSinks(options.sinksOf ?? (() => []), (topic, partition) =>
      sinkPartition(this.store, { topic, partition }, deadLetter, () => this.sinkCrashes.reachAfterWrites("sink:after-delivery")),
    );
    const remote = options.remoteStorage;
    this.remote = remote && new RemoteLogManager(this.store, remote.bucket, remote.prefix, this.tieringCrashes, ctx.storage.kv);
    this.wakes = new PartitionWakes({
      wakeTask: (name, pushed, echo, told) => this.objects.taskObject(name).wake(pushed, echo, told),
      wakeListener: (name, tp) => this.objects.listener(name).wake(tp),
      fetchEncoded: (tp, offset, bounds) => this.store.fetchEncoded(tp, offset, bounds),
      end: (tp) => this.store.offsets(tp).latest,
      heard: () => this.settleSoon(),
      background: (work) => this.ctx.waitUntil(work),
    });
  }

  private call<T>(fn: () => T): Outcome<T> {
    return outcome(() => {
      if (this.failuresToInject > 0) {
        this.failuresToInject--;
        throw new LogUnavailable("injected failure: the partition did not answer");
      }
      return fn();
    });
  }

  /** `call` of an asynchronous operation (a read from R2): its error travels back as a value too. */
  private async callAsync<T>(fn: () => Promise<T>): Promise<Outcome<T>> {
    const started = this.call(fn);
    if (!started.ok) return started;
    try {
      return { ok: true, value: await started.value };
    } catch (error) {
      return outcome(() => {
        throw error;
      });
    }
  }

  /** Appends; `config` is the topic's configuration as the producer's side knows it (kept for retention and compaction). */
  async append(
    tp: TopicPartition,
    records: ProducerRecord[],
    producer?: ProducerId,
    config?: TopicConfig,
    origin?: AppendOrigin,
  ): Promise<Outcome<AppendResult>> {
    await this.armEcho(tp, config);
    return this.afterAppend(
      tp,
      config,
      origin,
      this.call(() => this.store.append(tp, records, producer)),
    );
  }

  /**
   * `append` of an encoded batch (src/log/record-batch.ts): one string instead of an object per
   * record, with its sender's measure when it has one (then the batch is not parsed again).
   */
  async appendEncoded(
    tp: TopicPartition,
    records: string,
    producer?: ProducerId,
    config?: TopicConfig,
    origin?: AppendOrigin,
    measure?: BatchMeasure,
  ): Promise<Outcome<AppendResult>> {
    await this.armEcho(tp, config);
    return this.afterAppend(
      tp,
      config,
      origin,
      this.call(() => this.store.appendEncoded(tp, records, producer, measure)),
    );
  }

  /**
   * `appendEncoded` of records from an at-least-once source (a Queue), leaving out those whose
   * message id the partition appended recently (src/log/partition/source-ids.ts).
   */
  async appendUnseen(
    tp: TopicPartition,
    records: string,
    config?: TopicConfig,
    origin?: AppendOrigin,
    measure?: BatchMeasure,
  ): Promise<Outcome<UnseenAppendResult>> {
    await this.armEcho(tp, config);
    return this.afterAppend(
      tp,
      config,
      origin,
      this.call(() => this.store.appendUnseen(tp, records, measure)),
    );
  }

  private async afterAppend<R extends AppendResult>(
    tp: TopicPartition,
    config: TopicConfig | undefined,
    origin: AppendOrigin | undefined,
    result: Outcome<R>,
  ): Promise<Outcome<R>> {
    if (!result.ok) return result;
    if (config) this.store.configure(tp, config);
    if (!result.value.duplicate) {
      this.appends++;
      this.echoes.appended(Date.now());
      this.wakes.wake(tp, result.value.baseOffset + result.value.count, this.subscribers.list(), result.value);
      // Only the application's own appends make its tasks (see AppendOrigin): an external
      // producer may be another deployment using this log, whose tasks read these partitions.
      if (origin !== "external" && this.coordinatorMustHear(tp)) {
        this.notice.owe();
        // The retry is armed before the call goes out: dying while it is on its way must not
        // leave the debt with no alarm (a topic without retention arms none of its own).
        await this.alarms.armBy(this.notice.retryAt(Date.now()));
        this.ctx.waitUntil(this.tellCoordinator(tp));
      }
    }
    const due = this.store.maintenanceDueAt(Date.now());
    // Maintenance may come a little late: the echo armed just after a changelog's quiet compaction serves it.
    if (due !== undefined) await this.alarms.armBy(due, ALARM_SLACK_MS);
    // Watched: a producer that lingers makes every subscriber wait for it (send-schedule.ts).
    return this.subscribers.list().some(isSubscriptionHubName) ? { ok: true, value: { ...result.value, watched: true } } : result;
  }

  /**
   * Before an append, while anyone subscribes: the echo alarm (src/log/echoes.ts), armed first so
   * that a crash at any await after the append's write still has its subscribers woken again
   * (also when the producer's retry is taken as a duplicate). No write while one is armed sooner.
   */
  private async armEcho(tp: TopicPartition, config: TopicConfig | undefined): Promise<void> {
    const known = config ?? this.store.config();
    const echoAt = this.echoes.beforeAppend(Date.now(), this.subscribers.list(), hearsByAnswering, known !== null && compacts(known));
    if (echoAt !== undefined) await this.alarms.armBy(echoAt);
    // Sinks deliver from the alarm: armed before the append too, so a crash after it still delivers.
    if (this.sinks.delivers(tp.topic)) await this.alarms.armBy(Date.now());
  }

  /** Whom an echo must wake now (src/log/echoes.ts); undefined once every subscriber has heard. */
  private echoDue(tp: TopicPartition) {
    const names = this.subscribers.list();
    const tasks = names.some((name) => !hearsByAnswering(name));
    const taskReaders: TaskReaders = tasks ? this.store.readers(tp) : "none";
    const unheard = this.wakes.wakeUps.unheard(names.filter(hearsByAnswering), this.store.offsets(tp).latest);
    return echoTargets({ taskReaders, unheard, echoes: this.echoes.echoes });
  }

  /**
   * The partition's one alarm. It wakes the subscribers that have not heard of the appends yet — a
   * wake-up lost on the way must not strand input: it goes on, backing off, while a task reader's
   * committed offset stays behind the end or a restore worker has not answered — and applies
   * retention and compaction, a bounded amount per invocation (more work arms it again at once).
   * Never fails: an alarm that fails 6 times is dropped, so a failure is logged and retried later.
   */
  override async alarm(): Promise<void> {
    const armedFor = this.alarms.armedAt;
    this.alarms.fired();
    const tp = this.store.boundPartition();
    if (!tp) return;
    const now = Date.now();
    let next: number | undefined;
    const sooner = (at: number | undefined) => (next = earliestOf(next, at));
    const echo = this.echoDue(tp);
    const waitUntil = this.echoes.waitUntil(now, armedFor, echo !== undefined);
    if (waitUntil !== undefined) sooner(waitUntil);
    else if (echo) {
      const names = this.subscribers.list().filter((name) => (hearsByAnswering(name) ? echo.others.includes(name) : echo.tasks));
      this.wakes.wake(tp, this.store.offsets(tp).latest, names, undefined, true);
      sooner(this.echoes.echoed(now));
    }
    if (this.notice.owed && this.coordinatorMustHear(tp) && !(await this.tellCoordinator(tp))) sooner(this.notice.retryAt(now));
    try {
      sooner(this.store.maintain(tp, now, this.store.alarmBudget(now), false).nextAt);
      if (this.remote) {
        sooner((await this.remote.maintain(tp, now)).nextAt);
        sooner(this.store.maintenanceDueAt(Date.now()));
      }
    } catch (error) {
      logEvent("log.maintenance-failed", { topic: tp.topic, partition: tp.partition, error: String(error) }, "warn");
      sooner(now + MAINTENANCE_RETRY_MS);
    }
    if (this.sinks.delivers(tp.topic)) sooner(await this.sinks.run(tp.topic, tp.partition, now));
    if (next !== undefined) await this.alarms.armBy(Math.max(Date.now(), next));
  }

  /**
   * Tasks come into being when their input first arrives: the application's first append to a
   * partition that tasks read (not an external producer's, see AppendOrigin), while no task
   * listens, tells the coordinator once (it makes the tasks that do not exist yet). Not the data path: the append does not wait for it, and it is never asked again
   * once it answered; a failure is retried by the alarm.
   */
  private coordinatorMustHear(tp: TopicPartition): boolean {
    return this.notice.mustHear(this.options.isTaskInput?.(tp.topic) ?? false, this.subscribers.list().length > 0);
  }

  /** True once the coordinator has heard (or a call is on its way); false when it could not be reached (the alarm tries again). */
  private async tellCoordinator(tp: TopicPartition): Promise<boolean> {
    if (this.tellingCoordinator) return true;
    this.tellingCoordinator = true;
    try {
      await this.objects.coordinator().inputArrived(tp);
      this.notice.told(Date.now());
      return true;
    } catch (error) {
      logEvent("log.coordinator-unreachable", { topic: tp.topic, partition: tp.partition, error: String(error) }, "warn");
      await this.alarms.armBy(this.notice.retryAt(Date.now()));
      return false;
    } finally {
      this.tellingCoordinator = false;
    }
  }

  /**
   * Every subscriber may have heard of the appends (a restore worker answered, or a task reader's
   * offset reached the end): unless another append comes within SETTLE_MS, the echo alarm is taken
   * back — armed instead for what else is due (maintenance), or not at all — unless it comes soon
   * anyway (`keepsAlarm`: no later than the latest append's first echo, nor than what is due), where
   * it stays: taking it back is a storage write, and the next append would arm it again, another;
   * it comes once and arms what is due. In memory: an object that dies first only has its alarm
   * fire once for nothing.
   */
  private settleSoon(): void {
    if (!this.alarms.isArmed) return;
    const appends = this.appends;
    if (this.settleTimer !== undefined) clearTimeout(this.settleTimer);
    this.settleTimer = setTimeout(() => {
      this.settleTimer = undefined;
      if (this.appends === appends) this.ctx.waitUntil(this.settle());
    }, SETTLE_MS);
  }

  private async settle(): Promise<void> {
    const tp = this.store.boundPartition();
    // A debt to the coordinator keeps its retry on the alarm.
    if (!tp || this.echoDue(tp) || this.notice.owed) return;
    const now = Date.now();
    const due = earliestOf(this.store.maintenanceDueAt(now), this.sinks.delivers(tp.topic) ? this.sinks.dueAt(tp.topic, tp.partition, now) : undefined);
    if (this.echoes.keeps(this.alarms.armedAt, due)) return;
    await this.alarms.rearm(due === undefined ? undefined : Math.max(now, due));
  }

  /** Runs retention, compaction and tiering now, within the usual budget (tests and operators; the alarm does the same). */
  async maintain(tp: TopicPartition): Promise<Outcome<MaintenanceResult & { tiering?: TieringResult }>> {
    const result = outcome(() => this.store.maintain(tp, Date.now()));
    if (!result.ok || !this.remote) return result;
    try {
      return { ok: true, value: { ...result.value, tiering: await this.remote.maintain(tp, Date.now()) } };
    } catch (error) {
      return outcome(() => {
        throw error;
      });
    }
  }

  /** What the partition keeps now (GET /topics/:topic). */
  stats(tp: TopicPartition): Outcome<PartitionStats> {
    return this.call(() => ({ ...this.store.stats(tp), hub: this.subscribers.list().includes(subscriptionHubName(tp)) }));
  }

  /** Task instances that read this partition register here to be woken by appends. */
  subscribe(name: string): void {
    this.subscribers.add(name);
    // A (re)subscribing instance is woken by the next append, whatever it said before.
    this.wakes.subscribed(name);
  }

  unsubscribe(name: string): void {
    this.subscribers.remove(name);
    this.wakes.unsubscribed(name);
  }

  /** Fault injection: for `ms`, wake-ups after appends are dropped (as if lost on the way). */
  dropWakes(ms: number): void {
    this.wakes.dropFor(ms);
  }

  async read(tp: TopicPartition, offset: number, bounds: FetchBounds): Promise<Outcome<FetchResult>> {
    const fetched = await this.readEncoded(tp, offset, bounds);
    return fetched.ok ? { ok: true, value: decodeFetch(fetched.value) } : fetched;
  }

  /** `read`, encoded: stored batches as they are, decoded by the caller (`DurableLog`); below the local part, from R2. */
  async readEncoded(tp: TopicPartition, offset: number, bounds: FetchBounds): Promise<Outcome<EncodedFetch>> {
    // Before the read: an append after it wakes the reader again; one before it is read.
    if (bounds.reader !== undefined) this.wakes.readBy(bounds.reader);
    const remote = this.remote;
    if (!remote) return this.call(() => this.store.fetchEncoded(tp, offset, bounds));
    return this.callAsync(() => remote.fetchEncoded(tp, offset, bounds));
  }

  offsets(tp: TopicPartition): Outcome<OffsetRange> {
    return this.call(() => this.store.offsets(tp));
  }

  async offsetForTimestamp(tp: TopicPartition, timestamp: number): Promise<Outcome<number>> {
    const remote = this.remote;
    if (!remote) return this.call(() => this.store.offsetForTimestamp(tp, timestamp));
    return this.callAsync(() => remote.offsetForTimestamp(tp, timestamp));
  }

  deleteRecordsBefore(tp: TopicPartition, offset: number): Outcome<OffsetRange> {
    return this.call(() => this.store.deleteRecordsBefore(tp, offset));
  }

  commitOffset(group: string, tp: TopicPartition, committed: CommittedOffset): Outcome<void> {
    const result = this.call(() => this.store.commitOffset(group, tp, committed));
    // The reader's offset may have reached the end: the echo alarm may be taken back.
    if (result.ok) this.settleSoon();
    return result;
  }

  committedOffset(group: string, tp: TopicPartition): Outcome<CommittedOffset | null> {
    return this.call(() => this.store.committedOffset(group, tp));
  }

  /** The state of the sinks delivering this partition (`GET /sinks`), or of one. */
  sinkStatus(tp: TopicPartition, sink?: string): Outcome<SinkPartitionStatus[]> {
    return outcome(() => (this.sinks.delivers(tp.topic) ? this.sinks.status(tp.topic, tp.partition, sink) : []));
  }

  /** Fault injection (tests): the next delivery of a sink here dies at `at`, after delivering, before committing. */
  crashSink(at: SinkCrashPoint | undefined): void {
    this.sinkCrashes.plan(at);
  }

  /** Fault injection: the next `times` calls fail as an unreachable partition would. */
  injectFailures(times: number): void {
    this.failuresToInject = Math.max(0, Math.floor(times));
  }
}

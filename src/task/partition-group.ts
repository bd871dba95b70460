/**
 * The input partitions of a task instance (Kafka Streams' `PartitionGroup`): each step's batch is
 * fetched from every input partition — from the fetch an append pushed when there is one, else
 * from the log — and merged by timestamp, global tables' updates first. Input gone below the
 * task's position (retention) resumes at the earliest offset kept. It also keeps what the fetches
 * saw, so that lag needs no log call: each partition's end, its oldest waiting record
 * (input-lag.ts), and how much input waited (`pace`). All in memory; the input positions are the
 * task storage's.
 */
import type { Application } from "../application";
import { OffsetOutOfRange } from "../log/errors";
import { PushedFetches, type PushedFetch, type WakeTold } from "../log/pushed-fetches";
import type { LogRecord, TopicPartition } from "../log/types";
import type { InputRecord } from "../streams/runtime/types";
import { oldestWaiting, type InputHead } from "./input-lag";
import { QuietInputs } from "./quiet-inputs";
import { TOMBSTONE_HEADER, type InputPositions } from "./record-collector";
import type { TaskOptions } from "./task-options";
import type { TaskStorage } from "./task-storage";
import { topicPartition } from "../names";

export interface PartitionGroupDeps {
  readonly application: Application;
  readonly storage: TaskStorage;
  /** Read at each use, as the task's own. */
  readonly options: Pick<TaskOptions, "log" | "maxBatchRecords" | "maxLoadedBatchRecords" | "maxBatchBytes" | "onInputReset">;
  readonly now: () => number;
  /** Input gone below the position is a reset written at once: what was processed and not committed goes first. */
  readonly dropUncommitted: () => void;
  /** Stops the instance: its input lost records (it ends below the position). */
  readonly fail: (reason: string) => void;
}

/** How much input the last step found (see `StreamTask.loaded` and `StreamTask.backlog`). */
export interface InputPace {
  readonly loaded: boolean;
  readonly backlog: boolean;
}

/** A stopped instance reads its input's ends and waiting records at most this often (see `noteStoppedInput`). */
const STOPPED_INPUT_INTERVAL_MS = 5_000;

export class PartitionGroup {
  /** Each input partition's end as its last fetch saw it (for reports, which must not call the log). */
  private readonly ends = new Map<string, number>();
  /** Each input partition's oldest record not yet processed, as a fetch from the processed position saw it (input-lag.ts). */
  private readonly heads = new Map<string, InputHead>();
  /** When a stopped instance last looked at its input's ends (see `noteStoppedInput`). */
  private stoppedInputSeenAt = -Infinity;
  private lastPace: InputPace = { loaded: false, backlog: false };
  /** Fetches the input partitions made as they appended, for the next fetch from there (src/log/pushed-fetches.ts). */
  private readonly pushed = new PushedFetches();
  /** Input partitions known to end at the instance's position, which a step need not fetch (quiet-inputs.ts). */
  private readonly quiet = new QuietInputs();

  constructor(private readonly deps: PartitionGroupDeps) {}

  get pace(): InputPace {
    return this.lastPace;
  }

  /**
   * Fetches one batch from every input partition from `positions`, merged by timestamp; notes how
   * much was waiting. `stillCurrent` says whether the work the positions came from still stands
   * once the fetches return (an input reset may have dropped it meanwhile). `skipQuiet`: partitions
   * known to end at the position are left out (quiet-inputs.ts; a run's steps, not a drain's).
   */
  async fetchBatch(taskId: string, positions: InputPositions, stillCurrent: () => boolean, skipQuiet = false): Promise<InputRecord[]> {
    const app = this.deps.application;
    const inputs = app.inputPartitions(taskId);
    const base = this.deps.options.maxBatchRecords ?? 1000;
    const maxRecords = this.lastPace.loaded ? Math.max(base, this.deps.options.maxLoadedBatchRecords ?? 10_000) : base;
    const results = await Promise.all(inputs.map((tp) => this.fetchInput(tp, positions[topicPartition(tp)] ?? 0, maxRecords, skipQuiet)));
    // The uncommitted work was dropped meanwhile (an input reset): these follow on from positions that are gone.
    if (!stillCurrent()) {
      this.lastPace = { loaded: this.lastPace.loaded, backlog: true };
      return [];
    }
    const waiting = results.reduce((n, r) => n + r.waiting, 0);
    this.lastPace = {
      // The step that takes the rest of a backlog belongs to the same busy spell, however little
      // was left: the task goes on gathering input for its next commit rather than committing
      // each arrival (which, under load, would leave its commits small from then on).
      loaded: waiting >= base || (this.lastPace.loaded && this.lastPace.backlog && waiting > 0),
      backlog: results.some((r) => r.waiting > r.records.length),
    };
    // Global tables' updates first, as Kafka keeps its global tables current apart from (and ahead of) stream time.
    const global = inputs.map((tp) => app.isGlobalInput(taskId, tp.topic));
    return [...results.filter((_, i) => global[i]).flatMap((r) => r.records), ...mergeByTimestamp(results.filter((_, i) => !global[i]).map((r) => r.records))];
  }

  /**
   * An input partition's fetch as it appended: while the instance runs, the next fetch from there
   * uses it instead of calling the log; a stopped instance still learns how far its input has
   * grown (its lag keeps counting).
   */
  offer(pushed: PushedFetch, running: boolean): void {
    const key = topicPartition(pushed.tp);
    this.quiet.toldEnd(key, pushed.fetch.latest);
    if (running) this.pushed.offer(pushed, this.deps.now());
    else this.ends.set(key, Math.max(this.ends.get(key) ?? 0, pushed.fetch.latest));
  }

  /**
   * A wake-up told of input (see `StreamTask.toldOfInput`): its push, offered; where its partition
   * ended; a wake-up that tells neither makes every partition be fetched again. `lookingAt`: the
   * instance answered that it looks by then (under load), so its partitions skip wake-ups until about then.
   */
  told(pushed: PushedFetch | undefined, told: WakeTold | undefined, running: boolean, lookingAt?: number): void {
    if (lookingAt !== undefined) {
      this.quiet.answeredLooking(lookingAt);
      return;
    }
    if (pushed) this.offer(pushed, running);
    if (told) this.quiet.toldEnd(topicPartition(told.tp), told.end);
    if (!pushed && !told) this.quiet.toldNothing();
  }

  /** Input partitions' ends as last fetched (by position key); none before the first fetch. */
  knownEnds(): ReadonlyMap<string, number> {
    return this.ends;
  }

  /** Input of one partition from `offset`, and how many records were waiting there (`latest - offset`). */
  private async fetchInput(tp: TopicPartition, offset: number, maxRecords: number, skipQuiet: boolean): Promise<{ records: InputRecord[]; waiting: number }> {
    const { storage, options } = this.deps;
    const log = options.log;
    const bounds = { maxRecords, maxBytes: options.maxBatchBytes ?? 1 << 20 };
    const key = topicPartition(tp);
    const read = async (from: number) => {
      const now = this.deps.now();
      const pushed = this.pushed.take(tp, from, bounds, now);
      if (pushed) this.quiet.pushTaken(key, pushed.latest);
      // Known to end here, and every append since would have woken the instance: nothing to fetch.
      else if (skipQuiet && log.capabilities.wakesReaders && this.quiet.quiet(key, from, now)) return { records: [], waiting: 0 };
      const begun = this.quiet.beginFetch(now);
      const { records, latest } = pushed ?? (await log.fetch(tp, from, bounds));
      if (!pushed) this.quiet.fetched(key, latest, begun);
      this.noteFetched(tp, from, records, latest);
      return { records: records.map((r) => toInput(tp, r)), waiting: Math.max(records.length, latest - from) };
    };
    try {
      return await read(offset);
    } catch (error) {
      if (!(error instanceof OffsetOutOfRange)) throw error;
      // Input below the earliest kept offset is gone (retention): resume at the earliest, as
      // Kafka's auto.offset.reset=earliest does. Beyond the end means the log lost records.
      const { earliest, latest } = await log.offsets(tp);
      // The reset is written down at once: what was processed and not committed goes first.
      this.deps.dropUncommitted();
      if (offset > latest) {
        this.deps.fail(`input ${topicPartition(tp)} ends at ${latest}, below the task's position ${offset}`);
        return { records: [], waiting: 0 };
      }
      storage.transaction(() => storage.writePositions({ [topicPartition(tp)]: earliest }));
      options.onInputReset?.(tp, offset, earliest);
      return read(earliest);
    }
  }

  /**
   * What a fetch of `tp` from `from` tells of the input: its end, and, when it began at the
   * processed position, the oldest record waiting there (input-lag.ts). No log call of its own.
   */
  private noteFetched(tp: TopicPartition, from: number, records: readonly LogRecord[], latest: number): void {
    const key = topicPartition(tp);
    this.ends.set(key, latest);
    const first = records[0];
    if (first && from === (this.deps.storage.positions()[key] ?? 0)) this.heads.set(key, { offset: first.offset, timestamp: first.timestamp });
  }

  /**
   * A stopped instance still tells its lag (a dashboard must not read 0 while records wait): at
   * most every STOPPED_INPUT_INTERVAL_MS, in a run that wakes it anyway, it reads one record at its
   * position in each input partition, which gives the partition's end and the waiting record's
   * timestamp. Not on the processing path; a log that cannot answer leaves what was known.
   */
  async noteStoppedInput(taskId: string): Promise<void> {
    const now = this.deps.now();
    if (now - this.stoppedInputSeenAt < STOPPED_INPUT_INTERVAL_MS) return;
    this.stoppedInputSeenAt = now;
    const positions = this.deps.storage.positions();
    await Promise.all(
      this.deps.application.inputPartitions(taskId).map(async (tp) => {
        const from = positions[topicPartition(tp)] ?? 0;
        const fetched = await this.deps.options.log.fetch(tp, from, { maxRecords: 1, maxBytes: 1 }).catch(() => undefined);
        if (fetched) this.noteFetched(tp, from, fetched.records, fetched.latest);
      }),
    );
  }

  /** The instance just stopped: its lag is looked at again with the next run (see `noteStoppedInput`). */
  lookAgainWhenStopped(): void {
    this.stoppedInputSeenAt = -Infinity;
  }

  /** The timestamp of the oldest input record of task `taskId` not yet processed, as known without calling the log (null: none known to wait). */
  oldestWaiting(taskId: string): number | null {
    return oldestWaiting(this.deps.application.inputPartitions(taskId), this.deps.storage.positions(), this.ends, this.heads);
  }

  /** Positions moved (an input reset, a wipe): fetches made before say nothing of where the instance is now. */
  forgetPushed(): void {
    this.pushed.clear();
    this.quiet.forget();
  }

  /** The oldest waiting records seen of these partitions (all when none are named) are not where the instance is any more. */
  forgetHeads(keys?: readonly string[]): void {
    if (!keys) this.heads.clear();
    else for (const key of keys) this.heads.delete(key);
  }
}

const isTombstoneHeader = (h: { readonly key: string }) => h.key === TOMBSTONE_HEADER;

function toInput(tp: TopicPartition, record: LogRecord): InputRecord {
  const tombstone = record.headers.length > 0 && record.headers.some(isTombstoneHeader);
  return {
    topic: tp.topic,
    partition: tp.partition,
    offset: record.offset,
    key: record.key,
    value: tombstone ? null : record.value,
    timestamp: record.timestamp,
    headers: tombstone ? record.headers.filter((h) => !isTombstoneHeader(h)) : record.headers,
  };
}

/**
 * Interleaves the partitions' records by timestamp (the smallest head first, as Kafka Streams
 * chooses the next record), keeping each partition's own order.
 */
export function mergeByTimestamp(partitions: readonly (readonly InputRecord[])[]): InputRecord[] {
  if (partitions.length === 1) return [...partitions[0]!];
  const heads = partitions.map(() => 0);
  const merged: InputRecord[] = [];
  for (;;) {
    let pick = -1;
    partitions.forEach((records, i) => {
      const head = records[heads[i]!];
      if (head && (pick < 0 || head.timestamp < partitions[pick]![heads[pick]!]!.timestamp)) pick = i;
    });
    if (pick < 0) return merged;
    merged.push(partitions[pick]![heads[pick]!++]!);
  }
}

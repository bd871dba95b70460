/**
 * Gathered ingest appends (Kafka's producer accumulator): concurrent ingest requests in one isolate
 * that append to the same partition go to its object as one append — one request and one row
 * instead of one per HTTP request. Under load every request of the `cost-load` scenario touches
 * every partition, so without gathering the appends alone cost a partition request per partition
 * per HTTP request (docs/scale.md).
 *
 * When appends gather: while an append of this isolate to the partition is in flight, the appends
 * that arrive wait for it and then go together (one in flight per partition, as Kafka's
 * `max.in.flight.requests.per.connection=1`). A lone append — none in flight — goes at once, so a
 * request alone is not delayed (the e2e latency goals); one that waits behind an append in flight
 * would have queued at the partition's object anyway. A linger (Kafka's `linger.ms`,
 * `INGEST_LINGER_MS`) paces a streaming partition besides: while it takes at least
 * `LINGER_MIN_RECORDS_PER_S` records a second from this isolate (as the partitions hold wake-ups,
 * src/log/wake-linger.ts), its appends go at most one per linger, each holding what arrived
 * meanwhile. Not a fixed timer: that would delay every lone append (one order at a time), while
 * this one delays only appends of a partition already taking a stream, by at most the linger.
 *
 * Why pace at all: under a steady stream every append costs more than itself — the task's wake-up,
 * its commit, the changelog and output appends and the standby's round follow each append that
 * comes a commit interval or more after the last (docs/scale.md, cost-load) — so gathering only
 * behind an append in flight made the cost of a stream depend on whether its appends happened to
 * overlap (how busy the machine was). Paced, a partition streaming from an isolate takes one
 * append per linger whatever the machine's speed. Two limits keep the linger from only waiting:
 * an append goes at once once the waiting members hold `LINGER_BATCH_BYTES` (Kafka's
 * `batch.size`: a faster stream or bigger requests send full appends sooner — more of them, but
 * each as full), and a linger of half the linger or more that no request joined (the requests
 * came one at a time, each waiting for its answer: a client in a loop) is not tried again on that
 * partition for `LINGER_RETRY_MS`, so that such a client is not held up by a linger on every
 * request. A request that brings `LINGER_ALONE_BYTES` or more is not held at all. And no linger
 * while live subscribers wait on the partition
 * (its answer said `watched`, as for a task's sends: src/task/watch-hold.ts): they would wait it out.
 *
 * Requests on their way: a request announces itself as it begins (`expect(topic)`, before its
 * body is read and parsed) and says when it has given its members (or left). A lane about to send
 * waits for the requests announced on its topic then, at most `EXPECT_WAIT_MS`: they are being
 * read and parsed on the same isolate and would reach the lane a moment later, to wait behind this
 * append in flight and go as one of their own. So the concurrent requests of one client (the
 * `http` scenario's four of 500 orders) go as one append per partition instead of three of four,
 * and a lone request — none other announced — goes at once. Only those announced before the lane
 * sends are waited for, so a stream of requests cannot hold a lane indefinitely.
 *
 * A gathered append is bounded so that it stays one row (`MAX_ROW_BYTES`, the 1 MiB row cap, with
 * the partition's 8 bytes per record): members are taken oldest first while they fit, the rest
 * wait for the next one; a member too big for a row alone goes alone (the partition splits it as
 * it does today).
 *
 * Each member's promise settles only when the append holding its records did (acks=all: never an
 * answer before the records are committed), with its own records' offsets, or with that append's
 * error: the append is one transaction, so on failure none of its members' records are in the log,
 * and each member answers the error as it would have alone (nothing is retried here, so nothing is
 * doubled). Requests with an `Idempotency-Key` are not gathered: each is its own idempotent
 * producer, and a partition's row carries one producer (its batch header, which the producers'
 * state is rebuilt from), so they append alone and a retry is still found as a duplicate.
 *
 * Who sends: the oldest waiting member, in its own request's context — not the request whose
 * append just finished, which may answer and end meanwhile (a request's context ends with it, and
 * what it started may be cancelled). Pure: the sending, the clock and the linger's sleep are passed in.
 */
import { LogUnavailable } from "../log/errors";
import type { AppendResult, BatchMeasure } from "../log/types";
import { encodedBytes } from "../log/record-batch";
import { MAX_ROW_BYTES } from "../log/stored-batch";
import { type Arrival, LINGER_MIN_RECORDS_PER_S, streaming } from "../log/wake-linger";
import { WATCHED_HOLD_MS } from "../task/watch-hold";

/** The partition's bytes per record beside the encoded records (its size and offset: stored-batch.ts). */
const PER_RECORD_BYTES = 8;

/**
 * A lingering append goes at once when its members hold this many bytes (Kafka's producer
 * `batch.size`, 16 KiB by default): at 5,000 orders a second over 4 partitions a 100 ms linger
 * gathers about 6 KB (200 ms: 11 KB), so the linger paces it; a faster stream fills this sooner.
 */
export const LINGER_BATCH_BYTES = 16 * 1024;
/**
 * A request that brings at least this much to a partition (about 80 of the example's orders) is not
 * held by the linger: its append carries enough to be worth its cost alone, and such requests come
 * from clients that wait for each answer (a bulk load, several requests at a time), whose next
 * requests a linger cannot gather — each request's lingers on its other partitions would only hold
 * up the others (measured: the `http` scenario's 500-order requests, 4 at a time, 15–25% slower).
 */
export const LINGER_ALONE_BYTES = 4 * 1024;
/**
 * How long a lane about to send waits at most for the requests announced on its topic (`expect`)
 * to give their members: a request's read and parse take a few milliseconds at most here; more is
 * a client slow to send its body, which does not hold the others longer than this.
 */
export const EXPECT_WAIT_MS = 20;
/** After a linger that no request joined, the partition's appends do not linger for this long. */
export const LINGER_RETRY_MS = 1_000;

/** One request's records for one partition, encoded by `encodeBatch` (record-batch.ts) and measured. */
export interface GatherMember {
  readonly text: string;
  readonly measure: BatchMeasure;
  /** The UTF-8 bytes of `text` when `encodeBatch` found them (`EncodedRecords.bytes`); else counted when it joins. */
  readonly bytes?: number;
}

/** What goes to the partition: members' records joined in order, one encoded batch. */
export interface GatheredBatch {
  readonly text: string;
  readonly measure: BatchMeasure;
  /** How many members it holds (1: an append alone). */
  readonly members: number;
}

export interface GatherOptions {
  /**
   * While the partition takes at least `minRecordsPerS` records a second from this isolate, its
   * appends go at most every `lingerMs`, each holding what arrived since (0: no pacing; see above).
   */
  readonly lingerMs?: number;
  /** The rate from which appends linger (default `LINGER_MIN_RECORDS_PER_S`, as the partitions' held wake-ups). */
  readonly minRecordsPerS?: number;
  /** The members' bytes at which a lingering append goes at once (default `LINGER_BATCH_BYTES`). */
  readonly batchBytes?: number;
  /** How long a partition does not linger after a linger no request joined (default `LINGER_RETRY_MS`). */
  readonly lingerRetryMs?: number;
  /** The bytes from which a member is not held by the linger (default `LINGER_ALONE_BYTES`). */
  readonly aloneBytes?: number;
  /** The clock (milliseconds). */
  readonly now?: () => number;
  /** The largest gathered append, bytes as a row counts them (default `MAX_ROW_BYTES`). */
  readonly maxBytes?: number;
  /** Waits `ms` (the linger); only called when `lingerMs` > 0. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** How long a member waits for its turn or its result before it gives up (default `WAIT_LIMIT_MS`). */
  readonly waitLimitMs?: number;
  /** Calls `fn` after `ms` unless cancelled (the returned function): the member's own timer. */
  readonly timer?: (fn: () => void, ms: number) => () => void;
  /** How long a lane waits at most for announced requests (default `EXPECT_WAIT_MS`; 0: not at all). */
  readonly expectWaitMs?: number;
}

/** A request announced by `expect`, until it gives its members or leaves. */
interface Coming {
  readonly arrived: Promise<void>;
  /** Set once it gave its members or left. */
  done: boolean;
}

/**
 * How long a member waits for the append holding it before it answers `LogUnavailable`: far beyond
 * any append's time, a bound for when the request sending it is gone (its context cancelled).
 */
export const WAIT_LIMIT_MS = 30_000;

interface Waiting {
  readonly member: GatherMember;
  readonly bytes: number;
  readonly count: number;
  /** Told when this member is to send the next append. */
  readonly lead: () => void;
  readonly resolve: (result: AppendResult) => void;
  readonly reject: (error: unknown) => void;
}

/** One partition's appends of this isolate: whether one is in flight, those waiting, when the last went, and the recent rate. */
interface Lane {
  busy: boolean;
  readonly waiting: Waiting[];
  lastSentAt: number;
  /** Members that arrived within the rate window: when, and how many records. */
  readonly recent: Arrival[];
  /** Until when the lane does not linger (a linger that no request joined; see `LINGER_RETRY_MS`). */
  noLingerUntil: number;
  /** Until when live subscribers wait on the partition (its last `watched` answer and `WATCHED_HOLD_MS`): no linger. */
  watchedUntil: number;
  /** Told when a member arrives, while the lane's next append lingers (it may be full now). */
  arrived?: () => void;
  /** The topic whose announced requests (`expect`) the lane waits for, if any. */
  readonly group: string | undefined;
}

/**
 * How long the next append of a lane waits before it goes: until `lingerMs` after the last one
 * went, while the partition is streaming; else not at all (a lone append goes at once). Each
 * partition on its own phase: lingers aligned to common ticks (so that a request to four
 * partitions waits for one tick, not the latest of four) were tried and left out — the four
 * partitions' appends, wake-ups and commits then came at once, and under `wrangler dev` (one
 * thread for every object) the latency from an answer to its total visible grew (docs/scale.md).
 */
export function lingerFor(lastSentAt: number, now: number, lingerMs: number, isStreaming: boolean): number {
  if (lingerMs <= 0 || !isStreaming) return 0;
  return Math.max(0, lastSentAt + lingerMs - now);
}

/** The bytes of the members waiting (all of them: the next append takes what fits). */
export function waitingBytes(waiting: readonly { readonly bytes: number }[]): number {
  let bytes = 0;
  for (const w of waiting) bytes += w.bytes;
  return bytes;
}

/** The bytes a member takes in a row: its encoded records' UTF-8 bytes and the per-record bytes. */
export function memberBytes(member: GatherMember): number {
  return encodedBytes(member) + PER_RECORD_BYTES * member.measure.sizes.length;
}

/**
 * The members of the next append: the oldest first, then the next ones while the whole stays within
 * `maxBytes` (the first is always taken, however big). Returns how many to take.
 */
export function takeCount(waiting: readonly { readonly bytes: number }[], maxBytes: number): number {
  if (waiting.length === 0) return 0;
  let bytes = waiting[0]!.bytes;
  let n = 1;
  while (n < waiting.length && bytes + waiting[n]!.bytes <= maxBytes) bytes += waiting[n++]!.bytes;
  return n;
}

/** Members' encoded records joined into one batch, in order: one JSON array, their measures joined. */
export function joinMembers(members: readonly GatherMember[]): GatheredBatch {
  if (members.length === 1) return { ...members[0]!, members: 1 };
  let records = 0;
  for (const m of members) records += m.measure.sizes.length;
  const sizes = new Uint32Array(records);
  let at = 0;
  let maxTimestamp = -1;
  let untimed = false;
  for (const { measure } of members) {
    sizes.set(measure.sizes, at);
    at += measure.sizes.length;
    maxTimestamp = Math.max(maxTimestamp, measure.maxTimestamp);
    untimed ||= measure.untimed;
  }
  const text = `[${members.map((m) => m.text.slice(1, -1)).join(",")}]`;
  return { text, measure: { sizes, maxTimestamp, untimed }, members: members.length };
}

/** Each member's share of a gathered append's result: its records' offsets, in the order they were joined. */
export function splitResult(result: AppendResult, counts: readonly number[]): AppendResult[] {
  let base = result.baseOffset;
  return counts.map((count) => {
    const share = { baseOffset: base, count, duplicate: result.duplicate };
    base += count;
    return share;
  });
}

/**
 * Gathers appends per partition (`lane`: a partition's name). `send(lane, batch)` appends a batch
 * to the partition and resolves once it is committed.
 */
export class AppendGatherer {
  private readonly lanes = new Map<string, Lane>();
  private readonly lingerMs: number;
  private readonly minRecordsPerS: number;
  private readonly batchBytes: number;
  private readonly lingerRetryMs: number;
  private readonly aloneBytes: number;
  private readonly now: () => number;
  private readonly maxBytes: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly waitLimitMs: number;
  private readonly timer: (fn: () => void, ms: number) => () => void;
  private readonly expectWaitMs: number;
  /** Requests announced per topic (`expect`) that have not given their members yet. */
  private readonly coming = new Map<string, Set<Coming>>();

  constructor(
    private readonly send: (lane: string, batch: GatheredBatch) => Promise<AppendResult>,
    options: GatherOptions = {},
  ) {
    this.lingerMs = options.lingerMs ?? 0;
    this.minRecordsPerS = options.minRecordsPerS ?? LINGER_MIN_RECORDS_PER_S;
    this.batchBytes = options.batchBytes ?? LINGER_BATCH_BYTES;
    this.lingerRetryMs = options.lingerRetryMs ?? LINGER_RETRY_MS;
    this.aloneBytes = options.aloneBytes ?? LINGER_ALONE_BYTES;
    this.now = options.now ?? Date.now;
    this.maxBytes = options.maxBytes ?? MAX_ROW_BYTES;
    this.sleep = options.sleep ?? ((ms) => new Promise<void>((resolve) => setTimeout(() => resolve(), ms)));
    this.waitLimitMs = options.waitLimitMs ?? WAIT_LIMIT_MS;
    this.timer =
      options.timer ??
      ((fn, ms) => {
        const id = setTimeout(fn, ms);
        return () => clearTimeout(id);
      });
    this.expectWaitMs = options.expectWaitMs ?? EXPECT_WAIT_MS;
  }

  /**
   * Announces a request that is about to append to `group`'s lanes (a topic's partitions), as it
   * begins; the function returned says it has given its members (every `append` of it called) or
   * left without appending. Call it once either way (more calls do nothing).
   */
  expect(group: string): () => void {
    const set = this.coming.get(group) ?? new Set<Coming>();
    this.coming.set(group, set);
    let arrive!: () => void;
    const coming: Coming = { arrived: new Promise<void>((resolve) => (arrive = resolve)), done: false };
    set.add(coming);
    return () => {
      coming.done = true;
      this.forget(group, coming);
      arrive();
    };
  }

  /** Takes `coming` off `group`'s requests on their way. */
  private forget(group: string, coming: Coming): void {
    const set = this.coming.get(group);
    if (!set?.delete(coming)) return;
    if (set.size === 0) this.coming.delete(group);
  }

  /** Requests announced on `group` and not there yet (for tests and metrics). */
  expected(group: string): number {
    return this.coming.get(group)?.size ?? 0;
  }

  /** Appends `member` to the partition `lane`, alone or gathered; resolves with its own records' offsets once they are committed. */
  async append(lane: string, member: GatherMember, group?: string): Promise<AppendResult> {
    let state = this.lanes.get(lane);
    if (!state) {
      state = { busy: false, waiting: [], lastSentAt: -Infinity, recent: [], noLingerUntil: -Infinity, watchedUntil: -Infinity, group };
      this.lanes.set(lane, state);
    }
    state.recent.push({ at: this.now(), records: member.measure.sizes.length });
    let led = false;
    let lead!: () => void;
    const leading = new Promise<"lead">((resolve) => {
      lead = () => {
        led = true;
        resolve("lead");
      };
    });
    let entry!: Waiting;
    const result = new Promise<AppendResult>((resolve, reject) => {
      entry = { member, bytes: memberBytes(member), count: member.measure.sizes.length, lead, resolve, reject };
      state.waiting.push(entry);
    });
    state.arrived?.();
    if (!state.busy) {
      state.busy = true;
      lead();
    }
    // Either another member's append takes this one's records, or this one is told to send. The
    // wait is settled from another request; the timer, this request's own, keeps something of its
    // own pending meanwhile and bounds the wait.
    let cancel: (() => void) | undefined;
    const timedOut = new Promise<"timeout">((resolve) => (cancel = this.timer(() => resolve("timeout"), this.waitLimitMs)));
    const settled = result.then(
      () => "settled" as const,
      () => "settled" as const,
    );
    const first = await Promise.race([leading, settled, timedOut]);
    cancel?.();
    // Told to send (also when its timer fired just before): it must, or the lane would stay busy for good.
    if (first === "lead" || led) await this.sendNext(lane, state);
    else if (first === "timeout") {
      const at = state.waiting.indexOf(entry);
      // Not taken yet: it leaves the queue, appended by no one. Taken: its append's end is unknown.
      if (at >= 0) state.waiting.splice(at, 1);
      entry.reject(new LogUnavailable(`${lane}: the append holding this request's records did not answer within ${this.waitLimitMs} ms`));
    }
    return result;
  }

  /** Appends in flight or waiting, per partition (for tests and metrics). */
  waiting(lane: string): number {
    return this.lanes.get(lane)?.waiting.length ?? 0;
  }

  /**
   * Waits before the lane's next append while it streams (see `lingerFor`), ending early once the
   * members waiting hold `batchBytes`; a linger that no member joined turns lingering off for
   * `lingerRetryMs` (see the file's comment).
   */
  private async linger(state: Lane): Promise<void> {
    const now = this.now();
    if (now < state.noLingerUntil || now < state.watchedUntil) return;
    const linger = lingerFor(state.lastSentAt, now, this.lingerMs, streaming(state.recent, now, this.minRecordsPerS));
    if (linger <= 0 || waitingBytes(state.waiting) >= this.batchBytes || state.waiting.some((w) => w.bytes >= this.aloneBytes)) return;
    const members = state.waiting.length;
    let full!: () => void;
    const filled = new Promise<void>((resolve) => (full = resolve));
    state.arrived = () => {
      if (waitingBytes(state.waiting) >= this.batchBytes) full();
    };
    // A linger that fails only ends early: the lane must still send, or its members would wait for nothing.
    await Promise.race([this.sleep(linger).catch(() => {}), filled]);
    state.arrived = undefined;
    // Judged only when it lasted: a short one (its end was near) says nothing of who comes next.
    if (state.waiting.length <= members && linger >= this.lingerMs / 2) state.noLingerUntil = this.now() + this.lingerRetryMs;
  }

  /**
   * Waits for the requests announced on the lane's topic now (not those announced meanwhile) to
   * give their members, at most `expectWaitMs`. On this request's own timer, as a member's wait.
   */
  private async awaitComing(state: Lane): Promise<void> {
    const group = state.group;
    const set = group === undefined || this.expectWaitMs <= 0 ? undefined : this.coming.get(group);
    if (!group || !set || set.size === 0) return;
    const awaited = [...set];
    let cancel: (() => void) | undefined;
    const bound = new Promise<void>((resolve) => (cancel = this.timer(resolve, this.expectWaitMs)));
    await Promise.race([Promise.all(awaited.map((c) => c.arrived)), bound]);
    cancel?.();
    // Those still not there are not waited for again: a client slow to send its body, or a request
    // whose end never ran (its client went): each holds the lanes once, for the bound at most.
    for (const coming of awaited) if (!coming.done) this.forget(group, coming);
  }

  /** Sends the next append of `lane`: the oldest waiting members that fit, joined. The lane stays busy until it is answered. */
  private async sendNext(lane: string, state: Lane): Promise<void> {
    await this.awaitComing(state);
    await this.linger(state);
    state.lastSentAt = this.now();
    const taken = state.waiting.splice(0, takeCount(state.waiting, this.maxBytes));
    let outcome: { ok: true; shares: AppendResult[] } | { ok: false; error: unknown };
    try {
      const result = await this.send(lane, joinMembers(taken.map((w) => w.member)));
      if (result.watched) state.watchedUntil = this.now() + WATCHED_HOLD_MS;
      outcome = {
        ok: true,
        shares: splitResult(
          result,
          taken.map((w) => w.count),
        ),
      };
    } catch (error) {
      outcome = { ok: false, error };
    }
    // The next append is sent by the oldest member waiting, in its own request; none: the lane is free.
    const next = state.waiting[0];
    if (next) next.lead();
    else state.busy = false;
    taken.forEach((w, i) => {
      if (outcome.ok) w.resolve(outcome.shares[i]!);
      else w.reject(outcome.error);
    });
  }
}

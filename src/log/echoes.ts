/**
 * When a partition wakes its subscribers again after appends (an echo): a wake-up may be lost on
 * the way, or the run it started may die, and input must not be stranded. Pure; the partition
 * (durable-objects/log-partition.ts) keeps the counts and arms its alarm.
 *
 * A subscriber has heard of an append once what it does about it is durable:
 * - a task instance once its group offset here reaches the end (it processed and committed the
 *   input): its answer to a wake-up is not enough, since the run it starts may die;
 * - a restore worker once it answered a wake-up: it notes the growth in its storage before it
 *   answers, and its own alarm does the rest; and, while it promised to read the partition after
 *   a wake-up and has not fetched since, of every append (src/log/wake-ups.ts).
 * An echo goes only to subscribers that have not heard, backing off; once all have, the partition
 * takes its echo alarm back (`SETTLE_MS`), or keeps it when it comes soon anyway (`keepsAlarm`: it
 * comes once and arms only what maintenance is due): an idle partition ends with no echo armed.
 */
import { backoffDelay } from "../util/backoff";
import { QUIET_COMPACTION_MS } from "./partition/log-cleaner-manager";

/** The first echo comes this long after an append; the next ones back off, doubling up to MAX_ECHO_MS. */
export const ECHO_MS = 5_000;
/**
 * The first echo after an append to a partition only task instances read: a task hears once its
 * group offset reaches the end, which it commits once owed RECORD_OWED_MS (10 s, src/task/outbox-sender.ts)
 * when no commit takes it. An echo sooner than that woke every task of a quiet partition again
 * after each append, only to make it commit that offset early: an alarm invocation, a wake-up and
 * an alarm armed again per quiet spell (issue #33). A lost wake-up is made up for this late.
 */
export const TASK_ECHO_MS = 15_000;
export const MAX_ECHO_MS = 5 * 60_000;
/** Echoes for task readers that committed no offset here at all (their progress cannot be seen): not endless. */
export const UNSEEN_READER_ECHOES = 2;
/**
 * Once every subscriber has heard, the partition takes its echo alarm back after this long without
 * an append: under load appends keep coming and the alarm stays (no storage write per commit).
 */
export const SETTLE_MS = 1_000;

/** Where the task instances reading the partition stand, by their group's committed offset (GroupOffsets' `readers`); "none": no task subscribes. */
export type TaskReaders = "behind" | "unknown" | "caught-up" | "none";

export interface EchoInputs {
  readonly taskReaders: TaskReaders;
  /** Subscribers that hear by answering (restore workers) and have not answered a wake-up for the current end. */
  readonly unheard: readonly string[];
  /** Echoes made since the last append; undefined after a restart. */
  readonly echoes: number | undefined;
}

/** Whom an echo wakes: the task subscribers, and which of the others. */
export interface Echo {
  readonly tasks: boolean;
  readonly others: readonly string[];
}

/** Whom an echo must wake now; undefined when every subscriber has heard (nothing to arm). */
export function echoTargets({ taskReaders, unheard, echoes }: EchoInputs): Echo | undefined {
  const tasks = taskReaders === "behind" || (taskReaders === "unknown" && (echoes ?? 0) < UNSEEN_READER_ECHOES);
  if (!tasks && unheard.length === 0) return undefined;
  return { tasks, others: unheard };
}

/** When the next echo comes, `echoes` echoes after the last append (the first `first` after it: ECHO_MS, or TASK_ECHO_MS). */
export function nextEchoAt(now: number, echoes: number, first = ECHO_MS): number {
  return now + backoffDelay(first, MAX_ECHO_MS, echoes);
}

/**
 * How late an alarm may come for maintenance and echoes (not for a sink's delivery): an alarm
 * armed up to this much after the time asked for serves, rather than a storage write to move it.
 * Also what a listener's first echo on a compacted partition comes after its quiet compaction.
 */
export const ALARM_SLACK_MS = 1_000;

/**
 * The first echo's delay for a partition's subscribers: TASK_ECHO_MS when task instances alone read
 * it, ECHO_MS when a listener (a restore worker, a hub) hears by answering — on a compacted
 * partition (a changelog) just after its quiet compaction instead (QUIET_COMPACTION_MS after the
 * append, and ALARM_SLACK_MS): one alarm for both, armed once per spell, where an echo 5 s after
 * the append and the compaction 10 s after it took two alarm writes a spell (issue #33).
 */
export function firstEchoMs(subscribers: readonly string[], hearsByAnswering: (name: string) => boolean, compacted = false): number {
  if (!subscribers.some(hearsByAnswering)) return TASK_ECHO_MS;
  return compacted ? QUIET_COMPACTION_MS + ALARM_SLACK_MS : ECHO_MS;
}

/** What the partition's alarm knows when it finds an echo due. */
export interface EchoClock {
  readonly now: number;
  /** Whether a listener reads the partition (see `keepsAlarm`: only there is an alarm kept for an earlier append). */
  readonly listened: boolean;
  /** The time the alarm was armed for (undefined: not known, after a restart). */
  readonly armedFor: number | null | undefined;
  /** This object's latest append (undefined after a restart). */
  readonly lastAppendAt: number | undefined;
  /** The first echo's delay (`firstEchoMs`) as of that append. */
  readonly first: number;
  /** Echoes made since that append (undefined after a restart). */
  readonly echoes: number | undefined;
  /** Whether this round's first echo already waited once. */
  readonly waited: boolean;
}

/**
 * When an echo found due now waits instead (undefined: it goes now). The alarm stays armed for an
 * earlier append of a spell (moving it later per append would cost a storage write each), so it may
 * come before the latest append is `first` old: subscribers have likely not heard of that one yet
 * only because it is young, and waking them early would only hurry them (a task's group offset may
 * be owed RECORD_OWED_MS). The first echo waits for it, once: appends that keep coming with every
 * wake-up lost still get their echo within twice `first` of the first. An alarm armed for the
 * latest append's echo itself (or not known to be) does not wait, however early it runs.
 */
export function echoWaitsUntil({ now, listened, armedFor, lastAppendAt, first, echoes, waited }: EchoClock): number | undefined {
  if (!listened || waited || echoes !== 0 || lastAppendAt === undefined || armedFor === null || armedFor === undefined) return undefined;
  const at = lastAppendAt + first;
  return now < at && armedFor + ALARM_SLACK_MS < at ? at : undefined;
}

/**
 * Whether a partition whose subscribers have all heard keeps its alarm rather than take it back
 * (which moves it later or deletes it: a storage write, and the next append arms it again, another).
 * It keeps one armed no later than the first echo of its latest append (`horizon`), and no later
 * than what is due next (`due`, with ALARM_SLACK_MS): it comes once, soon, finds nothing to echo and
 * arms what is due, or nothing — an idle partition still ends with no echo armed, a first echo's
 * delay after its last append. One armed later (an echo backing off) is taken back, as before.
 *
 * Only on a partition a listener reads (a changelog and its restore workers): where task instances
 * alone read it (the input), keeping it was measured to save no alarm write (its next append came
 * after the echo anyway) and to trade the echo that hurries a task's group offset for a commit of
 * that offset on the task's timer, one more per partition (docs/scale.md, 2026-12-06).
 */
export function keepsAlarm(armed: number | null | undefined, due: number | undefined, horizon: number | undefined, listened: boolean): boolean {
  if (!listened || armed === null || armed === undefined || horizon === undefined) return false;
  return armed <= horizon && (due === undefined || armed <= due + ALARM_SLACK_MS);
}

/**
 * A partition's echo bookkeeping between its appends and its alarm, in memory: unknown after a
 * restart, which the rules above take for "not known" (an echo then goes at once, an alarm is
 * taken back as before). One owner for what `echoWaitsUntil` and `keepsAlarm` are asked about.
 */
export class EchoSchedule {
  /** Echo wake-ups made since the last append (for their back-off); undefined after a restart. */
  private made: number | undefined;
  /** When this object last appended (undefined after a restart), and the first echo's delay then. */
  private lastAppendAt: number | undefined;
  private first = ECHO_MS;
  /** Whether a listener (a restore worker, a hub) read the partition at the latest append. */
  private listened = false;
  /** This round's first echo waited once for the latest append (`echoWaitsUntil`). */
  private waited = false;

  /** Echoes made since the last append (`echoTargets`' `echoes`). */
  get echoes(): number | undefined {
    return this.made;
  }

  /** Before an append: the first echo's delay as of these subscribers, and when it comes (undefined: no subscriber). */
  beforeAppend(now: number, subscribers: readonly string[], hearsByAnswering: (name: string) => boolean, compacted: boolean): number | undefined {
    this.first = firstEchoMs(subscribers, hearsByAnswering, compacted);
    this.listened = subscribers.some(hearsByAnswering);
    return subscribers.length > 0 ? nextEchoAt(now, 0, this.first) : undefined;
  }

  /** An append was written (not a duplicate): echoes start over. */
  appended(now: number): void {
    this.made = 0;
    this.lastAppendAt = now;
  }

  /** The alarm ran, armed for `armedFor`, with an echo due or not: when that echo waits until instead (undefined: it goes now, or none is due). */
  waitUntil(now: number, armedFor: number | null | undefined, due: boolean): number | undefined {
    const at = due
      ? echoWaitsUntil({ now, listened: this.listened, armedFor, lastAppendAt: this.lastAppendAt, first: this.first, echoes: this.made, waited: this.waited })
      : undefined;
    this.waited = at !== undefined;
    return at;
  }

  /** An echo went now: when the next one comes. */
  echoed(now: number): number {
    this.made = (this.made ?? 0) + 1;
    return nextEchoAt(now, this.made);
  }

  /** Whether the alarm armed at `armed` stays once every subscriber heard (`keepsAlarm`), with `due` what else is due. */
  keeps(armed: number | null | undefined, due: number | undefined): boolean {
    const horizon = this.lastAppendAt === undefined ? undefined : this.lastAppendAt + this.first;
    return keepsAlarm(armed, due, horizon, this.listened);
  }
}

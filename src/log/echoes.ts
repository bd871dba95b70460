/**
 * When a partition wakes its subscribers again after appends (an echo): a wake-up may be lost on
 * the way, or the run it started may die, and input must not be stranded. Pure; the partition
 * (durable-objects/log-partition.ts) keeps the counts and arms its alarm.
 *
 * A subscriber has heard of an append once what it does about it is durable:
 * - a task instance once its group offset here reaches the end (it processed and committed the
 *   input): its answer to a wake-up is not enough, since the run it starts may die;
 * - a restore worker once it answered a wake-up: it notes the growth in its storage before it
 *   answers, and its own alarm does the rest.
 * An echo goes only to subscribers that have not heard, backing off; once all have, the partition
 * takes its echo alarm back (`SETTLE_MS`): an idle partition has nothing armed.
 */
import { backoffDelay } from "../util/backoff";

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

/** The first echo's delay for a partition's subscribers: TASK_ECHO_MS when task instances alone read it, ECHO_MS when a listener (a restore worker, a hub) hears by answering. */
export function firstEchoMs(subscribers: readonly string[], hearsByAnswering: (name: string) => boolean): number {
  return subscribers.some(hearsByAnswering) ? ECHO_MS : TASK_ECHO_MS;
}

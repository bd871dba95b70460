/**
 * When a task instance looks again: the pacing policy of `TaskObject`, pure (time is passed in,
 * nothing is armed here). The object's one durable alarm brings it back for what nothing else
 * would (recovery after a crash, retries, a restoring check, polls, punctuation); an in-memory
 * timer, with the alarm standing behind it (BACKSTOP_MS), for what the log also brings it back for
 * (its next commit, input progress owed to the group). Once nothing is due nothing is armed: an
 * idle task costs nothing. The policy keeps the counts its back-offs run on (one owner each).
 */
import { backoffDelay } from "../util/backoff";
import type { StepOutcome } from "./protocol";
import type { TaskMeta } from "./task-storage";

/**
 * Armed before every lifecycle operation: if the object dies at any await of it, this alarm
 * reconciles what the outside knows (subscriptions, restore registration) with its durable state.
 */
export const RECOVERY_DELAY_MS = 1_000;
/** After a failed attempt (the log or another object not answering), the next waits this long, doubling up to MAX_RETRY_DELAY_MS. */
export const RETRY_DELAY_MS = 1_000;
export const MAX_RETRY_DELAY_MS = 30_000;
/** A RESTORING instance makes sure its restore worker knows it, this often at first (doubling up to MAX_RETRY_DELAY_MS). */
export const RESTORING_CHECK_MS = 2_000;
/** Polling a remote log that sends no wake-ups: the first wait after finding nothing, doubling up to MAX_POLL_MS. */
export const POLL_MS = 500;
export const MAX_POLL_MS = 15_000;
/**
 * What the log also brings an instance back for (input waiting under load, output lingering, input
 * progress due: its input partitions wake readers that lag) is looked at by the in-memory timer;
 * the alarm stands behind it this much later, in case the object dies first: one durable alarm
 * per few seconds of a busy instance, not one per commit interval.
 */
export const BACKSTOP_MS = 5_000;
/** Work per alarm before yielding (the next alarm continues): keeps one invocation short. */
export const STEPS_PER_ALARM = 50;
/** The longest back-off between attempts of the `"retry"` policy (it doubles from RETRY_BACKOFF_MS). */
export const MAX_RETRY_BACKOFF_MS = 60_000;

/** Why the instance looks again. */
export type WakeReason =
  /** Armed before a lifecycle operation, for the case the object dies in it. */
  | "recovery"
  /** Work is waiting (or an operation changed what there is to do): at once. */
  | "work"
  /** A failed attempt: a run that threw, or the outside not brought in line. */
  | "retry"
  /** A restoring active instance checks its registration and whether it is restored. */
  | "restoring-check"
  /** A log that wakes no one, polled while it brings nothing. */
  | "poll"
  /** The next commit: input gathering under load, or a wake-up that came while a run was ending. */
  | "commit"
  /** A wall-clock punctuation or the `"retry"` policy's back-off (`StreamTask.timersDueAt`). */
  | "timers"
  /** Output lingering or input progress owed to the log and the group (`StreamTask.progressDueAt`). */
  | "progress"
  /** The coordinator has not yet heard the request to shut the application down. */
  | "shutdown-report";

export interface WakeUp {
  readonly at: number;
  readonly why: WakeReason;
}

/** What to arm: the alarm (durable) and the in-memory timer, each the earliest asked for; `resync` repeats the restore registration at the next reconciliation. */
export interface WakePlan {
  readonly alarm?: WakeUp;
  readonly timer?: WakeUp;
  readonly resync?: boolean;
}

/** What the instance has pending, at `now` (read from `StreamTask` after a run or a drain). */
export interface PacingInputs {
  readonly now: number;
  readonly instance: Pick<TaskMeta, "role" | "state"> | undefined;
  /** When the instance commits next (`StreamTask.nextCommitAt`). */
  readonly nextCommitAt: number;
  readonly timersDueAt: number | undefined;
  readonly progressDueAt: number | undefined;
  /**
   * The input partitions wake the instance again while that progress is owed (its group offset
   * lags their end: `TaskExecutor.progressEchoed`): the timer alone looks at it, no alarm behind it.
   */
  readonly progressEchoed?: boolean;
  /** A wake-up came while the run was in progress and no step took it (`WakeRuns.ended`). */
  readonly woken?: boolean;
}

/** How a run went: its steps' outcome, or an error that cut it short. */
export type RunResult =
  | {
      readonly status: "ran";
      /** The outside was brought in line with the instance's state. */
      readonly synced: boolean;
      readonly outcome: StepOutcome;
      /** Under load, it stopped after a commit to let input gather until the next. */
      readonly lingering: boolean;
    }
  | { readonly status: "failed" };

export class TaskPacing {
  /** Failed attempts in a row (runs that threw, or could not bring the outside in line). */
  private failures = 0;
  /** Checks made in a row while restoring, for their back-off. */
  private restoringChecks = 0;
  /** Polls in a row that found no input, for their back-off. */
  private idlePolls = 0;

  /** `polls`: the log sends no wake-ups (a remote one), so the alarm does everything the timer would. */
  constructor(readonly polls: boolean) {}

  /** Before a lifecycle operation: the alarm that completes it if the object dies in it. */
  beforeOperation(now: number): WakePlan {
    return { alarm: { at: now + RECOVERY_DELAY_MS, why: "recovery" } };
  }

  /** Look again at once. */
  atOnce(now: number): WakePlan {
    return { alarm: { at: now, why: "work" } };
  }

  /** Look again by `at`: with the in-memory timer and the alarm behind it, or (a polled log) with the alarm alone. */
  lookBy(at: number, now: number, why: WakeReason): WakePlan {
    if (this.polls) return { alarm: { at: Math.max(now, at), why } };
    return { alarm: { at: Math.max(now, at + BACKSTOP_MS), why }, timer: { at, why } };
  }

  /** After a run: what it left to do, its failures, and what the instance has pending. */
  afterRun(result: RunResult, pending: PacingInputs): WakePlan {
    const { now } = pending;
    let plan: WakePlan = {};
    if (result.status === "failed") {
      this.failures++;
      plan = merge(plan, { alarm: { at: now + this.retryDelay(), why: "retry" } });
    } else {
      this.failures = result.synced ? 0 : this.failures + 1;
      if (!result.synced) plan = merge(plan, { alarm: { at: now + this.retryDelay(), why: "retry" } });
      if (result.lingering) plan = merge(plan, this.lookBy(pending.nextCommitAt, now, "commit"));
      else if (result.outcome === "more") plan = merge(plan, this.atOnce(now));
      plan = merge(plan, this.restoringCheck(pending));
      plan = merge(plan, this.poll(result.outcome, pending));
    }
    if (pending.woken) plan = merge(plan, this.lookBy(pending.nextCommitAt, now, "commit"));
    return merge(plan, this.pendingWork(pending));
  }

  /** After a drain (which leaves no input behind): only punctuation, retries and progress owed. */
  afterDrain(pending: PacingInputs): WakePlan {
    return this.pendingWork(pending);
  }

  /** The coordinator did not answer the shutdown request: ask again. */
  shutdownReportFailed(now: number): WakePlan {
    return { alarm: { at: now + RETRY_DELAY_MS, why: "shutdown-report" } };
  }

  private retryDelay(): number {
    return backoffDelay(RETRY_DELAY_MS, MAX_RETRY_DELAY_MS, Math.max(this.failures - 1, 0));
  }

  /**
   * A restoring active instance looks again now and then (backing off while it stays so): it makes
   * sure its restore worker still knows it (from the second check on, the registration is
   * repeated: idempotent there, cheap here), and completes when the changelogs turn out restored.
   */
  private restoringCheck({ instance, now }: PacingInputs): WakePlan {
    if (instance?.role !== "active" || instance.state !== "RESTORING") {
      this.restoringChecks = 0;
      return {};
    }
    this.restoringChecks++;
    const at = now + backoffDelay(RESTORING_CHECK_MS, MAX_RETRY_DELAY_MS, this.restoringChecks - 1);
    return { alarm: { at, why: "restoring-check" }, resync: this.restoringChecks > 1 };
  }

  /** A log that wakes no one: a running active instance polls its input, backing off while none comes, at once again when some did. */
  private poll(outcome: StepOutcome, { instance, now }: PacingInputs): WakePlan {
    if (!this.polls || instance?.role !== "active" || instance.state !== "RUNNING") return {};
    this.idlePolls = outcome === "idle" ? this.idlePolls + 1 : 0;
    if (outcome !== "idle") return {};
    return { alarm: { at: now + backoffDelay(POLL_MS, MAX_POLL_MS, this.idlePolls - 1), why: "poll" } };
  }

  /** The task's next punctuation or retry on the alarm; progress owed to the log looked at by `lookBy`. */
  private pendingWork({ timersDueAt, progressDueAt, progressEchoed, now }: PacingInputs): WakePlan {
    let plan: WakePlan = {};
    if (timersDueAt !== undefined) plan = { alarm: { at: Math.max(now, timersDueAt), why: "timers" } };
    if (progressDueAt === undefined) return plan;
    // Behind the timer, the input partitions' echoes stand in for the alarm: a row written and an
    // invocation per quiet spell of each instance saved (issue #33). A polled log echoes nothing.
    if (progressEchoed && !this.polls) return merge(plan, { timer: { at: progressDueAt, why: "progress" } });
    return merge(plan, this.lookBy(progressDueAt, now, "progress"));
  }
}

/** Both plans at once: the earlier of each wake-up (the first on a tie), either's resync. */
export function merge(a: WakePlan, b: WakePlan): WakePlan {
  const alarm = earlier(a.alarm, b.alarm);
  const timer = earlier(a.timer, b.timer);
  const resync = a.resync || b.resync;
  return { ...(alarm ? { alarm } : {}), ...(timer ? { timer } : {}), ...(resync ? { resync } : {}) };
}

function earlier(a: WakeUp | undefined, b: WakeUp | undefined): WakeUp | undefined {
  if (!a) return b;
  if (!b) return a;
  return b.at < a.at ? b : a;
}

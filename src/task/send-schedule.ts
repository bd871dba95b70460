/**
 * When a task instance's outbox goes to the log. While commits follow each other closely their
 * batches linger and go out together at most every `lingerMs` (Kafka's producer `linger.ms`); the
 * first commit after a quiet spell is sent at once, and every commit while a partition sent to is
 * watched (live subscribers wait on it: their push would wait for the linger). A send that fails for a while (the log not
 * answering) starts a back-off instead of being retried by every wake-up: nothing is sent, and
 * nothing processed, until it ends (send-errors.ts). In memory: an object that restarts sends at
 * once. What is sent, and how acknowledgements are written down, is outbox-sender.ts's.
 */
import type { OutboxSender, OwedRecord } from "./outbox-sender";
import { RetryBackoff } from "./retry-backoff";
import { SendStopped, sendErrorKind } from "./send-errors";
import type { TaskOptions } from "./task-options";
import type { TaskStorage } from "./task-storage";

export interface SendScheduleDeps {
  readonly sender: OutboxSender;
  readonly storage: TaskStorage;
  /** Read at each use: `lingerMs` (`TaskOptions.lingerMs`) may change while the instance lives. */
  readonly options: Pick<TaskOptions, "lingerMs" | "retryBackoff">;
  readonly now: () => number;
}

export class SendSchedule {
  /** Between attempts to send the outbox (or commit input offsets) after one failed for a while. */
  private readonly backoff: RetryBackoff;
  /** When a step last sent the outbox (a restarted instance sends at once); see `lingerMs`. */
  private sentAt = -Infinity;

  constructor(private readonly deps: SendScheduleDeps) {
    this.backoff = new RetryBackoff(deps.options.retryBackoff);
  }

  /** When the send back-off ends, if one is running at `now`. */
  backingOffUntil(now: number): number | undefined {
    return this.backoff.waitingUntil(now);
  }

  /** Sends are tried again at once (a new assignment, an operator's resume). */
  reset(): void {
    this.backoff.reset();
  }

  /** When the outbox's unsent batches are due to go to the log (see `lingerMs`); undefined when there are none. */
  dueAt(): number | undefined {
    if (this.deps.sender.unsentBatches() === 0) return undefined;
    const linger = this.deps.sender.watched(this.deps.now()) ? 0 : (this.deps.options.lingerMs ?? 0);
    return this.sentAt + linger;
  }

  /**
   * Sends the outbox if it is due as of `now` (see `lingerMs`), and then the input progress if
   * that is due; with nothing to send, only the input progress. A lingering send holds the
   * progress back too: the group hears of input only once everything it implies is sent (I5).
   * What they acknowledge is written down as `record` says (see `TaskExecutor.owedRecord`).
   */
  async sendIfDue(now: number, record: OwedRecord): Promise<void> {
    const due = this.dueAt();
    if (due === undefined) return this.sending(() => this.deps.sender.commitInputOffsets("due", record));
    if (due > now) return;
    this.sentAt = now;
    await this.sending(() => this.deps.sender.flush("due", record));
  }

  /**
   * Sends (or commits offsets) with `send`: a failure that may pass (the log not answering) starts
   * or lengthens the send back-off instead of being retried by every wake-up; one that stopped the
   * instance (its meta says why) ends here too; anything else is thrown.
   */
  async sending(send: () => Promise<void>): Promise<void> {
    try {
      await send();
      this.backoff.reset();
    } catch (error) {
      if (error instanceof SendStopped || this.deps.storage.meta()?.failure) return;
      if (sendErrorKind(error) !== "transient") throw error;
      this.backoff.failed(this.deps.now());
    }
  }

  /**
   * The task stopped (an uncaught error's policy, or the application was shut down): what earlier
   * commits left lingering goes now, so that their output is not held back while the task waits
   * to be resumed. A log that cannot take it leaves it in the outbox, for the resume, revocation
   * or wipe that sends it anyway.
   */
  async beforeStopping(): Promise<void> {
    if (this.deps.sender.unsentBatches() === 0) return;
    await this.deps.sender.flush("now").catch(() => {});
  }
}

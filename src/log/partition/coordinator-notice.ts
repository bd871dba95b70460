/**
 * Whether a partition still owes the coordinator word of its first input. Tasks come into being
 * when their input first arrives (src/coordinator): the application's first append to a partition
 * that tasks read, while no task listens, tells the coordinator once; a call that did not get
 * through is owed, and the partition's alarm tries again `COORDINATOR_RETRY_MS` later. Kept in the
 * object's KV storage (two keys, no rows), so a debt outlives a restart.
 */

/** A failed call to the coordinator is made again by the partition's alarm this much later. */
export const COORDINATOR_RETRY_MS = 5_000;
/** Key in the object's KV storage: the coordinator has heard of this partition's input (when, epoch ms). */
const TOLD_KEY = "coordinator-told";
/** Key in the object's KV storage: an append of the application's own must still tell the coordinator. */
const OWED_KEY = "coordinator-owed";

/** What the notice uses of a Durable Object's synchronous KV storage (`ctx.storage.kv` satisfies it). */
export interface NoticeKv {
  get<T>(key: string): T | undefined;
  put<T>(key: string, value: T): void;
  delete(key: string): unknown;
}

export class CoordinatorNotice {
  constructor(private readonly kv: NoticeKv) {}

  /** Whether an append to a partition that tasks read (`taskInput`) must tell the coordinator: no task listens (`subscribed` false) and it never heard. */
  mustHear(taskInput: boolean, subscribed: boolean): boolean {
    return taskInput && !subscribed && this.kv.get(TOLD_KEY) === undefined;
  }

  /** The call is about to go out: owed until it got through. */
  owe(): void {
    this.kv.put(OWED_KEY, true);
  }

  /** A call is owed (its retry is on the alarm). */
  get owed(): boolean {
    return this.kv.get(OWED_KEY) !== undefined;
  }

  /** When the alarm tries again a call that has not got through (made at `now`). */
  retryAt(now: number): number {
    return now + COORDINATOR_RETRY_MS;
  }

  /** The coordinator heard, at `now`: never asked again, nothing owed. */
  told(now: number): void {
    this.kv.put(TOLD_KEY, now);
    this.kv.delete(OWED_KEY);
  }
}

/**
 * A partition's storage transactions. Each part of the partition keeps some of its rows in memory
 * (the kept range, the configuration, compaction's progress, freshly appended rows); what a failed
 * transaction wrote is undone, so each part registers how to forget what it cached, and a failed
 * transaction makes them all forget before the error goes on.
 */
import { Sql, type StorageLike } from "../../storage/sql";

export class PartitionTransactions {
  readonly db: Sql;
  private readonly forgetters: (() => void)[] = [];

  constructor(private readonly storage: StorageLike) {
    this.db = new Sql(storage.sql);
  }

  /** `forget` is called when a transaction fails: the caller's cache may hold what it undid. */
  onRollback(forget: () => void): void {
    this.forgetters.push(forget);
  }

  /** One storage transaction: all of `fn`'s writes or none. */
  run<T>(fn: () => T): T {
    try {
      return this.storage.transactionSync(fn);
    } catch (error) {
      for (const forget of this.forgetters) forget();
      throw error;
    }
  }
}

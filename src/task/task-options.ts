/**
 * How a stream task instance is made: its application, log and storage, the bounds of a commit's
 * input, the commit interval and `linger.ms`, the back-off of retries, and the hooks tests and
 * the task object use. Read by `StreamTask` and the parts it hands them to.
 */
import type { Application } from "../application";
import type { Log, TopicPartition } from "../log/types";
import type { StorageLike } from "../storage/sql";
import type { CommitStep } from "./protocol";
import type { BackoffSettings } from "./retry-backoff";

export interface TaskOptions {
  readonly application: Application;
  readonly log: Log;
  readonly storage: StorageLike;
  /** Most input records per partition per commit (default 1000). */
  readonly maxBatchRecords?: number;
  /**
   * Most input records per partition per commit under load (default 10,000): once a commit found at
   * least `maxBatchRecords` records waiting, the next ones may take up to this many.
   */
  readonly maxLoadedBatchRecords?: number;
  readonly maxBatchBytes?: number;
  /** The record cache's byte budget (Kafka's `statestore.cache.max.bytes`, default 10 MiB); the cache lives in memory between a commit's start and its flush. */
  readonly cacheMaxBytes?: number;
  /** Kafka's `commit.interval.ms`: a task under load commits this often (default `OFFSET_COMMIT_INTERVAL_MS`). */
  readonly commitIntervalMs?: number;
  /**
   * How long input progress and acknowledgements may stay owed to the group and the book when no
   * commit takes them (default `RECORD_OWED_MS`, see outbox-sender.ts).
   */
  readonly owedMs?: number;
  /**
   * Kafka Streams' producer `linger.ms` (100 ms by its default): while commits follow each other
   * closely, their outbox batches go out together at most this often; the first commit after a
   * quiet spell is sent at once. Default 0: every commit is sent at once.
   */
  readonly lingerMs?: number;
  readonly clock?: () => number;
  /**
   * The back-off of the `"retry"` uncaught-error policy, and of sending the outbox again after a
   * send that failed for a while (the log not answering): default 1 s doubling up to 60 s.
   */
  readonly retryBackoff?: BackoffSettings;
  /**
   * Told when input was gone below the task's position (retention deleted it) and the task
   * resumed at the earliest offset kept (Kafka's auto.offset.reset=earliest): records were lost.
   */
  readonly onInputReset?: (tp: TopicPartition, from: number, to: number) => void;
  /**
   * Called at each commit step, once what the steps before wrote is durable when it returns a
   * promise; a test hook that may crash the instance there.
   */
  readonly onCommitStep?: (step: CommitStep) => void | Promise<void>;
}

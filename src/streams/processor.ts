/**
 * The Processor API: user code that sees one record at a time, may use state stores and forwards
 * any number of records downstream. Every DSL operator is a processor too.
 * Everything here is synchronous: processing runs inside one storage transaction.
 */
import type { RecordMetadata, StreamRecord } from "./record";
import type { KeyValueStore } from "./state/key-value-store";

/** What a processor can do besides receiving records. One context per processor and task. */
export interface ProcessorContext<KOut, VOut> {
  readonly applicationId: string;
  /** `<subtopology>_<partition>`. */
  readonly taskId: string;
  /** The partition of the task's input topics this task owns. */
  readonly partition: number;
  /** Sends a record to every child, or only to the child of that name (as `split` does). */
  forward(record: StreamRecord<KOut, VOut>, childName?: string): void;
  /** A store connected to this processor, applying its serdes; anything else is an error. */
  getStateStore<K, V>(name: string): KeyValueStore<K, V>;
  /** The input record being processed; undefined outside `process` (for example in `init`). */
  recordMetadata(): RecordMetadata | undefined;
  /** Counts a record this processor discards as invalid (say, a null key where one is needed). */
  dropRecord(reason: string): void;
  /** The largest input timestamp the task has processed; -1 before the first record. */
  currentStreamTimeMs(): number;
}

export interface Processor<KIn, VIn, KOut = never, VOut = never> {
  /** Called once per task before the first record; keep the context to forward and reach stores. */
  init?(context: ProcessorContext<KOut, VOut>): void;
  process(record: StreamRecord<KIn, VIn>): void;
  /** Called when the task closes. */
  close?(): void;
}

/** Makes a new processor for each task: processors must not share state between tasks. */
export type ProcessorSupplier<KIn, VIn, KOut = never, VOut = never> = () => Processor<KIn, VIn, KOut, VOut>;

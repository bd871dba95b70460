/**
 * The Processor API: user code that sees one record at a time, may use state stores, schedule
 * punctuators and forward any number of records downstream. Every DSL operator is a processor too.
 * Everything here is synchronous: processing runs inside one storage transaction.
 */
import type { RecordMetadata, StreamRecord } from "./record";
import type { Serde } from "./serdes";
import type { KeyValueStore, RawKeyValueStore } from "./state/key-value-store";
import type { SessionStore } from "./state/session-store";
import type { WindowStore } from "./state/window-store";
import type { CachedStore } from "./runtime/caching-store";
import type { Cancellable, Punctuator, PunctuationType } from "./runtime/punctuation";
import type { StoreKind } from "./state/store-kind";

export type { Cancellable, Punctuator, PunctuationType };

/** What a processor can do besides receiving records. One context per processor and task. */
export interface ProcessorContext<KOut, VOut> {
  readonly applicationId: string;
  /** `<subtopology>_<partition>`. */
  readonly taskId: string;
  /** The partition of the task's input topics this task owns. */
  readonly partition: number;
  /** Sends a record to every child, or only to the child of that name (as `split` does). */
  forward(record: StreamRecord<KOut, VOut>, childName?: string): void;
  /** A key-value store connected to this processor, applying its serdes; anything else is an error. */
  getStateStore<K, V>(name: string): KeyValueStore<K, V>;
  /** A window store connected to this processor (`StreamsBuilder.addWindowStore`). */
  getWindowStore<K, V>(name: string): WindowStore<K, V>;
  /** A session store connected to this processor (`StreamsBuilder.addSessionStore`). */
  getSessionStore<K, V>(name: string): SessionStore<K, V>;
  /** The input record being processed; undefined outside `process` (in `init`, in a wall-clock punctuation). */
  recordMetadata(): RecordMetadata | undefined;
  /** Counts a record this processor discards as invalid (say, a null key where one is needed). */
  dropRecord(reason: string): void;
  /** The largest input timestamp the task has processed; -1 before the first record. */
  currentStreamTimeMs(): number;
  /**
   * Calls `punctuator` every `intervalMs` of stream time (checked after each record, with the
   * stream time) or of wall-clock time (when the task is punctuated, with the wall-clock time).
   * Usually called in `init`; schedules end with the task processor. Errors thrown by the
   * punctuator are processing errors.
   */
  schedule(intervalMs: number, type: PunctuationType, punctuator: Punctuator): Cancellable;
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

/** A store as DSL operators reach it: the raw, change-logged store and its definition's serdes. */
export interface StoreHandle {
  readonly kind: StoreKind;
  readonly raw: RawKeyValueStore;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  /** The store's caching layer, when the store is cached: its operator forwards what a flush hands it. */
  readonly cached?: CachedStore;
}

/**
 * The context the runtime really hands out. DSL operators use these extras to build their own
 * store views (window, session, buffer) and to count late records; user processors need not.
 */
export interface InternalProcessorContext<KOut, VOut> extends ProcessorContext<KOut, VOut> {
  storeHandle(name: string): StoreHandle;
  /** The view opened under `key` for this node, opened on first use (a DSL operator's typed store, per record otherwise). */
  viewOf<T>(key: string, open: () => T): T;
  /** The view opened under `key`, if it was (an operator asking per record then makes no opener). */
  openedView<T>(key: string): T | undefined;
  /** Counts a record dropped because the windows it belongs to had closed. */
  dropLateRecord(): void;
}

/** The internal side of a context from the runtime. */
export function internal<KOut, VOut>(context: ProcessorContext<KOut, VOut>): InternalProcessorContext<KOut, VOut> {
  if (!("storeHandle" in context)) throw new Error("a DSL operator ran with a context that is not the runtime's");
  return context as InternalProcessorContext<KOut, VOut>;
}

/**
 * The `ProcessorContext` of one processor node in one task: forwards to the node's children,
 * hands out only the stores the node was connected to (so a missing connection fails loudly),
 * each through the view of its kind, and schedules punctuators whose errors are processing errors
 * of this node.
 */
import type { InternalProcessorContext, StoreHandle } from "../processor";
import type { RecordMetadata, StreamRecord } from "../record";
import type { KeyValueStore } from "../state/key-value-store";
import { SessionStoreView, type SessionStore } from "../state/session-store";
import { TypedKeyValueStore } from "../state/typed-store";
import { WindowStoreView, type WindowStore } from "../state/window-store";
import type { StoreKind } from "../state/store-kind";
import type { ErrorGuards } from "./error-handling";
import type { Cancellable, Punctuator, PunctuationType } from "./punctuation";
import type { ProcessorState } from "./processor-state";

/** Where a node sends the records it forwards. */
export type RecordReceiver = (record: StreamRecord<unknown, unknown>) => void;

/** What a node context needs from its task besides the shared state. */
export interface TaskServices {
  readonly errors: ErrorGuards;
  /** Wall-clock time. */
  readonly clock: () => number;
}

export class NodeContext implements InternalProcessorContext<unknown, unknown> {
  private readonly views = new Map<string, unknown>();
  /** The children in order, for a forward to all of them (no iterator per record). */
  private readonly all: readonly RecordReceiver[];

  constructor(
    private readonly task: ProcessorState,
    private readonly services: TaskServices,
    private readonly nodeName: string,
    private readonly children: ReadonlyMap<string, RecordReceiver>,
    private readonly stores: ReadonlyMap<string, StoreHandle>,
  ) {
    this.all = [...children.values()];
  }

  get applicationId(): string {
    return this.task.applicationId;
  }

  get taskId(): string {
    return this.task.taskId;
  }

  get partition(): number {
    return this.task.partition;
  }

  forward(record: StreamRecord<unknown, unknown>, childName?: string): void {
    if (childName === undefined) {
      const all = this.all;
      for (let i = 0; i < all.length; i++) all[i]!(record);
      return;
    }
    const child = this.children.get(childName);
    if (!child) throw new Error(`${this.nodeName} has no child named ${childName}`);
    child(record);
  }

  getStateStore<K, V>(name: string): KeyValueStore<K, V> {
    return this.view(name, "key-value", (h) => new TypedKeyValueStore(name, h.raw, h.keySerde, h.valueSerde)) as KeyValueStore<K, V>;
  }

  getWindowStore<K, V>(name: string): WindowStore<K, V> {
    return this.view(name, "window", (h) => new WindowStoreView(name, h.raw, h.keySerde, h.valueSerde)) as WindowStore<K, V>;
  }

  getSessionStore<K, V>(name: string): SessionStore<K, V> {
    return this.view(name, "session", (h) => new SessionStoreView(name, h.raw, h.keySerde, h.valueSerde)) as SessionStore<K, V>;
  }

  storeHandle(name: string): StoreHandle {
    const handle = this.stores.get(name);
    if (!handle) throw new Error(`${this.nodeName} is not connected to store ${JSON.stringify(name)}: name it in process(supplier, ...storeNames)`);
    return handle;
  }

  openedView<T>(key: string): T | undefined {
    return this.views.get(key) as T | undefined;
  }

  viewOf<T>(key: string, open: () => T): T {
    let view = this.views.get(key) as T | undefined;
    if (view === undefined) {
      view = open();
      this.views.set(key, view);
    }
    return view;
  }

  recordMetadata(): RecordMetadata | undefined {
    return this.task.current?.position;
  }

  dropRecord(_reason: string): void {
    this.task.metrics.droppedRecords++;
    this.task.eventMetrics.invalidRecordsDropped++;
  }

  dropLateRecord(): void {
    this.task.eventMetrics.lateRecordsDropped++;
  }

  currentStreamTimeMs(): number {
    return this.task.streamTimeMs;
  }

  schedule(intervalMs: number, type: PunctuationType, punctuator: Punctuator): Cancellable {
    const now = type === "stream-time" ? this.task.streamTimeMs : this.services.clock();
    return this.task.punctuation.add(type, intervalMs, now, (timestamp) => {
      this.task.eventMetrics.punctuations++;
      this.services.errors.processing(this.nodeName, () => punctuator(timestamp));
    });
  }

  private view(name: string, kind: StoreKind, open: (handle: StoreHandle) => unknown): unknown {
    const handle = this.storeHandle(name);
    if (handle.kind !== kind) throw new Error(`store ${JSON.stringify(name)} is a ${handle.kind} store, not a ${kind} store`);
    return this.viewOf(name, () => open(handle));
  }
}

/**
 * The `ProcessorContext` of one processor node in one task: forwards to the node's children and
 * hands out only the stores the node was connected to, so a missing connection fails loudly.
 */
import type { ProcessorContext } from "../processor";
import type { RecordMetadata, StreamRecord } from "../record";
import type { KeyValueStore } from "../state/key-value-store";
import type { TaskState } from "./task-state";

/** Where a node sends the records it forwards. */
export type RecordReceiver = (record: StreamRecord<unknown, unknown>) => void;

export class NodeContext implements ProcessorContext<unknown, unknown> {
  constructor(
    private readonly task: TaskState,
    private readonly nodeName: string,
    private readonly children: ReadonlyMap<string, RecordReceiver>,
    private readonly stores: ReadonlyMap<string, KeyValueStore<unknown, unknown>>,
  ) {}

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
      for (const child of this.children.values()) child(record);
      return;
    }
    const child = this.children.get(childName);
    if (!child) throw new Error(`${this.nodeName} has no child named ${childName}`);
    child(record);
  }

  getStateStore<K, V>(name: string): KeyValueStore<K, V> {
    const store = this.stores.get(name);
    if (!store) throw new Error(`${this.nodeName} is not connected to store ${JSON.stringify(name)}: name it in process(supplier, ...storeNames)`);
    return store as KeyValueStore<K, V>;
  }

  recordMetadata(): RecordMetadata | undefined {
    return this.task.current?.position;
  }

  dropRecord(_reason: string): void {
    this.task.metrics.droppedRecords++;
  }

  currentStreamTimeMs(): number {
    return this.task.streamTimeMs;
  }
}

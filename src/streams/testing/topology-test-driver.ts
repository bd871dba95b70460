/**
 * Runs a whole topology in memory, synchronously, like Kafka Streams' `TopologyTestDriver`: one
 * task processor per task id, an in-memory log of every topic, and a loop that feeds each task
 * the records of its source partitions until nothing is left. Records a task writes to a
 * repartition topic land on a partition of that topic (Kafka's default partitioner on the key)
 * and are processed by the task of the next subtopology that owns that partition, which is how
 * the real runtime must route them too.
 */
import { partitionForKey } from "../../log/partitioner";
import type { Header } from "../record";
import { InMemoryStoreBackend } from "../state/in-memory";
import type { KeyValueStore } from "../state/key-value-store";
import { TypedKeyValueStore } from "../state/typed-store";
import { parseTaskId } from "../topology/task-id";
import type { Topology } from "../topology/topology";
import { createTaskProcessor } from "../runtime/task-processor";
import type { InputRecord, OutgoingRecord, TaskProcessor } from "../runtime/types";

/** A record in the driver's log: an outgoing record with its place. */
export type DriverRecord = InputRecord;

export interface PipeOptions {
  /** Default: Kafka's default partitioner on the key; partition 0 for a null key. */
  readonly partition?: number;
  /** Default: the driver's clock, which advances by 1 ms per piped record. */
  readonly timestamp?: number;
  readonly headers?: readonly Header[];
}

export class TopologyTestDriver {
  /** Every record appended, per topic and partition, in append order. */
  private readonly log = new Map<string, DriverRecord[][]>();
  /** Next offset to process, per task and source topic. */
  private readonly positions = new Map<string, Map<string, number>>();
  readonly tasks = new Map<string, TaskProcessor>();
  readonly backends = new Map<string, InMemoryStoreBackend>();
  private readonly partitionCounts: Readonly<Record<string, number>>;
  private clock = 0;

  constructor(private readonly topology: Topology) {
    this.partitionCounts = topology.topics();
    for (const taskId of topology.taskIds()) {
      const stores = new InMemoryStoreBackend();
      const task = createTaskProcessor(topology, taskId, { stores, collector: { send: (r) => this.append(r) }, clock: () => this.clock });
      this.backends.set(taskId, stores);
      this.tasks.set(taskId, task);
      this.positions.set(taskId, new Map(task.sourceTopics.map((t) => [t, 0])));
    }
  }

  /** Appends a serialized record to an input topic and processes everything that follows from it. */
  pipe(topic: string, key: string | null, value: string | null, options: PipeOptions = {}): void {
    this.clock++;
    const partition = options.partition ?? (key === null ? 0 : partitionForKey(key, this.partitions(topic)));
    this.append({ topic, partition, key, value, timestamp: options.timestamp ?? this.clock, headers: options.headers ?? [] });
    this.drain();
  }

  /** The records of a topic: of one partition, or of all partitions by partition then offset. */
  records(topic: string, partition?: number): DriverRecord[] {
    const partitions = this.log.get(topic) ?? [];
    return partition === undefined ? partitions.flat() : [...(partitions[partition] ?? [])];
  }

  /** A store of one task, typed with the store's serdes (reads only: writes here are not logged). */
  store<K, V>(taskId: string, storeName: string): KeyValueStore<K, V> {
    const definition = this.topology.store(storeName);
    const backend = this.backends.get(taskId);
    if (!definition || !backend) throw new Error(`no store ${storeName} in task ${taskId}`);
    return new TypedKeyValueStore(storeName, backend.keyValue(storeName), definition.keySerde, definition.valueSerde) as KeyValueStore<K, V>;
  }

  /** The value of a key in a store, from whichever task holds it. */
  get<K, V>(storeName: string, key: K): V | undefined {
    for (const taskId of this.tasks.keys()) {
      const value = this.store<K, V>(taskId, storeName).get(key);
      if (value !== undefined) return value;
    }
    return undefined;
  }

  private partitions(topic: string): number {
    const count = this.partitionCounts[topic];
    if (count === undefined) throw new Error(`unknown topic ${topic}`);
    return count;
  }

  private append(record: OutgoingRecord): void {
    const count = this.partitions(record.topic);
    const partition = record.partition ?? (record.key === null ? 0 : partitionForKey(record.key, count));
    if (partition < 0 || partition >= count) throw new Error(`${record.topic} has no partition ${partition}`);
    let partitions = this.log.get(record.topic);
    if (!partitions) this.log.set(record.topic, (partitions = Array.from({ length: count }, () => [])));
    const records = partitions[partition]!;
    records.push({ ...record, partition, offset: records.length });
  }

  /** Processes pending records, task by task, until every task has read all of its partitions. */
  private drain(): void {
    for (let progress = true; progress; ) {
      progress = false;
      for (const [taskId, task] of this.tasks) {
        const positions = this.positions.get(taskId)!;
        const { partition } = parseTaskId(taskId)!;
        for (const [topic, next] of positions) {
          const pending = this.records(topic, partition).slice(next);
          for (const record of pending) task.process(record);
          positions.set(topic, next + pending.length);
          progress ||= pending.length > 0;
        }
      }
    }
  }
}

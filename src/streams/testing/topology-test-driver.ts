/**
 * Runs a whole topology in memory, synchronously, like Kafka Streams' `TopologyTestDriver`: one
 * task processor per task id, an in-memory log of every topic, and a loop that feeds each task
 * the records of its source partitions until nothing is left. Records a task writes to a
 * repartition topic land on a partition of that topic (Kafka's default partitioner on the key)
 * and are processed by the task of the next subtopology that owns that partition, which is how
 * the real runtime must route them too. Wall-clock time is the driver's own (`advanceWallClockTime`
 * runs the wall-clock punctuators), and `restoreTask` replays a task's changelogs into fresh
 * stores (values with their timestamps, which the changelog records carry) and carries on with a
 * new task processor from the same input positions and partition times, as the restore worker
 * and a revived task do. As Kafka's driver, it commits after each record (and each wall-clock
 * punctuation): the record cache is flushed then, so cached stores send every update on.
 */
import { partitionForKey } from "../../log/partitioner";
import type { Header } from "../record";
import { InMemoryStoreBackend } from "../state/in-memory";
import type { KeyValueStore, ValueAndTimestamp } from "../state/key-value-store";
import { MAX_TIME } from "../state/key-codec";
import { SessionStoreView } from "../state/session-store";
import { restoredWrites } from "../state/time-keyed-changelog";
import { TypedKeyValueStore } from "../state/typed-store";
import { WindowStoreView } from "../state/window-store";
import type { Serde } from "../serdes";
import type { StoreDefinition, StoreKind, Topology } from "../topology/topology";
import type { TimestampedWindowedValue, WindowedValue } from "../windowed";
import { encodeInput, inputSerdes } from "../topology/input-encoding";
import { createTaskProcessor } from "../runtime/task-processor";
import type { InputRecord, OutgoingRecord, TaskProcessor } from "../runtime/types";
import { parseTopicPartition, topicPartition } from "../../names";

/** A record in the driver's log: an outgoing record with its place. */
export type DriverRecord = InputRecord;

export interface PipeOptions {
  /** Default: Kafka's default partitioner on the key; partition 0 for a null key. */
  readonly partition?: number;
  /** Default: the driver's clock, which advances by 1 ms per piped record. */
  readonly timestamp?: number;
  readonly headers?: readonly Header[];
}

/** Kafka's configuration, by its names, as far as the driver uses it. */
export interface DriverConfig {
  /** The record cache's byte budget per task (default 10 MiB, Kafka's). */
  readonly "statestore.cache.max.bytes"?: number;
}

export class TopologyTestDriver {
  /** Every record appended, per topic and partition, in append order. */
  private readonly log = new Map<string, DriverRecord[][]>();
  /** Next offset to process, per task and input partition (`topic/partition`). */
  private readonly positions = new Map<string, Map<string, number>>();
  readonly tasks = new Map<string, TaskProcessor>();
  readonly backends = new Map<string, InMemoryStoreBackend>();
  private readonly partitionCounts: Readonly<Record<string, number>>;
  private clock = 0;
  private wallClock = 0;

  constructor(
    private readonly topology: Topology,
    private readonly config: DriverConfig = {},
  ) {
    this.partitionCounts = topology.topics();
    for (const taskId of topology.taskIds()) {
      const task = this.startTask(taskId, new InMemoryStoreBackend());
      // A task reads its partition of its topics, and every partition of its global tables' topics.
      const inputs = [
        ...task.sourceTopics.map((topic) => topicPartition({ topic, partition: task.partition })),
        ...task.globalSourceTopics.flatMap((topic) => Array.from({ length: this.partitions(topic) }, (_, partition) => topicPartition({ topic, partition }))),
      ];
      this.positions.set(taskId, new Map(inputs.map((input) => [input, 0])));
    }
  }

  /** The driver's wall-clock time: 0 at first, moved only by `advanceWallClockTime`. */
  get wallClockTimeMs(): number {
    return this.wallClock;
  }

  /** Moves wall-clock time forward, runs every task's due wall-clock punctuators and processes what follows. */
  advanceWallClockTime(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`wall-clock time only moves forward, got ${ms}`);
    this.wallClock += ms;
    for (const task of this.tasks.values()) {
      task.punctuate(this.wallClock);
      task.flush();
    }
    this.drain();
  }

  /**
   * Replaces a task's stores by what replaying its changelogs (puts and tombstones, in order) into
   * a fresh backend gives, and continues with a new task processor over them from the same input
   * positions: what a wiped or moved task goes through. Returns the new backend.
   */
  restoreTask(taskId: string): InMemoryStoreBackend {
    const old = this.tasks.get(taskId);
    if (!old) throw new Error(`no task ${taskId}`);
    // Committed with the input positions, so a new task processor starts from them.
    const partitionTimes = old.partitionTimes();
    old.close();
    const restored = new InMemoryStoreBackend();
    for (const store of this.topology.subtopology(old.subtopology)!.stores) {
      const raw = restored.keyValue(store.name);
      for (const record of this.records(store.changelogTopic, old.partition)) {
        for (const write of restoredWrites(record.key!, record.value, record.timestamp, record.headers)) {
          if (write.value === null) raw.delete(write.key);
          else raw.put(write.key, write.value, write.timestamp);
        }
      }
    }
    this.startTask(taskId, restored, partitionTimes);
    return restored;
  }

  /** A key's value in a key-value store with its timestamp, from whichever task holds it. */
  getWithTimestamp<K, V>(storeName: string, key: K): ValueAndTimestamp<V> | undefined {
    for (const taskId of this.tasks.keys()) {
      const found = (this.store<K, V>(taskId, storeName) as TypedKeyValueStore<K, V>).getWithTimestamp(key);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /** `windows`, with each window's timestamp. */
  timestampedWindows<K, V>(storeName: string, key: K, from = 0, to = MAX_TIME): TimestampedWindowedValue<V>[] {
    return this.readStore(storeName, "window", (backend, definition) =>
      new WindowStoreView<K, V>(storeName, backend.keyValue(storeName), definition.keySerde as Serde<K>, definition.valueSerde as Serde<V>).fetchWithTimestamps(
        key,
        from,
        to,
      ),
    );
  }

  /** A key's windows with a start in `[from, to]`, from the window store of whichever task holds them. */
  windows<K, V>(storeName: string, key: K, from = 0, to = MAX_TIME): WindowedValue<V>[] {
    return this.readStore(storeName, "window", (backend, definition) =>
      new WindowStoreView<K, V>(storeName, backend.keyValue(storeName), definition.keySerde as Serde<K>, definition.valueSerde as Serde<V>).fetch(
        key,
        from,
        to,
      ),
    );
  }

  /** A key's sessions, from the session store of whichever task holds them. */
  sessions<K, V>(storeName: string, key: K): WindowedValue<V>[] {
    return this.readStore(storeName, "session", (backend, definition) =>
      new SessionStoreView<K, V>(storeName, backend.keyValue(storeName), definition.keySerde as Serde<K>, definition.valueSerde as Serde<V>).fetch(key),
    );
  }

  /**
   * Appends a typed record to a topic, encoded as HTTP ingest and `TestDriver.pipe` encode it (the
   * same bytes: with the serdes of the source reading the topic, checked by reading them back; a
   * null value is a tombstone), and processes everything that follows from it. Throws
   * `RefusedRecord` for a record HTTP ingest would refuse; `pipe` takes bytes as they are.
   */
  pipeInput<K, V>(topic: string, key: K | null, value: V | null, options: PipeOptions = {}): void {
    const encoded = encodeInput(inputSerdes(this.topology, topic), key, value);
    this.pipe(topic, encoded.key, encoded.value, options);
  }

  /** Appends a serialized record to a topic as it is (a null value is a tombstone) and processes everything that follows from it. */
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

  private startTask(taskId: string, stores: InMemoryStoreBackend, initialPartitionTimes?: Readonly<Record<string, number>>): TaskProcessor {
    const task = createTaskProcessor(this.topology, taskId, {
      stores,
      collector: { send: (r) => this.append(r) },
      clock: () => this.wallClock,
      initialPartitionTimes,
      cacheMaxBytes: this.config["statestore.cache.max.bytes"],
    });
    this.backends.set(taskId, stores);
    this.tasks.set(taskId, task);
    return task;
  }

  private readStore<T>(storeName: string, kind: StoreKind, read: (backend: InMemoryStoreBackend, definition: StoreDefinition) => T[]): T[] {
    const definition = this.topology.store(storeName);
    if (!definition || definition.kind !== kind) throw new Error(`no ${kind} store ${storeName}`);
    for (const backend of this.backends.values()) {
      const found = read(backend, definition);
      if (found.length > 0) return found;
    }
    return [];
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
        for (const [input, next] of positions) {
          const { topic, partition } = parseTopicPartition(input)!;
          const pending = this.records(topic, partition).slice(next);
          // A commit after each record, as Kafka's driver commits: the record cache is flushed.
          for (const record of pending) {
            task.process(record);
            task.flush();
          }
          positions.set(input, next + pending.length);
          progress ||= pending.length > 0;
        }
      }
    }
  }
}

/**
 * The synchronous processing runtime of one task: takes serialized input records of its
 * partition, runs them through its subtopology, writes its stores (change-logged) and sends
 * output records to the collector; runs punctuators by stream time after each record and by
 * wall-clock time when asked. No promises anywhere, so a Durable Object can run `process` and
 * `punctuate` inside `transactionSync` together with its checkpoint and input position.
 */
import { DeserializationError } from "../errors";
import type { StoreHandle } from "../processor";
import type { StreamRecord } from "../record";
import { parseTaskId } from "../topology/task-id";
import type { Topology, TopologySource } from "../topology/topology";
import { RecordCache } from "../state/record-cache";
import { CachingKeyValueStore, type WriteOrigin } from "./caching-store";
import { ChangeLoggingKeyValueStore, type WriteContext } from "./change-logging-store";
import { deserializeInput, handleDeserializationError } from "./deserialization";
import { ErrorGuards, type ErrorHandling } from "./error-handling";
import { positionHeader } from "./position-header";
import { ProcessorState } from "./processor-state";
import type { CacheReads, InputRecord, TaskEventMetrics, TaskMetrics, TaskProcessor, TaskProcessorDeps } from "./types";
import { wireSubtopology, type WiredSubtopology } from "./wiring";
import { topicPartition } from "../../names";

/** Instantiates the task `<subtopology>_<partition>` of a topology and initializes its processors. */
export function createTaskProcessor(topology: Topology, taskId: string, deps: TaskProcessorDeps): TaskProcessor {
  const coordinates = parseTaskId(taskId);
  const subtopology = coordinates && topology.subtopology(coordinates.subtopology);
  if (!coordinates || !subtopology || coordinates.partition >= subtopology.partitions) {
    throw new Error(`unknown task ${JSON.stringify(taskId)}: the topology's tasks are ${topology.taskIds().join(", ")}`);
  }
  const { partition } = coordinates;
  const resumed = Object.entries(deps.initialPartitionTimes ?? {}).filter(([topic]) => subtopology.sourceTopics.includes(topic));
  const initialStreamTime = Math.max(deps.initialStreamTimeMs ?? -1, ...resumed.map(([, time]) => time));
  const task = new ProcessorState(topology.applicationId, taskId, partition, initialStreamTime);
  for (const [topic, time] of resumed) task.advancePartitionTime(topic, time);
  const clock = deps.clock ?? Date.now;
  // Writes made while processing a record name its position (I5); others (init, wall-clock punctuation) name none.
  const writeContext: WriteContext = () => {
    const current = task.current;
    if (!current) return { timestamp: clock(), headers: [] };
    return { timestamp: current.timestamp, headers: current.position ? [positionHeader(current.position)] : [] };
  };

  // Every store kind is a raw key-value store underneath: one change-logging wrapper serves them
  // all; a cached store has the task's record cache over it (flushed by `flush`, the commit's first step).
  const cache = new RecordCache<WriteOrigin>(deps.cacheMaxBytes);
  const stores = new Map<string, StoreHandle>();
  const loggedStores: ChangeLoggingKeyValueStore[] = [];
  for (const store of subtopology.stores) {
    const logged = new ChangeLoggingKeyValueStore(deps.stores.keyValue(store.name), store.changelogTopic, partition, deps.collector, writeContext);
    loggedStores.push(logged);
    const handle = { kind: store.kind, keySerde: store.keySerde, valueSerde: store.valueSerde };
    if (store.caching) {
      const cached = new CachingKeyValueStore(store.name, logged, cache, task, writeContext);
      stores.set(store.name, { ...handle, raw: cached, cached });
    } else stores.set(store.name, { ...handle, raw: logged });
  }
  const { processing, production, deadLetterQueueTopic } = topology.errorHandlers;
  const declared = topology.topics();
  const handling: ErrorHandling = {
    deserialization: topology.deserializationHandler,
    processing,
    production,
    deadLetterQueueTopic,
    declared: (topic) => declared[topic] !== undefined,
  };
  const errors = new ErrorGuards(task, deps.collector, handling);
  // Records the topology writes to a topic it reads itself (a repartition topic) are held to the
  // input limit, so that they too can be dead-lettered where they are read.
  const read = new Set(topology.subtopologies.flatMap((s) => [...s.sourceTopics, ...s.globalSourceTopics]));
  const wired = wireSubtopology(subtopology, task, { errors, clock }, stores, deps.collector, read);
  for (const { processor, context } of wired.processors) processor.init?.(context);
  return new SubtopologyTask(handling, subtopology.id, task, wired, errors, deps, cache, loggedStores);
}

class SubtopologyTask implements TaskProcessor {
  private closed = false;

  constructor(
    private readonly handling: ErrorHandling,
    readonly subtopology: number,
    private readonly task: ProcessorState,
    private readonly wired: WiredSubtopology,
    private readonly errors: ErrorGuards,
    private readonly deps: TaskProcessorDeps,
    private readonly cache: RecordCache<WriteOrigin>,
    private readonly logged: readonly ChangeLoggingKeyValueStore[],
  ) {}

  get taskId(): string {
    return this.task.taskId;
  }

  get recordCache(): CacheReads {
    return this.cache;
  }

  get partition(): number {
    return this.task.partition;
  }

  get sourceTopics(): readonly string[] {
    return [...this.wired.sources.entries()].filter(([, s]) => !s.node.global).map(([topic]) => topic);
  }

  get globalSourceTopics(): readonly string[] {
    return [...this.wired.sources.entries()].filter(([, s]) => s.node.global).map(([topic]) => topic);
  }

  get metrics(): TaskMetrics {
    return { ...this.task.metrics };
  }

  get eventMetrics(): TaskEventMetrics {
    return { ...this.task.eventMetrics };
  }

  get streamTimeMs(): number {
    return this.task.streamTimeMs;
  }

  partitionTimes(): Readonly<Record<string, number>> {
    return Object.fromEntries(this.task.partitionTimes);
  }

  process(input: InputRecord): void {
    this.checkOpen();
    const source = this.wired.sources.get(input.topic);
    const global = source?.node.global === true;
    if (!source || (!global && input.partition !== this.partition)) {
      throw new Error(`task ${this.taskId} reads partition ${this.partition} of ${this.sourceTopics.join(", ")}, not ${topicPartition(input)}`);
    }
    let record: ReturnType<typeof deserializeInput>;
    try {
      record = deserializeInput(source.node, input);
    } catch (error) {
      if (!(error instanceof DeserializationError)) throw error;
      // Undecodable records do not advance stream time: their timestamp is not trusted either.
      handleDeserializationError(this.handling, error, input, source.node.name, this.deps.collector, this.task);
      return;
    }
    const position = { topic: input.topic, partition: input.partition, offset: input.offset };
    this.task.current = { position, input, timestamp: input.timestamp };
    if (global) {
      // A global table's update only writes the task's copy: no stream time, no punctuation.
      try {
        source.receive(record);
      } finally {
        this.task.current = undefined;
      }
      this.task.metrics.processedRecords++;
      return;
    }
    try {
      let timestamp: number | undefined = record.timestamp;
      // The default extractor takes the record's own timestamp, which is valid when the log took
      // it: nothing runs that could fail, so no guard (and no closure) per record.
      if (source.node.timestampExtractor !== undefined || !validTimestamp(timestamp)) {
        const partitionTime = this.task.partitionTime(input.topic);
        timestamp = this.errors.processing(source.node.name, () => extractTimestamp(source.node, record, partitionTime), record);
        // An invalid timestamp was handled (skipped or dead-lettered): the record goes no further.
        if (timestamp === undefined) return;
        this.task.current = { position, input, timestamp };
      }
      this.task.advancePartitionTime(input.topic, timestamp);
      this.task.advanceStreamTime(timestamp);
      // The record is this call's own: a copy only when the extractor changed its timestamp.
      source.receive(timestamp === record.timestamp ? record : { ...record, timestamp });
      // Kafka punctuates by stream time after the record; its writes still name this record's position.
      this.task.punctuation.fire("stream-time", this.task.streamTimeMs);
    } finally {
      this.task.current = undefined;
    }
    this.task.metrics.processedRecords++;
  }

  punctuate(nowMs: number): void {
    this.checkOpen();
    this.task.current = { timestamp: nowMs };
    try {
      this.task.punctuation.fire("wall-clock", nowMs);
    } finally {
      this.task.current = undefined;
    }
  }

  flush(): void {
    this.checkOpen();
    this.cache.flushAll();
    // Then the rows logged once per commit (a windowed store's meta row, when no record carried it).
    for (const store of this.logged) store.flushOwed();
  }

  nextWallClockPunctuationMs(): number | undefined {
    return this.task.punctuation.next("wall-clock");
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const { processor } of this.wired.processors) processor.close?.();
  }

  private checkOpen(): void {
    if (this.closed) throw new Error(`task ${this.taskId} is closed`);
  }
}

/** The record's time by the source's extractor (default: the input timestamp); throws if it is not a valid time. */
function extractTimestamp(source: TopologySource, record: StreamRecord<unknown, unknown>, partitionTime: number): number {
  const timestamp = source.timestampExtractor ? source.timestampExtractor(record, partitionTime) : record.timestamp;
  if (!validTimestamp(timestamp)) {
    throw new RangeError(`invalid timestamp ${String(timestamp)}: a record's time is a non-negative integer of milliseconds`);
  }
  return timestamp;
}

function validTimestamp(timestamp: number): boolean {
  return Number.isSafeInteger(timestamp) && timestamp >= 0;
}

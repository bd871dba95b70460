/**
 * The synchronous processing runtime of one task: takes serialized input records of its
 * partition, runs them through its subtopology, writes its stores (change-logged) and sends
 * output records to the collector. No promises anywhere, so a Durable Object can run `process`
 * inside `transactionSync` together with its checkpoint and input position.
 */
import { DeserializationError } from "../errors";
import type { KeyValueStore } from "../state/key-value-store";
import { TypedKeyValueStore } from "../state/typed-store";
import { parseTaskId } from "../topology/task-id";
import type { Topology } from "../topology/topology";
import { ChangeLoggingKeyValueStore, type WriteContext } from "./change-logging-store";
import { deserializeInput, handleDeserializationError } from "./deserialization";
import { positionHeader } from "./position-header";
import { TaskState } from "./task-state";
import type { InputRecord, TaskMetrics, TaskProcessor, TaskProcessorDeps } from "./types";
import { wireSubtopology, type WiredSubtopology } from "./wiring";

/** Instantiates the task `<subtopology>_<partition>` of a topology and initializes its processors. */
export function createTaskProcessor(topology: Topology, taskId: string, deps: TaskProcessorDeps): TaskProcessor {
  const coordinates = parseTaskId(taskId);
  const subtopology = coordinates && topology.subtopology(coordinates.subtopology);
  if (!coordinates || !subtopology || coordinates.partition >= subtopology.partitions) {
    throw new Error(`unknown task ${JSON.stringify(taskId)}: the topology's tasks are ${topology.taskIds().join(", ")}`);
  }
  const { partition } = coordinates;
  const task = new TaskState(topology.applicationId, taskId, partition, deps.initialStreamTimeMs ?? -1);
  const clock = deps.clock ?? Date.now;
  const writeContext: WriteContext = () =>
    task.current ? { timestamp: task.current.timestamp, headers: [positionHeader(task.current.position)] } : { timestamp: clock(), headers: [] };

  const stores = new Map<string, KeyValueStore<unknown, unknown>>();
  for (const store of subtopology.stores) {
    const logged = new ChangeLoggingKeyValueStore(deps.stores.keyValue(store.name), store.changelogTopic, partition, deps.collector, writeContext);
    stores.set(store.name, new TypedKeyValueStore(store.name, logged, store.keySerde, store.valueSerde));
  }
  const wired = wireSubtopology(subtopology, task, stores, deps.collector);
  for (const { processor, context } of wired.processors) processor.init?.(context);
  return new SubtopologyTask(topology, subtopology.id, task, wired, deps);
}

class SubtopologyTask implements TaskProcessor {
  private closed = false;

  constructor(
    private readonly topology: Topology,
    readonly subtopology: number,
    private readonly task: TaskState,
    private readonly wired: WiredSubtopology,
    private readonly deps: TaskProcessorDeps,
  ) {}

  get taskId(): string {
    return this.task.taskId;
  }

  get partition(): number {
    return this.task.partition;
  }

  get sourceTopics(): readonly string[] {
    return [...this.wired.sources.keys()];
  }

  get metrics(): TaskMetrics {
    return { ...this.task.metrics };
  }

  get streamTimeMs(): number {
    return this.task.streamTimeMs;
  }

  process(input: InputRecord): void {
    if (this.closed) throw new Error(`task ${this.taskId} is closed`);
    const source = this.wired.sources.get(input.topic);
    if (!source || input.partition !== this.partition) {
      throw new Error(`task ${this.taskId} reads partition ${this.partition} of ${this.sourceTopics.join(", ")}, not ${input.topic}/${input.partition}`);
    }
    let record;
    try {
      record = deserializeInput(source.node, input);
    } catch (error) {
      if (!(error instanceof DeserializationError)) throw error;
      // Undecodable records do not advance stream time: their timestamp is not trusted either.
      return handleDeserializationError(this.topology.deserializationHandler, error, input, this.deps.collector, this.task);
    }
    this.task.advanceStreamTime(input.timestamp);
    this.task.current = { position: { topic: input.topic, partition: input.partition, offset: input.offset }, timestamp: input.timestamp };
    try {
      source.receive(record);
    } finally {
      this.task.current = undefined;
    }
    this.task.metrics.processedRecords++;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const { processor } of this.wired.processors) processor.close?.();
  }
}

/**
 * An Edge Streams application: a built topology and the catalog of every topic it touches
 * (external, changelog and repartition topics, plus any declared separately). Everything that
 * runs the application — task objects, the API, the restore path — reads it from here.
 */
import { TopicCatalog, type TopicDeclaration } from "./log/topics";
import type { RestoreListener, StandbyUpdateListener } from "./streams/restore-listeners";
import type { TopicPartition } from "./log/types";
import type { StoreDefinition, Subtopology, Topology } from "./streams/topology/topology";
import { formatTaskId, parseTaskId } from "./streams/topology/task-id";
import { TopologyError } from "./streams/errors";
import { checkSinks, type SinkDefinition, type SinkDefinitions } from "./connectors/sink-config";

export interface ApplicationOptions {
  /** Topics to declare besides the topology's own (a partition count: Kafka's default configuration). */
  readonly extraTopics?: Readonly<Record<string, TopicDeclaration>>;
  /** Told about restoration, per changelog partition (runs in the restore worker). */
  readonly restoreListener?: RestoreListener;
  /** Told about standby updates (runs in the restore worker). */
  readonly standbyListener?: StandbyUpdateListener;
  /**
   * Topics the application writes (outputs, dead letters) that clients may write too, say an
   * output topic also fed from elsewhere. Every other topic it writes refuses writes from outside
   * (403). Changelogs and repartition topics can never be opened.
   */
  readonly openTopics?: readonly string[];
  /**
   * Topics delivered outside (docs/connectors.md#sinks): sink name → its topic and a Queue
   * producer binding, or a webhook URL and the var holding its secret. Checked here (`ConfigError`).
   */
  readonly sinks?: SinkDefinitions;
}

export class Application {
  readonly catalog: TopicCatalog;
  /**
   * The topics only the application's tasks write: store changelogs (a task's checkpoint covers
   * what its store wrote there, I1) and repartition topics. Anyone may read them.
   */
  readonly internalTopics: ReadonlySet<string>;
  /**
   * The topics the application writes, which refuse writes from outside (only its tasks write
   * them): its internal topics, every sink's topic (outputs) and its dead-letter topics, less
   * those declared open (`ApplicationOptions.openTopics`).
   */
  readonly writtenTopics: ReadonlySet<string>;
  readonly restoreListener?: RestoreListener;
  readonly standbyListener?: StandbyUpdateListener;
  /** Its sinks (`ApplicationOptions.sinks`), checked. */
  readonly sinks: SinkDefinitions;
  /** The topics its tasks read (sources, repartition topics included). */
  private readonly inputTopics: ReadonlySet<string>;
  /** Each task's input partitions, found once (a task asks several times a step; the topology does not change). */
  private readonly inputsByTask = new Map<string, readonly TopicPartition[]>();

  constructor(
    readonly topology: Topology,
    options: ApplicationOptions = {},
  ) {
    this.catalog = new TopicCatalog({ ...topology.topicSpecs(), ...options.extraTopics });
    this.internalTopics = new Set(topology.subtopologies.flatMap((s) => [...s.stores.map((store) => store.changelogTopic), ...s.repartitionSourceTopics]));
    const open = new Set(options.openTopics ?? []);
    for (const topic of open) {
      if (this.internalTopics.has(topic))
        throw new TopologyError(`openTopics: ${topic} is internal to the application (a changelog or repartition topic): only its tasks may write it`);
      if (!this.catalog.has(topic)) throw new TopologyError(`openTopics: ${topic} is not a topic of the application`);
    }
    const written = [...this.internalTopics, ...topology.subtopologies.flatMap((s) => s.sinkTopics), ...topology.deadLetterTopics()];
    this.writtenTopics = new Set(written.filter((topic) => !open.has(topic)));
    this.restoreListener = options.restoreListener;
    this.standbyListener = options.standbyListener;
    this.inputTopics = new Set(topology.subtopologies.flatMap((s) => s.sourceTopics));
    this.sinks = options.sinks ?? {};
    checkSinks(this.sinks, (topic) => this.catalog.has(topic));
  }

  /** The sinks delivering `topic`, by name. */
  sinksOf(topic: string): [string, SinkDefinition][] {
    return Object.entries(this.sinks).filter(([, sink]) => sink.topic === topic);
  }

  /** Whether some task of the application reads `topic`. */
  isTaskInput(topic: string): boolean {
    return this.inputTopics.has(topic);
  }

  /** The topics its tasks read that come from outside (not repartition topics, not global tables' topics): what an input reset moves. */
  externalInputTopics(): string[] {
    return [...this.inputTopics].filter((topic) => !this.internalTopics.has(topic)).sort();
  }

  get applicationId(): string {
    return this.topology.applicationId;
  }

  /** The consumer group whose committed offsets record the tasks' input progress (only the tasks commit them). */
  get groupId(): string {
    return this.topology.applicationId;
  }

  taskIds(): string[] {
    return this.topology.taskIds();
  }

  /** The subtopology and partition of a task id; undefined when the application has no such task. */
  task(taskId: string): { subtopology: Subtopology; partition: number } | undefined {
    const coordinates = parseTaskId(taskId);
    if (!coordinates) return undefined;
    const subtopology = this.topology.subtopology(coordinates.subtopology);
    if (!subtopology || coordinates.partition >= subtopology.partitions) return undefined;
    return { subtopology, partition: coordinates.partition };
  }

  /**
   * The input partitions a task reads: its partition of its source topics, and every partition of
   * the topics of the global tables it joins (each task keeps a whole copy of those).
   */
  inputPartitions(taskId: string): readonly TopicPartition[] {
    let inputs = this.inputsByTask.get(taskId);
    if (inputs) return inputs;
    const task = this.requireTask(taskId);
    const counts = this.topology.topics();
    inputs = Object.freeze([
      ...task.subtopology.sourceTopics.map((topic) => Object.freeze({ topic, partition: task.partition })),
      ...task.subtopology.globalSourceTopics.flatMap((topic) =>
        Array.from({ length: counts[topic] ?? 0 }, (_, partition) => Object.freeze({ topic, partition })),
      ),
    ]);
    // Only ids of the application's tasks get here (`requireTask` throws for others): bounded by its tasks.
    this.inputsByTask.set(taskId, inputs);
    return inputs;
  }

  /**
   * Whether a task reads this topic as a global table's: its position there is carried by the
   * table's changelog alone (every write names it), never committed to the application's group,
   * where the tasks sharing the topic would overwrite each other's offsets.
   */
  isGlobalInput(taskId: string, topic: string): boolean {
    return this.requireTask(taskId).subtopology.globalSourceTopics.includes(topic);
  }

  /** The changelog partition of each of the task's stores. */
  changelogPartitions(taskId: string): (TopicPartition & { store: string })[] {
    const task = this.requireTask(taskId);
    return task.subtopology.stores.map((store) => ({ store: store.name, topic: store.changelogTopic, partition: task.partition }));
  }

  /** A store and the subtopology that owns it. */
  store(name: string): { store: StoreDefinition; subtopology: Subtopology } | undefined {
    for (const subtopology of this.topology.subtopologies) {
      const store = subtopology.stores.find((s) => s.name === name);
      if (store) return { store, subtopology };
    }
    return undefined;
  }

  /** The task that owns a partition of a store. */
  taskForStorePartition(subtopology: Subtopology, partition: number): string {
    return formatTaskId(subtopology.id, partition);
  }

  private requireTask(taskId: string): { subtopology: Subtopology; partition: number } {
    const task = this.task(taskId);
    if (!task) throw new Error(`the application has no task ${taskId}`);
    return task;
  }
}

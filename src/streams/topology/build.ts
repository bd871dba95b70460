/**
 * Turns the recorded graph into a `Topology`: validates it, splits it into subtopologies, names
 * the internal topics, works out every partition count and checks co-partitioning.
 */
import { topicConfig, type TopicConfig, type TopicKind } from "../../log/topic-config";
import type { TopicSpec } from "../../log/topics";
import { TopologyError } from "../errors";
import type { Serde } from "../serdes";
import type { GraphNode, SinkNode, SourceNode, TopologyGraph } from "./graph";
import { groupNodes } from "./grouping";
import type { DeserializationHandler, ProcessingHandler, ProductionHandler } from "../error-handlers";
import { Topology, type ErrorHandlers, type StoreDefinition, type Subtopology, type TopologyNode, type UncaughtErrorHandler } from "./topology";
import { checkDeclaredTopics, checkName, checkStores, checkTopics } from "./validation";

export interface BuildOptions {
  /** Prefix of every internal topic; also the identity of the application's tasks. */
  readonly applicationId: string;
  /** The partition count of every external topic the topology reads or writes. */
  readonly topics: Readonly<Record<string, number>>;
  /**
   * Kafka's `errors.dead.letter.queue.topic.name`: the topic (declared in `topics`) where the
   * built-in `"continue"` handlers send the records that fail, with Kafka's error headers, before
   * going on. Handler functions name their dead letter topic themselves.
   */
  readonly deadLetterQueueTopic?: string;
  /** When an input record's key or value cannot be deserialized (Kafka's `DeserializationExceptionHandler`); default `"fail"`. */
  readonly onDeserializationError?: DeserializationHandler;
  /** When user code throws while processing (Kafka's `ProcessingExceptionHandler`, KIP-1033); default `"fail"`. */
  readonly onProcessingError?: ProcessingHandler;
  /**
   * When an output record cannot be serialized or partitioned, or the log refuses it (Kafka's
   * `ProductionExceptionHandler`); default `"fail"`. Sends that fail for a while (the log not
   * answering) are retried with a back-off, without asking it.
   */
  readonly onProductionError?: ProductionHandler;
  /** What the task's Durable Object does with an error escaping processing; default `"fail"`. */
  readonly onUncaughtError?: UncaughtErrorHandler;
  /**
   * Settings of topics, with Kafka's names (`retention.ms`, `cleanup.policy`, …), over the
   * defaults Kafka Streams uses: its own topics 7 days' retention, changelogs compacted,
   * repartition topics purged once consumed.
   */
  readonly topicConfigs?: Readonly<Record<string, Partial<TopicConfig>>>;
  /**
   * Kafka's `default.key.serde`, for the keys whose serde the DSL cannot know: a grouping,
   * repartition or join after an operation that changed the key (`selectKey`, `map`, `flatMap`,
   * `process`, `groupBy`), when it gives none. Without it such a topology is refused with a
   * `TopologyError` naming the fix. (Sources without a serde read JSON whatever this says.)
   */
  readonly defaultKeySerde?: Serde<unknown>;
}

/** Each handler is a built-in one or a function (a misspelt handler fails here, not at the first bad record). */
function checkHandlers(handlers: readonly unknown[]): void {
  for (const h of handlers) {
    const valid =
      h === "fail" || h === "continue" || h === "skip" || typeof h === "function" || (typeof h === "object" && h !== null && "deadLetterTopic" in h);
    if (!valid) throw new TopologyError(`an error handler is "fail", "continue", { deadLetterTopic } or a function, got ${JSON.stringify(h)}`);
  }
}

export const changelogTopicName = (applicationId: string, store: string) => `${applicationId}-${store}-changelog`;
export const repartitionTopicName = (applicationId: string, base: string) => `${applicationId}-${base}-repartition`;

export function buildTopology(graph: TopologyGraph, options: BuildOptions): Topology {
  const { applicationId, topics } = options;
  const handler = options.onDeserializationError ?? "fail";
  checkName(applicationId, "applicationId");
  checkDeclaredTopics(topics);
  checkStores(graph);
  for (const missing of graph.missingKeySerdes) missing.resolve(options.defaultKeySerde);
  const realName = (topic: string, repartition: boolean) => (repartition ? repartitionTopicName(applicationId, topic) : topic);

  const repartitionBases = graph.nodes.flatMap((n) => (n.kind === "sink" && n.repartition ? [n.topic] : []));
  const duplicate = repartitionBases.find((base, i) => repartitionBases.indexOf(base) !== i);
  if (duplicate !== undefined) throw new TopologyError(`repartition topic name ${JSON.stringify(duplicate)} is used more than once`);
  repartitionBases.forEach((base) => checkName(base, "repartition name"));
  const internal = new Set([
    ...repartitionBases.map((base) => repartitionTopicName(applicationId, base)),
    ...graph.stores.map((s) => changelogTopicName(applicationId, s.name)),
  ]);
  const unusedGlobal = graph.stores.find(
    (s) => s.global && !graph.nodes.some((n) => n.kind === "processor" && n.stores.includes(s.name) && !isGlobalWriter(n)),
  );
  if (unusedGlobal)
    throw new TopologyError(`global table ${JSON.stringify(unusedGlobal.name)} is not joined by any stream: a global table lives in the tasks that join it`);
  checkTopics(graph, topics, internal, realName);
  const errorHandlers: ErrorHandlers = {
    processing: options.onProcessingError ?? "fail",
    production: options.onProductionError ?? "fail",
    uncaught: options.onUncaughtError ?? "fail",
    ...(options.deadLetterQueueTopic === undefined ? {} : { deadLetterQueueTopic: options.deadLetterQueueTopic }),
  };
  checkHandlers([handler, errorHandlers.processing, errorHandlers.production]);
  const deadLetterTopics = [
    ...(options.deadLetterQueueTopic === undefined ? [] : [options.deadLetterQueueTopic]),
    ...[handler, errorHandlers.processing, errorHandlers.production].flatMap((h) => (typeof h === "object" ? [h.deadLetterTopic] : [])),
  ];
  for (const topic of deadLetterTopics) {
    if (typeof topic !== "string" || topics[topic] === undefined) {
      throw new TopologyError(`unknown dead letter topic ${JSON.stringify(topic)}: declare its partition count in build({ topics })`);
    }
    // A dead letter read back would fail again and come back again, for ever.
    if (graph.nodes.some((n) => n.kind === "source" && !n.repartition && n.topics.includes(topic))) {
      throw new TopologyError(`dead letter topic ${JSON.stringify(topic)} is read by the topology: a record that fails there would come back for ever`);
    }
  }

  const groups = groupNodes(graph);
  const partitions = partitionCounts(groups, topics, realName);
  // How many subtopologies hold a copy of each global store (each copy needs its own changelog).
  const globalUsers = new Map<string, number>();
  for (const nodes of groups) {
    for (const store of new Set(nodes.flatMap((n) => (n.kind === "processor" ? n.stores : [])))) {
      if (graph.stores.find((s) => s.name === store)?.global) globalUsers.set(store, (globalUsers.get(store) ?? 0) + 1);
    }
  }
  const allTopics: Record<string, number> = { ...topics };
  const subtopologies = groups.map((nodes, id): Subtopology => {
    const count = partitions.subtopologies[id]!;
    const allSources = nodes.filter((n): n is SourceNode => n.kind === "source");
    const sources = allSources.filter((n) => !n.global);
    const sinks = nodes.filter((n): n is SinkNode => n.kind === "sink");
    const stores = storeDefinitions(graph, nodes, applicationId, id, globalUsers);
    for (const sink of sinks) if (sink.repartition) allTopics[realName(sink.topic, true)] = partitions.repartitionTopics.get(sink.topic)!;
    for (const store of stores) allTopics[store.changelogTopic] = count;
    return {
      id,
      partitions: count,
      sourceTopics: sources.flatMap((s) => s.topics.map((t) => realName(t, s.repartition))),
      repartitionSourceTopics: sources.filter((s) => s.repartition).flatMap((s) => s.topics.map((t) => realName(t, true))),
      globalSourceTopics: allSources.filter((s) => s.global).flatMap((s) => s.topics),
      sinkTopics: unique(sinks.map((s) => realName(s.topic, s.repartition))),
      stores,
      nodes: resolveNodes(nodes, realName, (sink) => (sink.repartition ? partitions.repartitionTopics.get(sink.topic)! : topics[sink.topic]!)),
    };
  });
  const unknownConfig = Object.keys(options.topicConfigs ?? {}).find((t) => allTopics[t] === undefined);
  if (unknownConfig !== undefined)
    throw new TopologyError(`topicConfigs names ${JSON.stringify(unknownConfig)}, which the topology neither declares nor creates`);
  const changelogs = new Set(subtopologies.flatMap((s) => s.stores.map((store) => store.changelogTopic)));
  const repartitions = new Set(subtopologies.flatMap((s) => s.repartitionSourceTopics));
  // A topic read only as a global table's (not also as a stream or table of some task) is compacted.
  const streamSources = new Set(subtopologies.flatMap((s) => s.sourceTopics));
  const globalTables = new Set(subtopologies.flatMap((s) => s.globalSourceTopics).filter((t) => !streamSources.has(t)));
  const specs: Record<string, TopicSpec> = {};
  for (const [topic, count] of Object.entries(allTopics)) {
    const kind = changelogs.has(topic) ? "changelog" : repartitions.has(topic) ? "repartition" : globalTables.has(topic) ? "global-table" : "user";
    specs[topic] = { partitions: count, config: configOf(topic, kind, options.topicConfigs?.[topic]) };
  }
  return new Topology(applicationId, subtopologies, specs, handler, errorHandlers);
}

/** A topic's configuration, its errors (a setting Kafka refuses) naming the topic. */
function configOf(topic: string, kind: TopicKind, overrides: Partial<TopicConfig> | undefined): TopicConfig {
  try {
    return topicConfig(kind, overrides);
  } catch (error) {
    throw new TopologyError(`topic ${topic}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * The partition count of each subtopology and of each repartition topic (by base name). A
 * subtopology has the count of its source topics, which must agree (co-partitioning). Topics with a
 * fixed count — external topics and repartition topics given one (`Repartitioned`) — decide it; a
 * repartition topic without one takes it, or, when a subtopology reads only such topics, the
 * largest of the counts of the subtopologies writing them (Kafka's rules for co-partitioned
 * repartition topics).
 */
function partitionCounts(
  groups: readonly GraphNode[][],
  topics: Readonly<Record<string, number>>,
  realName: (topic: string, repartition: boolean) => string,
): { readonly subtopologies: number[]; readonly repartitionTopics: ReadonlyMap<string, number> } {
  const writerOf = new Map<string, { id: number; sink: SinkNode }>();
  groups.forEach((nodes, id) => {
    for (const node of nodes) if (node.kind === "sink" && node.repartition) writerOf.set(node.topic, { id, sink: node });
  });
  const counts = new Map<number, number>();
  const resolving = new Set<number>();

  const countOf = (id: number): number => {
    const known = counts.get(id);
    if (known !== undefined) return known;
    if (resolving.has(id)) throw new TopologyError(`subtopology ${id} feeds itself through repartition topics`);
    resolving.add(id);
    const sources = groups[id]!.flatMap((node) =>
      node.kind !== "source" || node.global
        ? []
        : node.topics.map((topic) => ({
            topic: realName(topic, node.repartition),
            fixed: node.repartition ? writerOf.get(topic)!.sink.partitions : topics[topic]!,
            base: topic,
          })),
    );
    if (sources.length === 0) throw new TopologyError(`subtopology ${id} has no source topic`);
    const fixed = sources.filter((s) => s.fixed !== undefined);
    if (fixed.some((s) => s.fixed !== fixed[0]!.fixed)) {
      const listed = fixed.map((s) => `${s.topic} (${s.fixed} partitions)`).join(", ");
      throw new TopologyError(
        `subtopology ${id} reads topics that are not co-partitioned: ${listed}; ` +
          `topics merged or joined into one subtopology must have the same partition count`,
      );
    }
    const count = fixed[0]?.fixed ?? Math.max(...sources.map((s) => countOf(writerOf.get(s.base)!.id)));
    resolving.delete(id);
    counts.set(id, count);
    return count;
  };
  const subtopologies = groups.map((_, id) => countOf(id));
  // A repartition topic has its reader's count (equal to its own when it was fixed).
  const repartitionTopics = new Map<string, number>();
  groups.forEach((nodes, id) => {
    for (const node of nodes) if (node.kind === "source" && node.repartition) for (const topic of node.topics) repartitionTopics.set(topic, subtopologies[id]!);
  });
  return { subtopologies, repartitionTopics };
}

/**
 * The stores a subtopology's nodes use. A global store's copy in a subtopology is change-logged
 * like any store; when several subtopologies hold a copy, each copy's changelog is named after
 * its subtopology too (`<applicationId>-<store>-<subtopology>-changelog`).
 */
function storeDefinitions(
  graph: TopologyGraph,
  nodes: readonly GraphNode[],
  applicationId: string,
  subtopology: number,
  globalUsers: ReadonlyMap<string, number>,
): StoreDefinition[] {
  const used = unique(nodes.flatMap((n) => (n.kind === "processor" ? n.stores : [])));
  return used.map((name) => {
    const spec = graph.stores.find((s) => s.name === name)!;
    const shared = (globalUsers.get(name) ?? 0) > 1;
    const changelogTopic = changelogTopicName(applicationId, shared ? `${name}-${subtopology}` : name);
    const definition = { name, kind: spec.kind ?? "key-value", changelogTopic, keySerde: spec.keySerde, valueSerde: spec.valueSerde } as const;
    return { ...definition, ...(spec.global ? { global: true } : {}), ...(spec.caching ? { caching: true } : {}) };
  });
}

function resolveNodes(
  nodes: readonly GraphNode[],
  realName: (topic: string, repartition: boolean) => string,
  sinkPartitions: (sink: SinkNode) => number,
): TopologyNode[] {
  const children = new Map<string, string[]>(nodes.map((n) => [n.name, []]));
  for (const node of nodes) for (const parent of node.parents) children.get(parent.name)!.push(node.name);
  return nodes.map((node): TopologyNode => {
    const links = { parents: node.parents.map((p) => p.name), children: children.get(node.name)! };
    switch (node.kind) {
      case "source": {
        const { keySerde, valueSerde, timestampExtractor } = node;
        const source = {
          kind: "source",
          name: node.name,
          topics: node.topics.map((t) => realName(t, node.repartition)),
          keySerde,
          valueSerde,
          ...links,
          ...(node.global ? { global: true } : {}),
        } as const;
        return timestampExtractor ? { ...source, timestampExtractor } : source;
      }
      case "processor":
        return { kind: "processor", name: node.name, supplier: node.supplier, stores: node.stores, ...links };
      case "sink": {
        const { keySerde, valueSerde, partitioner } = node;
        const sink = {
          kind: "sink",
          name: node.name,
          topic: realName(node.topic, node.repartition),
          partitions: sinkPartitions(node),
          keySerde,
          valueSerde,
          ...links,
        } as const;
        return partitioner ? { ...sink, partitioner } : sink;
      }
    }
  });
}

function unique<T>(items: readonly T[]): T[] {
  return [...new Set(items)];
}

/** Whether a processor is the one writing a global table (its parent is a global source). */
function isGlobalWriter(node: GraphNode): boolean {
  return node.parents.some((p) => p.kind === "source" && p.global);
}

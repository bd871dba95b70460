/**
 * Turns the recorded graph into a `Topology`: validates it, splits it into subtopologies, names
 * the internal topics, works out every partition count and checks co-partitioning.
 */
import { topicConfig, type TopicConfig } from "../../log/topic-config";
import type { TopicSpec } from "../../log/topics";
import { TopologyError } from "../errors";
import type { GraphNode, SinkNode, SourceNode, TopologyGraph } from "./graph";
import { groupNodes } from "./grouping";
import { Topology, type DeserializationHandler, type ErrorHandler, type ErrorHandlers, type StoreDefinition, type Subtopology, type TopologyNode, type UncaughtErrorHandler } from "./topology";
import { checkDeclaredTopics, checkName, checkStores, checkTopics } from "./validation";

export interface BuildOptions {
  /** Prefix of every internal topic; also the identity of the application's tasks. */
  readonly applicationId: string;
  /** The partition count of every external topic the topology reads or writes. */
  readonly topics: Readonly<Record<string, number>>;
  /** Default `"fail"`. */
  readonly onDeserializationError?: DeserializationHandler;
  /** When user code throws while processing; default `"fail"`. */
  readonly onProcessingError?: ErrorHandler;
  /** When an output record cannot be serialized or partitioned; default `"fail"`. */
  readonly onProductionError?: ErrorHandler;
  /** What the task's Durable Object does with an error escaping processing; default `"fail"`. */
  readonly onUncaughtError?: UncaughtErrorHandler;
  /**
   * Settings of topics, with Kafka's names (`retention.ms`, `cleanup.policy`, …), over the
   * defaults Kafka Streams uses: its own topics 7 days' retention, changelogs compacted,
   * repartition topics purged once consumed.
   */
  readonly topicConfigs?: Readonly<Record<string, Partial<TopicConfig>>>;
}

export const changelogTopicName = (applicationId: string, store: string) => `${applicationId}-${store}-changelog`;
export const repartitionTopicName = (applicationId: string, base: string) => `${applicationId}-${base}-repartition`;

export function buildTopology(graph: TopologyGraph, options: BuildOptions): Topology {
  const { applicationId, topics } = options;
  const handler = options.onDeserializationError ?? "fail";
  checkName(applicationId, "applicationId");
  checkDeclaredTopics(topics);
  checkStores(graph);
  const realName = (topic: string, repartition: boolean) => (repartition ? repartitionTopicName(applicationId, topic) : topic);

  const repartitionBases = graph.nodes.flatMap((n) => (n.kind === "sink" && n.repartition ? [n.topic] : []));
  const duplicate = repartitionBases.find((base, i) => repartitionBases.indexOf(base) !== i);
  if (duplicate !== undefined) throw new TopologyError(`repartition topic name ${JSON.stringify(duplicate)} is used more than once`);
  repartitionBases.forEach((base) => checkName(base, "repartition name"));
  const internal = new Set([
    ...repartitionBases.map((base) => repartitionTopicName(applicationId, base)),
    ...graph.stores.map((s) => changelogTopicName(applicationId, s.name)),
  ]);
  checkTopics(graph, topics, internal, realName);
  const errorHandlers: ErrorHandlers = {
    processing: options.onProcessingError ?? "fail",
    production: options.onProductionError ?? "fail",
    uncaught: options.onUncaughtError ?? "fail",
  };
  for (const h of [handler, errorHandlers.processing, errorHandlers.production]) {
    if (typeof h === "object" && topics[h.deadLetterTopic] === undefined) {
      throw new TopologyError(`unknown dead letter topic ${JSON.stringify(h.deadLetterTopic)}: declare its partition count in build({ topics })`);
    }
  }

  const groups = groupNodes(graph);
  const partitions = partitionCounts(groups, topics, realName);
  const allTopics: Record<string, number> = { ...topics };
  const subtopologies = groups.map((nodes, id): Subtopology => {
    const count = partitions[id]!;
    const sources = nodes.filter((n): n is SourceNode => n.kind === "source");
    const sinks = nodes.filter((n): n is SinkNode => n.kind === "sink");
    const stores = storeDefinitions(graph, nodes, applicationId);
    for (const sink of sinks) if (sink.repartition) allTopics[realName(sink.topic, true)] = count;
    for (const store of stores) allTopics[store.changelogTopic] = count;
    return {
      id,
      partitions: count,
      sourceTopics: sources.flatMap((s) => s.topics.map((t) => realName(t, s.repartition))),
      repartitionSourceTopics: sources.filter((s) => s.repartition).flatMap((s) => s.topics.map((t) => realName(t, true))),
      sinkTopics: unique(sinks.map((s) => realName(s.topic, s.repartition))),
      stores,
      nodes: resolveNodes(nodes, realName, (sink) => (sink.repartition ? count : topics[sink.topic]!)),
    };
  });
  const unknownConfig = Object.keys(options.topicConfigs ?? {}).find((t) => allTopics[t] === undefined);
  if (unknownConfig !== undefined) throw new TopologyError(`topicConfigs names ${JSON.stringify(unknownConfig)}, which the topology neither declares nor creates`);
  const changelogs = new Set(subtopologies.flatMap((s) => s.stores.map((store) => store.changelogTopic)));
  const repartitions = new Set(subtopologies.flatMap((s) => s.repartitionSourceTopics));
  const specs: Record<string, TopicSpec> = {};
  for (const [topic, count] of Object.entries(allTopics)) {
    const kind = changelogs.has(topic) ? "changelog" : repartitions.has(topic) ? "repartition" : "user";
    specs[topic] = { partitions: count, config: topicConfig(kind, options.topicConfigs?.[topic]) };
  }
  return new Topology(applicationId, subtopologies, specs, handler, errorHandlers);
}

/**
 * The partition count of each subtopology: that of its source topics, which must all agree
 * (co-partitioning). A repartition topic gets the count of the subtopology that writes it.
 */
function partitionCounts(
  groups: readonly GraphNode[][],
  topics: Readonly<Record<string, number>>,
  realName: (topic: string, repartition: boolean) => string,
): number[] {
  const writerOf = new Map<string, number>();
  groups.forEach((nodes, id) => {
    for (const node of nodes) if (node.kind === "sink" && node.repartition) writerOf.set(node.topic, id);
  });
  const counts = new Map<number, number>();
  const resolving = new Set<number>();

  const countOf = (id: number): number => {
    const known = counts.get(id);
    if (known !== undefined) return known;
    if (resolving.has(id)) throw new TopologyError(`subtopology ${id} feeds itself through repartition topics`);
    resolving.add(id);
    const sourceCounts = groups[id]!.flatMap((node) =>
      node.kind !== "source"
        ? []
        : node.topics.map((topic) => ({
            topic: realName(topic, node.repartition),
            count: node.repartition ? countOf(writerOf.get(topic)!) : topics[topic]!,
          })),
    );
    const first = sourceCounts[0];
    if (!first) throw new TopologyError(`subtopology ${id} has no source topic`);
    if (sourceCounts.some((s) => s.count !== first.count)) {
      const listed = sourceCounts.map((s) => `${s.topic} (${s.count} partitions)`).join(", ");
      throw new TopologyError(
        `subtopology ${id} reads topics that are not co-partitioned: ${listed}; ` +
          `topics merged or joined into one subtopology must have the same partition count`,
      );
    }
    resolving.delete(id);
    counts.set(id, first.count);
    return first.count;
  };
  return groups.map((_, id) => countOf(id));
}

function storeDefinitions(graph: TopologyGraph, nodes: readonly GraphNode[], applicationId: string): StoreDefinition[] {
  const used = unique(nodes.flatMap((n) => (n.kind === "processor" ? n.stores : [])));
  return used.map((name) => {
    const spec = graph.stores.find((s) => s.name === name)!;
    return { name, kind: spec.kind ?? "key-value", changelogTopic: changelogTopicName(applicationId, name), keySerde: spec.keySerde, valueSerde: spec.valueSerde };
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
        const source = { kind: "source", name: node.name, topics: node.topics.map((t) => realName(t, node.repartition)), keySerde, valueSerde, ...links } as const;
        return timestampExtractor ? { ...source, timestampExtractor } : source;
      }
      case "processor":
        return { kind: "processor", name: node.name, supplier: node.supplier, stores: node.stores, ...links };
      case "sink": {
        const { keySerde, valueSerde, partitioner } = node;
        const sink = { kind: "sink", name: node.name, topic: realName(node.topic, node.repartition), partitions: sinkPartitions(node), keySerde, valueSerde, ...links } as const;
        return partitioner ? { ...sink, partitioner } : sink;
      }
    }
  });
}

function unique<T>(items: readonly T[]): T[] {
  return [...new Set(items)];
}

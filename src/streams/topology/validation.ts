/**
 * Checks of a recorded graph that do not depend on how it splits: legal names, unique stores,
 * processors using declared stores, topics declared, each topic read by one source only.
 * Every failure is a `TopologyError` that names what is wrong.
 */
import { TopologyError } from "../errors";
import type { TopologyGraph } from "./graph";

/** Topic names as Kafka allows them; store and application names become parts of topic names. */
const legalTopicName = /^[A-Za-z0-9._-]{1,249}$/;

export function checkName(name: string, what: string): void {
  if (!legalTopicName.test(name) || name === "." || name === "..") {
    throw new TopologyError(`${what} ${JSON.stringify(name)} is not a legal name: use letters, digits, '.', '_' and '-'`);
  }
}

export function checkDeclaredTopics(topics: Readonly<Record<string, number>>): void {
  for (const [topic, partitions] of Object.entries(topics)) {
    checkName(topic, "topic");
    if (!Number.isInteger(partitions) || partitions < 1) {
      throw new TopologyError(`topic ${topic}: partition count must be a positive integer, got ${partitions}`);
    }
  }
}

export function checkStores(graph: TopologyGraph): void {
  const declared = new Set<string>();
  for (const store of graph.stores) {
    checkName(store.name, "store name");
    if (declared.has(store.name)) throw new TopologyError(`store name ${JSON.stringify(store.name)} is used more than once; store names must be unique`);
    declared.add(store.name);
  }
  for (const node of graph.nodes) {
    if (node.kind !== "processor") continue;
    for (const store of node.stores) {
      if (!declared.has(store)) {
        throw new TopologyError(`processor ${node.name} uses store ${JSON.stringify(store)}, which is not declared (addStateStore or Materialized)`);
      }
    }
  }
}

/**
 * External topics must be declared with their partition count; internal topics must not be
 * (their count follows from the topology); a topic is read by one source node only.
 */
export function checkTopics(
  graph: TopologyGraph,
  topics: Readonly<Record<string, number>>,
  internalTopics: ReadonlySet<string>,
  realName: (topic: string, repartition: boolean) => string,
): void {
  const unknown = (topic: string, use: string) =>
    new TopologyError(`unknown topic ${JSON.stringify(topic)} (${use}): declare its partition count in build({ topics })`);
  for (const topic of Object.keys(topics)) {
    if (internalTopics.has(topic)) throw new TopologyError(`topic ${topic} is an internal topic of this topology; do not declare it`);
  }
  const readBy = new Map<string, string>();
  for (const node of graph.nodes) {
    if (node.kind === "source") {
      for (const base of node.topics) {
        const topic = realName(base, node.repartition);
        if (!node.repartition && topics[topic] === undefined) throw unknown(topic, `read by ${node.name}`);
        const other = readBy.get(topic);
        if (other !== undefined) throw new TopologyError(`topic ${topic} is read by both ${other} and ${node.name}; a topic can have one source only`);
        readBy.set(topic, node.name);
      }
    } else if (node.kind === "sink" && !node.repartition && topics[node.topic] === undefined) {
      throw unknown(node.topic, `written by ${node.name}`);
    }
  }
}

/**
 * A readable description of a topology, laid out like Kafka Streams' `TopologyDescription` with
 * partition counts and changelog topics added.
 */
import type { Topology, TopologyNode } from "./topology";

function describeNode(node: TopologyNode): string[] {
  const head =
    node.kind === "source"
      ? `Source: ${node.name} (topics: [${node.topics.join(", ")}])`
      : node.kind === "processor"
        ? `Processor: ${node.name} (stores: [${node.stores.join(", ")}])`
        : `Sink: ${node.name} (topic: ${node.topic})`;
  const lines = [`    ${head}`];
  if (node.children.length) lines.push(`      --> ${node.children.join(", ")}`);
  if (node.parents.length) lines.push(`      <-- ${node.parents.join(", ")}`);
  return lines;
}

export function describeTopology(topology: Topology): string {
  const lines = [`Topology ${topology.applicationId}:`];
  for (const sub of topology.subtopologies) {
    lines.push(`  Sub-topology: ${sub.id} (${sub.partitions} partitions, tasks ${sub.id}_0..${sub.id}_${sub.partitions - 1})`);
    for (const node of sub.nodes) lines.push(...describeNode(node));
    for (const store of sub.stores) {
      const kind = store.kind === "key-value" ? "" : `${store.kind}, `;
      lines.push(`    Store: ${store.name} (${kind}changelog: ${store.changelogTopic})`);
    }
  }
  return `${lines.join("\n")}\n`;
}

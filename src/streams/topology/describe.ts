/**
 * A readable description of a topology, laid out like Kafka Streams' `TopologyDescription` with
 * partition counts and changelog topics added.
 */

/** What a description reads of a node (`TopologyNode` satisfies it). */
type DescribedNode = (
  | { readonly kind: "source"; readonly topics: readonly string[] }
  | { readonly kind: "processor"; readonly stores: readonly string[] }
  | { readonly kind: "sink"; readonly topic: string }
) & {
  readonly name: string;
  readonly parents: readonly string[];
  readonly children: readonly string[];
};

/** What a description reads of a topology (`Topology` satisfies it: topology.ts calls this, and this imports nothing of it). */
export interface DescribedTopology {
  readonly applicationId: string;
  readonly subtopologies: readonly {
    readonly id: number;
    readonly partitions: number;
    readonly nodes: readonly DescribedNode[];
    readonly stores: readonly { readonly name: string; readonly kind: string; readonly changelogTopic: string }[];
  }[];
}

function describeNode(node: DescribedNode): string[] {
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

export function describeTopology(topology: DescribedTopology): string {
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

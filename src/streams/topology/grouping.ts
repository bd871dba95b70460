/**
 * Splits the graph into subtopologies: the connected components of the node graph, where nodes
 * that share a store count as connected. A repartition topic is not an edge, which is what starts
 * a new subtopology after a key change. Components are numbered from 0 in the order their first
 * source was created, as Kafka Streams numbers them. Global tables are copied into the
 * subtopologies that use them.
 */
import { TopologyError } from "../errors";
import type { GraphNode, TopologyGraph } from "./graph";

/** Union-find over node names. */
class Components {
  private readonly leader = new Map<string, string>();

  find(name: string): string {
    const up = this.leader.get(name);
    if (up === undefined || up === name) return name;
    const root = this.find(up);
    this.leader.set(name, root);
    return root;
  }

  union(a: string, b: string): void {
    const ra = this.find(a);
    const rb = this.find(b);
    if (ra !== rb) this.leader.set(rb, ra);
  }
}

/**
 * The nodes of each subtopology, in creation order; the index is the subtopology id. A global
 * table (a global source and the processor writing its store) belongs to no subtopology of its
 * own: its nodes join every subtopology with a processor that uses its store, after that
 * subtopology's own nodes, and using it does not connect subtopologies.
 */
export function groupNodes(graph: TopologyGraph): GraphNode[][] {
  const globalStores = new Set(graph.stores.filter((s) => s.global).map((s) => s.name));
  const components = new Components();
  const firstUserOfStore = new Map<string, string>();
  for (const node of graph.nodes) {
    for (const parent of node.parents) components.union(parent.name, node.name);
    if (node.kind !== "processor") continue;
    for (const store of node.stores) {
      if (globalStores.has(store)) continue;
      const first = firstUserOfStore.get(store);
      if (first === undefined) firstUserOfStore.set(store, node.name);
      else components.union(first, node.name);
    }
  }
  const globalRoots = new Set(graph.nodes.filter((n) => n.kind === "source" && n.global).map((n) => components.find(n.name)));
  /** A global table's nodes, by the store they write. */
  const globalTables = new Map<string, GraphNode[]>();
  for (const node of graph.nodes) {
    if (!globalRoots.has(components.find(node.name)) || node.kind !== "processor") continue;
    for (const store of node.stores)
      globalTables.set(
        store,
        graph.nodes.filter((n) => components.find(n.name) === components.find(node.name)),
      );
  }

  const idOfRoot = new Map<string, number>();
  for (const node of graph.nodes) {
    if (node.kind !== "source") continue;
    const root = components.find(node.name);
    if (!globalRoots.has(root) && !idOfRoot.has(root)) idOfRoot.set(root, idOfRoot.size);
  }

  const groups: GraphNode[][] = Array.from({ length: idOfRoot.size }, () => []);
  for (const node of graph.nodes) {
    const root = components.find(node.name);
    if (globalRoots.has(root)) continue;
    const id = idOfRoot.get(root);
    if (id === undefined) throw new TopologyError(`${node.name} is not connected to any source`);
    groups[id]!.push(node);
  }
  for (const group of groups) {
    const used = new Set(group.flatMap((n) => (n.kind === "processor" ? n.stores.filter((s) => globalStores.has(s)) : [])));
    for (const store of used) group.push(...(globalTables.get(store) ?? []));
  }
  return groups;
}

/**
 * `split()`: routes each record to the first branch whose predicate it satisfies, or to the
 * default branch, or drops it. The branch names are tracked in the type, so the returned streams
 * are reached as `branches.big` without a check for undefined.
 */
import { TopologyError } from "../errors";
import type { GraphNode } from "../topology/graph";
import { KStream, type Predicate } from "./kstream";
import { erase, passThrough, processorOf } from "./processors";

/** The streams of a split, by branch name. */
export type Branches<K, V, Names extends string> = { readonly [Name in Names]: KStream<K, V> };

interface Route<K, V> {
  /** Undefined for the default branch, which takes every record no other branch took. */
  readonly predicate?: Predicate<K, V>;
  readonly node: GraphNode;
}

export class BranchedKStream<K, V, Prefix extends string, Names extends string = never> {
  private readonly routes: Route<K, V>[] = [];
  private readonly streams = new Map<string, KStream<K, V>>();
  private readonly splitter: GraphNode;
  private ended = false;

  /** Made by `KStream.split`. */
  constructor(
    private readonly parent: KStream<K, V>,
    private readonly prefix: Prefix,
  ) {
    // Reads `routes` when records flow, by then complete: routes are added while the DSL is written.
    const routes = this.routes;
    const supplier = processorOf<K, V, K, V>((record, context) => {
      const route = routes.find((r) => r.predicate === undefined || r.predicate(record.key, record.value));
      if (route) context.forward(record, route.node.name);
    });
    this.splitter = parent.graph.addProcessor("KSTREAM-BRANCH", { parents: [parent.node], supplier: erase(supplier), stores: [] });
  }

  /** A branch for the records that satisfy the predicate (and no earlier branch's). */
  branch<Name extends string>(predicate: Predicate<K, V>, name: Name): BranchedKStream<K, V, Prefix, Names | `${Prefix}${Name}`>;
  branch(predicate: Predicate<K, V>): BranchedKStream<K, V, Prefix, Names | `${Prefix}${number}`>;
  branch(predicate: Predicate<K, V>, name?: string): unknown {
    this.add(predicate, name ?? String(this.routes.length + 1));
    return this;
  }

  /** Ends the split with a branch for every record no other branch took (named `0` by default). */
  defaultBranch<Name extends string = "0">(name?: Name): Branches<K, V, Names | `${Prefix}${Name}`> {
    this.add(undefined, name ?? "0");
    return this.end() as Branches<K, V, Names | `${Prefix}${Name}`>;
  }

  /** Ends the split; records no branch took are dropped. */
  noDefaultBranch(): Branches<K, V, Names> {
    return this.end() as Branches<K, V, Names>;
  }

  private add(predicate: Predicate<K, V> | undefined, name: string): void {
    if (this.ended) throw new TopologyError("this split already ended: add branches before defaultBranch()/noDefaultBranch()");
    const fullName = `${this.prefix}${name}`;
    if (this.streams.has(fullName)) throw new TopologyError(`split branch ${JSON.stringify(fullName)} is defined twice`);
    const { graph } = this.parent;
    const node = graph.addProcessor("KSTREAM-BRANCHCHILD", { parents: [this.splitter], supplier: passThrough, stores: [] });
    this.routes.push(predicate ? { predicate, node } : { node });
    const { keySerde, valueSerde, repartitionRequired } = this.parent;
    this.streams.set(fullName, new KStream<K, V>(graph, node, keySerde, valueSerde, repartitionRequired));
  }

  private end(): Readonly<Record<string, KStream<K, V>>> {
    this.ended = true;
    return Object.fromEntries(this.streams);
  }
}

/**
 * The key serde of a grouping, repartition or join that the DSL cannot know: the key was changed
 * before it (`selectKey`, `map`, `flatMap`, `process`, `groupBy`, `KTable.groupBy`) and none was
 * given. Kafka Streams 4.0 refuses such a topology too (no `default.key.serde` configured); quietly
 * writing the key as JSON would turn a string key `NL` into `"NL"`, in stores and in repartition
 * topics. The DSL records one of these where the serde is missing; `build` binds it to
 * `BuildOptions.defaultKeySerde`, or refuses the topology with a `TopologyError` naming the fix.
 */
import { TopologyError } from "../errors";
import type { Serde } from "../serdes";

export class MissingKeySerde implements Serde<unknown> {
  private bound: Serde<unknown> | undefined;
  /** Given later by the topology itself (an aggregation's `Materialized` key serde): nothing is missing. */
  private supplied = false;

  constructor(
    /** What needs the serde and how to give one, for the `TopologyError`. */
    readonly message: string,
  ) {}

  /** Uses `serde` from now on, given later in the topology (an aggregation's `Materialized`); first one wins. */
  supply(serde: Serde<unknown>): void {
    if (this.supplied) return;
    this.bound = serde;
    this.supplied = true;
  }

  /** At build: binds the topology-level default, or refuses the topology when there is none. */
  resolve(defaultKeySerde: Serde<unknown> | undefined): void {
    if (this.supplied) return;
    if (!defaultKeySerde) throw new TopologyError(this.message);
    this.bound = defaultKeySerde;
  }

  serialize(value: unknown): string {
    return this.serde().serialize(value);
  }

  deserialize(text: string): unknown {
    return this.serde().deserialize(text);
  }

  fromText(text: string): unknown {
    const serde = this.serde();
    return serde.fromText ? serde.fromText(text) : text;
  }

  private serde(): Serde<unknown> {
    if (!this.bound) throw new TopologyError(this.message);
    return this.bound;
  }
}

/**
 * The message of a missing key serde: `operation` needs one after `node` changed the key; `fix`
 * shows the call with a serde given.
 */
export function missingKeySerdeMessage(operation: string, node: string, fix: string): string {
  return (
    `${operation} after ${node} needs a key serde: the key may have changed there (selectKey, map, flatMap, process, groupBy), ` +
    `so its serde is not known, and JSON is not assumed (a string key would become "\\"key\\""). ` +
    `Give one, e.g. ${fix}, or set defaultKeySerde in build()`
  );
}

/**
 * Table updates as table operators pass them between themselves (Kafka's `Change<V>`): the row's
 * new value and, when an operator further down needs it, its old value. `null` is no row (a
 * tombstone as new value, an absent row as old value). Old values are worth their cost only where
 * something uses them (a grouped table subtracts the old value, a filter above a materialized
 * table drops updates of rows that neither were nor are in it), so each table node sends them only
 * once asked, through `OldValues`, as Kafka's `enableSendingOldValues` does. `toStream()` turns a
 * change back into its new value.
 */
import { DeserializationError } from "../errors";
import type { Serde } from "../serdes";

export interface Change<V> {
  readonly newValue: V | null;
  readonly oldValue: V | null;
  /**
   * False for an update older than the row a versioned table already holds (KIP-914): the table's
   * history changed, its latest row did not; joins and aggregations ignore it.
   */
  readonly isLatest?: boolean;
}

export function change<V>(newValue: V | null, oldValue: V | null = null, isLatest?: boolean): Change<V> {
  return isLatest === undefined ? { newValue, oldValue } : { newValue, oldValue, isLatest };
}

/**
 * Whether a table node sends old values, and how to make it (Kafka's `enableSendingOldValues`).
 * The node's processor reads `sending` when records flow, after the topology is built, so an
 * operator added later can still turn it on. `enable(force)` asks the node to send them: a node
 * that has its old values at hand (its own store) always can; a stateless one can if its parent
 * can; a source table can if it is materialized, or when `force` lets it materialize itself.
 */
export class OldValues {
  private on = false;

  /** `enabler` says whether the node can send old values; by default it can (it has a store). */
  constructor(
    private readonly enabler: (force: boolean) => boolean = () => true,
    /** Already on (a filter above a table that sends them sends them too, as Kafka's filter does). */
    initially = false,
  ) {
    this.on = initially;
  }

  get sending(): boolean {
    return this.on;
  }

  enable(force: boolean): boolean {
    if (!this.on) this.on = this.enabler(force);
    return this.on;
  }
}

/**
 * How a change crosses a repartition topic: one record holding both values, each serialized with
 * the table's value serde (a JSON array `[new, old]` of serialized values or nulls).
 */
export function changeSerde<V>(inner: Serde<V>): Serde<Change<V>> {
  const write = (value: V | null) => (value === null ? null : inner.serialize(value));
  const read = (text: unknown) => (text === null ? null : inner.deserialize(text as string));
  return {
    serialize: (c) => JSON.stringify([write(c.newValue), write(c.oldValue)]),
    deserialize: (text) => {
      const parsed: unknown = JSON.parse(text);
      if (!Array.isArray(parsed) || parsed.length !== 2 || !parsed.every((v) => v === null || typeof v === "string")) {
        throw new DeserializationError(`not a table change ([new, old]): ${text.slice(0, 64)}`);
      }
      return change(read(parsed[0]), read(parsed[1]));
    },
  };
}

/**
 * The records that flow between processors: typed key and value, with a timestamp and the headers
 * of the input record they come from.
 */
import type { Header } from "../log/types";

export type { Header };

/**
 * A record inside a topology. (Kafka Streams calls it `Record`; that name is TypeScript's own.)
 * An input record without a key carries `null` here whatever `K` is, as in Kafka Streams;
 * aggregations drop such records.
 */
export interface StreamRecord<K, V> {
  readonly key: K;
  readonly value: V;
  /**
   * Event time in milliseconds since the epoch. Stateless operators keep their input's; stateful
   * ones stamp results as Kafka Streams does (an aggregate with its latest record's time, a join
   * with the later of its two sides', a session with its end).
   */
  readonly timestamp: number;
  readonly headers: readonly Header[];
}

/** A key and its value, as stores return them. */
export interface KeyValue<K, V> {
  readonly key: K;
  readonly value: V;
}

/** The position of the input record being processed. */
export interface RecordMetadata {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

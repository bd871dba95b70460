/**
 * Windows and windowed keys: what windowed aggregations key their results by (Kafka Streams'
 * `Windowed<K>`), and the serde that writes such keys to topics.
 */
import { DeserializationError } from "./errors";
import type { Serde } from "./serde";

/**
 * A window of time in milliseconds. For time (tumbling, hopping) windows `end` is exclusive; for
 * sliding and session windows it is inclusive, as in Kafka Streams.
 */
export interface Window {
  readonly start: number;
  readonly end: number;
}

/** A key together with the window its value belongs to. */
export interface Windowed<K> {
  readonly key: K;
  readonly window: Window;
}

/** A value with its window, as window and session store reads return them. */
export interface WindowedValue<V> {
  readonly window: Window;
  readonly value: V;
}

/** A window's value with its timestamp (Kafka's timestamped window stores). */
export interface TimestampedWindowedValue<V> extends WindowedValue<V> {
  readonly timestamp: number;
}

/**
 * `<inner key>@<start>/<end>`, like Kafka's `Windowed#toString`: readable, and unambiguous because
 * the text after the last `@` is always two numbers.
 */
export function windowedSerde<K>(inner: Serde<K>): Serde<Windowed<K>> {
  return {
    serialize: ({ key, window }) => `${inner.serialize(key)}@${window.start}/${window.end}`,
    deserialize: (text) => {
      const at = text.lastIndexOf("@");
      const match = /^(\d+)\/(\d+)$/.exec(text.slice(at + 1));
      if (at < 0 || !match) throw new DeserializationError(`not a windowed key (<key>@<start>/<end>): ${JSON.stringify(text.slice(0, 64))}`);
      return { key: inner.deserialize(text.slice(0, at)), window: { start: Number(match[1]), end: Number(match[2]) } };
    },
  };
}

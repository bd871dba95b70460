/**
 * The `Serde` interface alone, so that the serdes built on it (schema-serde.ts, windowed.ts) and
 * the `Serdes` that offers them (serdes.ts) import it without importing each other in a circle.
 */

/** A serializer and deserializer pair for one type. `deserialize` throws `DeserializationError`. */
export interface Serde<T> {
  serialize(value: T): string;
  deserialize(text: string): T;
  /**
   * The value a key written as text stands for — a key in a URL path, in an HTTP ingest body, a
   * scan's bounds — before it is serialized; without it, the text itself (a string key).
   */
  fromText?(text: string): T;
}

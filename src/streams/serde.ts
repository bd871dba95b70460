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

/**
 * A JSON serde's check of a value as it came out of `JSON.parse`: throws what `deserialize` would
 * throw for `serialize(value)`, without that round trip. Only for a value `JSON.parse` made (HTTP
 * ingest's body) that `jsonReproducible` passes: then `JSON.parse(serialize(value))` is the same
 * value, key for key and number for number, so `deserialize` would check just this. A serde
 * carries it (under this symbol, unseen by applications) only when its `serialize` is
 * `JSON.stringify` and its `deserialize` is `JSON.parse` and a check of what that gives.
 */
export const CHECK_PARSED_JSON: unique symbol = Symbol("edge-streams.checkParsedJson");

export interface ChecksParsedJson {
  readonly [CHECK_PARSED_JSON]?: (value: unknown) => void;
}

/**
 * Whether `JSON.parse(JSON.stringify(value))` gives `value` back exactly, for a value `JSON.parse`
 * made: it does unless a number is -0 (written "0") or not finite ("1e400" parses to Infinity,
 * written "null"). Iterative: a body may nest deeper than the stack goes.
 */
export function jsonReproducible(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === "number") {
      if (!Number.isFinite(next) || Object.is(next, -0)) return false;
    } else if (typeof next === "object" && next !== null) {
      if (Array.isArray(next)) for (const item of next) pending.push(item);
      else for (const key of Object.keys(next)) pending.push((next as Record<string, unknown>)[key]);
    }
  }
  return true;
}

/**
 * Serdes turn typed keys and values into the strings the log and the stores hold, and back.
 * JSON is the default wherever a serde is not given (except for keys after a key change, which
 * need one: docs/dsl.md).
 */
import { DeserializationError, messageOf } from "./errors";
import { CHECK_PARSED_JSON, type ChecksParsedJson, type Serde } from "./serde";
import { schemaSerde } from "./schema-serde";
import type { SchemaOutput, StandardSchemaV1 } from "./standard-schema";
import { windowedSerde, type Windowed } from "./windowed";

export type { Serde };

/** The JSON serde without a schema: one object, so streams with the default serde have the same one. */
const jsonSerde: Serde<unknown> & ChecksParsedJson = {
  serialize: (value) => {
    const text = JSON.stringify(value);
    // JSON.stringify answers undefined for undefined and functions: not a value the log can hold.
    if (text === undefined) throw new TypeError(`cannot serialize ${typeof value} as JSON`);
    return text;
  },
  deserialize: (text) => {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new DeserializationError(`invalid JSON: ${messageOf(error)}`, undefined, { cause: error });
    }
  },
  // JSON.parse reads whatever JSON.stringify wrote: nothing to check.
  [CHECK_PARSED_JSON]: () => {},
};

/** JSON text; with a schema (zod 4, or any Standard Schema), only values that match it deserialize. */
function json<T>(): Serde<T>;
function json<S extends StandardSchemaV1>(schema: S): Serde<SchemaOutput<S>>;
function json(schema?: StandardSchemaV1): Serde<unknown> {
  return schema === undefined ? jsonSerde : schemaSerde(schema);
}

const stringSerde: Serde<string> = {
  serialize: (value) => value,
  deserialize: (text) => text,
};

function parseNumber(text: string): number {
  // Number("") is 0 and Number(" 1") is 1: insist on the text a number serializes to.
  const value = Number(text);
  if (text.trim() === "" || text.trim() !== text || Number.isNaN(value)) {
    throw new DeserializationError(`not a number: ${JSON.stringify(text.slice(0, 64))}`);
  }
  return value;
}

const numberSerde: Serde<number> = {
  serialize: (value) => String(value),
  deserialize: parseNumber,
  // `/keys/5` is the key 5, and so is `/keys/5.0`.
  fromText: parseNumber,
};

/** The built-in serdes. */
export const Serdes = {
  /** The string itself. */
  string: (): Serde<string> => stringSerde,
  /** A decimal number (`String(n)`); NaN and non-numeric text fail to deserialize. */
  number: (): Serde<number> => numberSerde,
  /**
   * JSON text, the default. Without a schema the type is the caller's claim: values are not
   * validated. With one (`Serdes.json(z.object({ amount: z.number() }))`, zod 4 or any Standard
   * Schema), a value that does not match fails to deserialize — and is refused by HTTP ingest.
   */
  json,
  /** Windowed keys as `<inner key>@<start>/<end>`; the serde windowed tables write their keys with. */
  windowed: <K>(inner: Serde<K>): Serde<Windowed<K>> => windowedSerde(inner),
  /** A serde from two functions; errors thrown by `deserialize` become `DeserializationError`. */
  from<T>(serialize: (value: T) => string, deserialize: (text: string) => T): Serde<T> {
    return {
      serialize,
      deserialize: (text) => {
        try {
          return deserialize(text);
        } catch (error) {
          if (error instanceof DeserializationError) throw error;
          throw new DeserializationError(messageOf(error), undefined, { cause: error });
        }
      },
    };
  },
};

/** The serde to use: the given one, else JSON. */
export function serdeOrDefault<T>(serde: Serde<T> | undefined): Serde<T> {
  return serde ?? (jsonSerde as Serde<T>);
}

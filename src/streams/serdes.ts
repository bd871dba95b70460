/**
 * Serdes turn typed keys and values into the strings the log and the stores hold, and back.
 * JSON is the default wherever a serde is not given.
 */
import { DeserializationError, messageOf } from "./errors";
import { windowedSerde, type Windowed } from "./windowed";

/** A serializer and deserializer pair for one type. `deserialize` throws `DeserializationError`. */
export interface Serde<T> {
  serialize(value: T): string;
  deserialize(text: string): T;
}

function json<T>(): Serde<T> {
  return {
    serialize: (value) => {
      const text = JSON.stringify(value);
      // JSON.stringify answers undefined for undefined and functions: not a value the log can hold.
      if (text === undefined) throw new TypeError(`cannot serialize ${typeof value} as JSON`);
      return text;
    },
    deserialize: (text) => {
      try {
        return JSON.parse(text) as T;
      } catch (error) {
        throw new DeserializationError(`invalid JSON: ${messageOf(error)}`, undefined, { cause: error });
      }
    },
  };
}

const stringSerde: Serde<string> = {
  serialize: (value) => value,
  deserialize: (text) => text,
};

const numberSerde: Serde<number> = {
  serialize: (value) => String(value),
  deserialize: (text) => {
    // Number("") is 0 and Number(" 1") is 1: insist on the text a number serializes to.
    const value = Number(text);
    if (text.trim() === "" || text.trim() !== text || Number.isNaN(value)) {
      throw new DeserializationError(`not a number: ${JSON.stringify(text.slice(0, 64))}`);
    }
    return value;
  },
};

/** The built-in serdes. */
export const Serdes = {
  /** The string itself. */
  string: (): Serde<string> => stringSerde,
  /** A decimal number (`String(n)`); NaN and non-numeric text fail to deserialize. */
  number: (): Serde<number> => numberSerde,
  /** JSON text, the default. The type is the caller's claim: values are not validated. */
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
  return serde ?? json<T>();
}

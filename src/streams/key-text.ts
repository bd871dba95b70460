/**
 * Keys written as text — in a URL path (`GET /stores/:store/keys/:key`), an HTTP ingest body, a
 * scan's bounds — and the serialized keys a topic or store holds. The text is the key itself for
 * string keys, whatever serde writes them (a JSON-keyed store finds `/keys/NL` under `"NL"`); a
 * serde with `fromText` reads other types from it (`Serdes.number()`: `/keys/5` is the key 5).
 */
import { messageOf } from "./errors";
import type { Serde } from "./serdes";

/** The text does not stand for a key of that serde; the message says why. */
export class KeyTextError extends Error {
  override name = "KeyTextError";
}

/** The typed key a text stands for. */
export function keyFromText<K>(serde: Serde<K>, text: string): K {
  if (!serde.fromText) return text as K;
  try {
    return serde.fromText(text);
  } catch (error) {
    throw new KeyTextError(messageOf(error), { cause: error });
  }
}

/** The serialized key a text stands for; throws `KeyTextError` when the serde cannot write it. */
export function serializedKeyFromText(serde: Serde<unknown>, text: string): string {
  const key = keyFromText(serde, text);
  let serialized: unknown;
  try {
    serialized = serde.serialize(key);
  } catch (error) {
    throw new KeyTextError(messageOf(error), { cause: error });
  }
  if (typeof serialized !== "string") throw new KeyTextError(`its serde wrote ${typeof serialized}, not text`);
  return serialized;
}

/**
 * The serialized prefix of the keys whose text starts with `text`: for a serde that writes strings
 * in quotes (JSON's `"NL"`), the serialized string left open (the prefix `N` is `"N`); otherwise
 * the text as it is (a number store's prefix `1.` matches 1.5 and not 1).
 */
export function serializedPrefixFromText(serde: Serde<unknown>, text: string): string {
  if (!quotesStrings(serde)) return text;
  const serialized = serializedKeyFromText(serde, text);
  return serialized.endsWith('"') ? serialized.slice(0, -1) : serialized;
}

/** A stored key as an answer shows it: deserialized, or the serialized text when it does not deserialize. */
export function keyForAnswer(serde: Serde<unknown>, serialized: string): unknown {
  try {
    return serde.deserialize(serialized);
  } catch {
    return serialized;
  }
}

function quotesStrings(serde: Serde<unknown>): boolean {
  try {
    return serde.serialize(keyFromText(serde, "")) === '""';
  } catch {
    return false;
  }
}

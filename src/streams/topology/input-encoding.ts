/**
 * How a record written from outside — HTTP ingest, `TestDriver.pipe`, `TopologyTestDriver.pipeInput`
 * — becomes the bytes of a topic, the same on every path. A topic that the topology reads takes
 * its key and value through the serdes of the source reading it (a `Serdes.string()` topic holds
 * the string itself, a number topic the number's text, JSON as JSON), and each is checked on the
 * way in: serialized, then read back with every source's deserializer, so that a record no task
 * could read is refused before it is appended. A topic no source reads keeps its plain encoding:
 * the key as given (a string), the value as JSON. A null value is a tombstone everywhere (Kafka's
 * delete). Keys are limited in length (`MAX_INPUT_KEY_BYTES`) so that every key can be read back by
 * URL, and records in size (`MAX_INPUT_RECORD_BYTES`) so that a dead letter of one still fits.
 */
import { MAX_INPUT_KEY_BYTES, MAX_INPUT_RECORD_BYTES, recordBytes, utf8Length } from "../../log/records";
import { TOMBSTONE_HEADER } from "../../log/stored-batch";
import type { Header, ProducerRecord } from "../../log/types";
import { messageOf } from "../errors";
import type { Serde } from "../serdes";
import { CHECK_PARSED_JSON, jsonReproducible, type ChecksParsedJson } from "../serde";
import type { Topology } from "./topology";

/** The serdes of one source reading a topic. */
export interface SourceSerdes {
  readonly key: Serde<unknown>;
  readonly value: Serde<unknown>;
}

/** How records of a topic the topology reads are written (the first source's serdes) and checked (every source's). */
export interface InputSerdes extends SourceSerdes {
  readonly readers: readonly SourceSerdes[];
}

/** Why a record is refused: its key's length, a key or value the serdes cannot write and read back, or its size. */
export type Refusal = "key" | "invalid" | "too-large";

export class RefusedRecord extends Error {
  override name = "RefusedRecord";

  constructor(
    readonly refusal: Refusal,
    /** The part at fault, when it is one: `key` or `value`. */
    readonly field: "key" | "value" | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** A record as the log will hold it: a null value is a tombstone. */
export interface EncodedRecord {
  readonly key: string | null;
  readonly value: string | null;
  /** Its size as the log counts it (key, value and headers, UTF-8), the tombstone header included. */
  readonly bytes: number;
}

const TOMBSTONE: readonly Header[] = [{ key: TOMBSTONE_HEADER, value: "1" }];
const serdesByTopology = new WeakMap<Topology, Map<string, InputSerdes>>();

/** The serdes records of `topic` are written with: those of the sources reading it; undefined when none does. */
export function inputSerdes(topology: Topology, topic: string): InputSerdes | undefined {
  let byTopic = serdesByTopology.get(topology);
  if (!byTopic) {
    byTopic = sourcesByTopic(topology);
    serdesByTopology.set(topology, byTopic);
  }
  return byTopic.get(topic);
}

function sourcesByTopic(topology: Topology): Map<string, InputSerdes> {
  const readers = new Map<string, SourceSerdes[]>();
  for (const subtopology of topology.subtopologies) {
    for (const node of subtopology.nodes) {
      if (node.kind !== "source") continue;
      for (const topic of node.topics) {
        const known = readers.get(topic) ?? [];
        if (!known.some((r) => r.key === node.keySerde && r.value === node.valueSerde)) known.push({ key: node.keySerde, value: node.valueSerde });
        readers.set(topic, known);
      }
    }
  }
  return new Map([...readers].map(([topic, list]) => [topic, { ...list[0]!, readers: list }]));
}

/**
 * A typed record of a topic, encoded and checked; throws `RefusedRecord`. `serdes`: the topic's
 * (`inputSerdes`), undefined for a topic no source reads, whose keys are strings (or null).
 * `parsedValue`: the value is as `JSON.parse` made it (HTTP ingest's body), so a JSON serde may
 * check it without reading its text back (`CHECK_PARSED_JSON`): the same outcome, the same error.
 */
export function encodeInput(serdes: InputSerdes | undefined, key: unknown, value: unknown, parsedValue = false): EncodedRecord {
  // A key's length is that of its text: the string, or the serialized form of another type.
  if (typeof key === "string") checkKeyText(key);
  const encodedKey = key === null ? null : serdes ? encodeChecked(serdes, "key", key) : plainKey(key);
  if (key !== null && typeof key !== "string") checkKeyText(encodedKey!);
  const encodedValue = value === null ? null : serdes ? encodeChecked(serdes, "value", value, parsedValue) : plainValue(value);
  const bytes = recordBytes(encodedKey, encodedValue ?? "", encodedValue === null ? TOMBSTONE : []);
  if (bytes > MAX_INPUT_RECORD_BYTES) {
    throw new RefusedRecord("too-large", undefined, `the record is ${bytes} bytes; a record written from outside is at most ${MAX_INPUT_RECORD_BYTES}`);
  }
  return { key: encodedKey, value: encodedValue, bytes };
}

/** The record to append: a null value becomes the log's tombstone (an empty value with the tombstone header). */
export function toProducerRecord(record: EncodedRecord, timestamp?: number): ProducerRecord {
  const base = record.value === null ? { key: record.key, value: "", headers: TOMBSTONE } : { key: record.key, value: record.value };
  return timestamp === undefined ? base : { ...base, timestamp };
}

/** Throws `RefusedRecord` for an empty key, or one longer than `MAX_INPUT_KEY_BYTES`. */
export function checkKeyText(text: string): void {
  if (text.length === 0) throw new RefusedRecord("key", "key", "a key is not empty (an empty key could not be read back by GET /stores/:store/keys/:key)");
  // At most 3 UTF-8 bytes per UTF-16 unit: most keys need no exact count.
  if (text.length * 3 <= MAX_INPUT_KEY_BYTES) return;
  const bytes = utf8Length(text);
  if (bytes > MAX_INPUT_KEY_BYTES) throw new RefusedRecord("key", "key", `a key is at most ${MAX_INPUT_KEY_BYTES} bytes (UTF-8); this one is ${bytes}`);
}

/**
 * Serialized with the first source's serde, then read back by every source's: both must succeed.
 * A value `JSON.parse` made (`parsed`), read by one source only, with a JSON serde: checked as it
 * is, which is what reading its text back would check (see `CHECK_PARSED_JSON`).
 */
function encodeChecked(serdes: InputSerdes, field: "key" | "value", typed: unknown, parsed = false): string {
  let text: unknown;
  try {
    text = serdes[field].serialize(typed);
  } catch (error) {
    throw new RefusedRecord("invalid", field, `cannot be serialized: ${messageOf(error)}`);
  }
  if (typeof text !== "string") throw new RefusedRecord("invalid", field, `its serializer returned ${describe(text)}, not text`);
  // One reader, the serde that wrote the text: its check cannot see anything the text does not hold.
  const check = parsed && serdes.readers.length === 1 ? (serdes.readers[0]![field] as ChecksParsedJson)[CHECK_PARSED_JSON] : undefined;
  if (check && serdes.readers[0]![field] === serdes[field] && jsonReproducible(typed)) {
    try {
      check(typed);
    } catch (error) {
      throw new RefusedRecord("invalid", field, messageOf(error));
    }
    return text;
  }
  for (const reader of serdes.readers) {
    try {
      reader[field].deserialize(text);
    } catch (error) {
      throw new RefusedRecord("invalid", field, messageOf(error));
    }
  }
  return text;
}

function plainKey(key: unknown): string {
  if (typeof key !== "string") throw new RefusedRecord("invalid", "key", `a topic no source reads takes string keys, got ${describe(key)}`);
  return key;
}

function plainValue(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new RefusedRecord("invalid", "value", `cannot be serialized as JSON: ${describe(value)}`);
  return text;
}

function describe(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
}

/**
 * The records of an HTTP ingest request, encoded for their topic (src/streams/topology/input-encoding.ts:
 * the same bytes `TestDriver.pipe` and `TopologyTestDriver.pipeInput` write) — or the first one
 * refused, so that nothing of a request is appended when one record of it fails. A key in the
 * body is the key as text, as in a URL path (src/streams/key-text.ts). `records`' values must be
 * as `JSON.parse` made them (the request's body): a JSON serde checks them without a round trip.
 */
import type { ProducerRecord } from "../log/types";
import { KeyTextError, keyFromText } from "../streams/key-text";
import { checkKeyText, encodeInput, RefusedRecord, toProducerRecord, type InputSerdes } from "../streams/topology/input-encoding";
import type { IngestRecord } from "./plan";

export type EncodedRequest =
  | { readonly ok: true; readonly records: ProducerRecord[] }
  | { readonly ok: false; readonly index: number; readonly refused: RefusedRecord };

export function encodeIngest(records: readonly IngestRecord[], serdes: InputSerdes | undefined): EncodedRequest {
  const encoded: ProducerRecord[] = new Array(records.length);
  for (let index = 0; index < records.length; index++) {
    const record = records[index]!;
    try {
      checkKeyText(record.key);
      const key = serdes ? typedKey(serdes, record.key) : record.key;
      // The values come from the request's JSON body, as JSON.parse made them.
      encoded[index] = toProducerRecord(encodeInput(serdes, key, record.value, true), record.timestamp);
    } catch (error) {
      if (error instanceof RefusedRecord) return { ok: false, index, refused: error };
      throw error;
    }
  }
  return { ok: true, records: encoded };
}

function typedKey(serdes: InputSerdes, text: string): unknown {
  try {
    return keyFromText(serdes.key, text);
  } catch (error) {
    if (error instanceof KeyTextError) throw new RefusedRecord("invalid", "key", error.message);
    throw error;
  }
}

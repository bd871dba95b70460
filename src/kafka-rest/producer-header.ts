/**
 * The `edge-producer` record header: how an idempotent, fenced producer travels through the Kafka
 * REST dialect, which has no field for it. Its value is `<producerId>;<epoch>;<sequence>`. An
 * Edge Streams `/kafka` endpoint turns it back into a `ProducerId` and strips it before storage;
 * a plain Kafka REST endpoint stores it as an ordinary header (and gives no idempotence).
 */
import type { Header, ProducerId } from "../log/types";

export const EDGE_PRODUCER_HEADER = "edge-producer";

const MAX_PRODUCER_ID_LENGTH = 512;

export function formatProducerHeader(producer: ProducerId): Header {
  return { key: EDGE_PRODUCER_HEADER, value: `${producer.producerId};${producer.epoch};${producer.sequence}` };
}

/**
 * Parses a header value; null when malformed. The id may itself contain `;`: epoch and sequence
 * are the last two fields.
 */
export function parseProducerHeader(value: string): ProducerId | null {
  const match = /^(.+);(0|[1-9][0-9]{0,15});(0|[1-9][0-9]{0,15})$/s.exec(value);
  if (!match) return null;
  const producerId = match[1]!;
  const epoch = Number(match[2]);
  const sequence = Number(match[3]);
  if (producerId.length > MAX_PRODUCER_ID_LENGTH || !Number.isSafeInteger(epoch) || !Number.isSafeInteger(sequence)) return null;
  return { producerId, epoch, sequence };
}

/** Splits a record's headers into the producer header (if any) and the rest. */
export function takeProducerHeader(headers: readonly Header[]): { producer: string | undefined; rest: Header[]; count: number } {
  const rest: Header[] = [];
  let producer: string | undefined;
  let count = 0;
  for (const header of headers) {
    if (header.key === EDGE_PRODUCER_HEADER) {
      producer = header.value;
      count++;
    } else rest.push(header);
  }
  return { producer, rest, count };
}

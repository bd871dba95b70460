/**
 * The input position a changelog record reflects, carried in a header of every changelog record
 * written while processing an input record. After a wipe and a restore, the position to resume
 * input from can then be derived from what was restored (invariant I5), not kept separately.
 */
import type { Header, RecordMetadata } from "../record";

export const POSITION_HEADER = "edge-streams.position";

export function positionHeader(position: RecordMetadata): Header {
  return { key: POSITION_HEADER, value: JSON.stringify({ topic: position.topic, partition: position.partition, offset: position.offset }) };
}

/** The input position named in a record's headers, if any. */
export function positionFromHeaders(headers: readonly Header[]): RecordMetadata | undefined {
  const header = headers.find((h) => h.key === POSITION_HEADER);
  if (!header) return undefined;
  const parsed: unknown = JSON.parse(header.value);
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const { topic, partition, offset } = parsed as Record<string, unknown>;
  if (typeof topic !== "string" || typeof partition !== "number" || typeof offset !== "number") return undefined;
  return { topic, partition, offset };
}

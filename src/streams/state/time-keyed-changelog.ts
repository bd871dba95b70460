/**
 * The changelog of a time-keyed store (time-keyed-store.ts): one record per entry written or
 * deleted, and what restoring rebuilds from it. Only the data rows (`d`) are logged; each record
 * carries, in the `edge-streams.time-keyed` header, the store's meta row as it was then. The index
 * rows (`i`) are derived from the data rows' keys, and the meta row from the latest header, as the
 * records are applied — by a restore and by a standby alike. (The change-logging store logs the
 * meta row on its own at a commit when no record in the changelog is sure to carry its latest
 * value; compaction keeps that record, or the put that carried it, as its key's latest.)
 *
 * Changelogs written before (every index row, meta row and tombstone as a record of its own) need
 * nothing: their records apply as they are.
 */
import type { Header } from "../record";
import { TIME_WIDTH } from "./key-codec";

export const TIME_KEYED_HEADER = "edge-streams.time-keyed";

/** A store write a changelog record stands for (null deletes). */
export interface RestoredWrite {
  readonly key: string;
  readonly value: string | null;
  readonly timestamp?: number;
}

/**
 * The header of a data row's record: the meta row's text ("" before the first), after the
 * namespace's length and a colon when the store has a namespace.
 */
export function timeKeyedHeader(namespace: string, meta: string | undefined): Header {
  return { key: TIME_KEYED_HEADER, value: namespace === "" ? (meta ?? "") : `${namespace.length}:${meta ?? ""}` };
}

/** The store writes a changelog record stands for: itself, and for a time-keyed data row its index row and meta row. */
export function restoredWrites(key: string, value: string | null, timestamp: number, headers: readonly Header[]): RestoredWrite[] {
  const own: RestoredWrite = { key, value, timestamp };
  const header = headers.find((h) => h.key === TIME_KEYED_HEADER);
  if (header === undefined) return [own];
  const colon = header.value.startsWith("{") ? -1 : header.value.indexOf(":");
  const length = colon < 0 ? 0 : Number(header.value.slice(0, colon));
  const meta = header.value.slice(colon + 1);
  const namespace = key.slice(0, length);
  // `d` + key + time + seq becomes `i` + time + seq + key.
  const times = key.slice(key.length - 2 * TIME_WIDTH);
  const index = `${namespace}i${times}${key.slice(length + 1, key.length - 2 * TIME_WIDTH)}`;
  const writes: RestoredWrite[] = [own, { key: index, value: value === null ? null : "", timestamp }];
  if (meta !== "") writes.push({ key: `${namespace}m`, value: meta, timestamp });
  return writes;
}

/**
 * The processor of `KTable.suppress` (Kafka's KTableSuppressProcessor): a table's updates wait in a
 * change-logged buffer store, one entry per key holding its latest update, and leave it in buffer
 * order once the operator's stream time says they may, or early when an eager buffer is full.
 *
 * - `untilWindowCloses`: an entry waits at its window's close time (end + grace; window start, then
 *   key break ties) until stream time reaches it; a tombstone (a merged-away session, a filtered
 *   row) is held like any update but never emitted — only final results leave.
 * - `untilTimeLimit`: an entry waits at the time of the first update held for its key (later
 *   updates replace the value in place, as Kafka's buffer does) until stream time is `limit` past
 *   it; tombstones are emitted, since earlier results of the key may have been.
 *
 * The buffer is a `TimeKeyedStore`, so every entry and deletion is in its changelog (one record
 * each); its stream time and, for a bounded buffer, its record and byte counts are kept in the
 * store too (the counts logged once per commit), so a restored buffer emits exactly when the old
 * one would have. An emitted update carries as old
 * value the row before the first update held (what downstream last saw), when old values are sent.
 */
import { utf8Length } from "../../log/records";
import type { Header } from "../record";
import { internal } from "../processor";
import type { Serde } from "../serdes";
import { changelogRows } from "../state/changelog-rows";
import type { RawKeyValueStore } from "../state/key-value-store";
import { MAX_TIME } from "../state/key-codec";
import { TimeKeyedStore } from "../state/time-keyed-store";
import { decodeStored } from "../state/typed-store";
import type { AnySupplier } from "../topology/graph";
import type { Window, Windowed } from "../windowed";
import { change, type Change, type OldValues } from "./change";
import { erase, processorOf } from "./processors";
import type { Suppressed } from "./suppressed";

/** A buffered update: its latest value (null: a tombstone), timestamp and headers, and the row before the first update held. */
interface Buffered {
  /** The window's end, for final results (the start is the entry's seq). */
  readonly end?: number;
  readonly timestamp: number;
  readonly headers: readonly Header[];
  readonly value: string | null;
  readonly prior?: string | null;
  /** Its size as Kafka estimates it (what a byte limit counts). */
  readonly size?: number;
}

/** Where the record and byte counts of a bounded buffer are kept (beside the TimeKeyedStore's own rows). */
const COUNTS_KEY = "c";

interface Counts {
  readonly records: number;
  readonly bytes: number;
}

const byteLength = (text: string | null | undefined) => (text == null ? 0 : utf8Length(text));

/**
 * Kafka's estimate of a buffered entry (InMemoryTimeOrderedKeyValueChangeBuffer): the buffer time,
 * the key, the prior, old (once it differs from the prior) and new values, and the record context
 * (timestamp, offset, partition, topic, headers).
 */
function entrySize(key: string, prior: string | null, old: string | null, next: string | null, topic: string, headers: readonly Header[]): number {
  let size = 8 + byteLength(key) + byteLength(prior) + byteLength(old) + byteLength(next);
  size += 8 + 8 + 4 + topic.length;
  for (const header of headers) size += header.key.length + byteLength(header.value);
  return size;
}

export interface SuppressOptions {
  readonly storeName: string;
  readonly suppressed: Suppressed;
  /** For final results: when each window closes. */
  readonly closeTime?: (window: Window) => number;
  readonly oldValues: OldValues;
}

export function suppressProcessor({ storeName, suppressed, closeTime, oldValues }: SuppressOptions): AnySupplier {
  const finalResults = suppressed.mode === "until-window-closes";
  const { maxRecords, maxBytes, whenFull } = suppressed.bufferConfig;
  const bounded = Number.isFinite(maxRecords) || Number.isFinite(maxBytes);
  return erase(
    processorOf<unknown, Change<unknown>, unknown, Change<unknown>>((record, context) => {
      const handle = internal(context).storeHandle(storeName);
      const keySerde: Serde<unknown> = handle.keySerde;
      const valueSerde: Serde<unknown> = handle.valueSerde;
      const buffer = new TimeKeyedStore(handle.raw);
      const counts = bounded ? countsOf(handle.raw, buffer) : undefined;
      if (!bounded && handle.raw.get(COUNTS_KEY) !== undefined) handle.raw.delete(COUNTS_KEY); // stale once unbounded
      const { streamTime } = buffer.advance(record.timestamp);

      // Where the update waits: final results by close time and window, others by first arrival.
      let key: string;
      let time: number;
      let seq = 0;
      let held: Buffered | undefined;
      if (finalResults) {
        const { key: inner, window } = record.key as Windowed<unknown>;
        key = keySerde.serialize(inner);
        time = closeTime!(window);
        seq = window.start;
        const text = buffer.get(key, time, seq);
        held = text === undefined ? undefined : (JSON.parse(text) as Buffered);
      } else {
        key = keySerde.serialize(record.key);
        const [existing] = buffer.fetch(key, 0, MAX_TIME);
        time = existing?.time ?? record.timestamp;
        held = existing === undefined ? undefined : (JSON.parse(existing.value) as Buffered);
      }
      const { newValue, oldValue } = record.value;
      const next = newValue === null ? null : valueSerde.serialize(newValue);
      const old = oldValue === null ? null : valueSerde.serialize(oldValue);
      const prior = held === undefined ? old : (held.prior ?? null);
      const topic = context.recordMetadata()?.topic ?? "";
      // Kafka counts the old value apart from the prior once they are different values.
      const size = entrySize(key, prior, held === undefined ? null : old, next, topic, record.headers) + (finalResults ? 8 : 0);
      const entry: Buffered = {
        ...(finalResults ? { end: (record.key as Windowed<unknown>).window.end } : {}),
        timestamp: record.timestamp,
        headers: record.headers,
        value: next,
        prior,
        size,
      };
      buffer.put(key, time, seq, JSON.stringify(entry));
      let state = counts && { records: counts.records + (held === undefined ? 1 : 0), bytes: counts.bytes + size - (held?.size ?? 0) };

      const emit = (due: { key: string; time: number; seq: number; value: string }) => {
        buffer.delete(due.key, due.time, due.seq);
        const buffered = JSON.parse(due.value) as Buffered;
        if (state) state = { records: state.records - 1, bytes: state.bytes - (buffered.size ?? 0) };
        // Final results drop tombstones: the window was never emitted, or is final already.
        if (buffered.value === null && finalResults) return;
        const value = buffered.value === null ? null : decodeStored(storeName, valueSerde, buffered.value, "value");
        const priorValue = oldValues.sending && buffered.prior != null ? decodeStored(storeName, valueSerde, buffered.prior, "value") : null;
        const decodedKey = decodeStored(storeName, keySerde, due.key, "key");
        context.forward({
          key: finalResults ? { key: decodedKey, window: { start: due.seq, end: buffered.end! } } : decodedKey,
          value: change(value, priorValue),
          timestamp: buffered.timestamp,
          headers: buffered.headers,
        });
      };

      // Due entries leave in buffer order: time, then seq, then key.
      const expiry = streamTime - suppressed.timeLimitMs;
      if (expiry >= 0) for (const due of buffer.before(expiry + 1)) emit(due);
      if (state && (state.records > maxRecords || state.bytes > maxBytes)) {
        if (whenFull === "shut-down") {
          throw new Error(
            `${storeName} buffer exceeded its max capacity. Currently [${state.records}/${maxRecords}] records and [${state.bytes}/${maxBytes}] bytes.`,
          );
        }
        while (state.records > maxRecords || state.bytes > maxBytes) {
          const [oldest] = buffer.before(MAX_TIME, 1);
          if (oldest === undefined) break;
          emit(oldest);
        }
      }
      if (state && (state.records !== counts!.records || state.bytes !== counts!.bytes))
        changelogRows(handle.raw).writeAtCommit(COUNTS_KEY, JSON.stringify(state));
    }),
  );
}

/** A bounded buffer's counts; recounted from its entries when missing (it was unbounded before). */
function countsOf(raw: RawKeyValueStore, buffer: TimeKeyedStore): Counts {
  const text = raw.get(COUNTS_KEY);
  if (text !== undefined) return JSON.parse(text) as Counts;
  let records = 0;
  let bytes = 0;
  for (const entry of buffer.before(MAX_TIME)) {
    records++;
    bytes += (JSON.parse(entry.value) as Buffered).size ?? 0;
  }
  return { records, bytes };
}

/**
 * Records from an at-least-once source (a Cloudflare Queue: docs/connectors.md) carry the id of
 * the message they came from in a header, `SOURCE_ID_HEADER`. A partition appends such a record
 * only if it has not appended one with the same id within its window: the last
 * SOURCE_ID_WINDOW_MS, and at most MAX_SOURCE_IDS ids, whichever is shorter.
 *
 * The ids cost no row of their own: they ride in the appended rows (a header of each record,
 * bytes in its batch's row). The set is in memory, like the producers' state, and rebuilt from
 * the newest rows within the window on first use after the object starts (or after a failed
 * transaction). Rows that retention or compaction removed are not read back: their ids are
 * remembered only while the object that appended them lives.
 */
import { sql } from "../../storage/sql";
import type { Entry } from "../record-batch";
import type { PartitionTransactions } from "./transactions";

/** The header a record from an at-least-once source carries its message's id in. */
export const SOURCE_ID_HEADER = "edge-streams.source-id";
/** How long an appended id is remembered at most (Queues retries within hours: `retry_delay` is at most 12 hours). */
export const SOURCE_ID_WINDOW_MS = 24 * 60 * 60 * 1000;
/** How many ids a partition remembers at most (about 100 bytes of memory each). */
export const MAX_SOURCE_IDS = 50_000;

/** The bounds of a partition's remembered ids (tests make them small). */
export interface SourceIdWindow {
  readonly ms: number;
  readonly ids: number;
}

/** The record's source id: the last `SOURCE_ID_HEADER` among its headers; undefined without one. */
export function sourceIdOf(entry: Entry): string | undefined {
  const headers = entry[3];
  if (!headers) return undefined;
  for (let i = headers.length - 2; i >= 0; i -= 2) if (headers[i] === SOURCE_ID_HEADER) return headers[i + 1];
  return undefined;
}

/** The header as it appears in a stored batch's JSON: rows without it are not parsed when the set is rebuilt. */
const HEADER_IN_JSON = JSON.stringify(SOURCE_ID_HEADER);

export class RecentSourceIds {
  /** Id → when it was appended, oldest first; undefined until rebuilt. */
  private ids: Map<string, number> | undefined;

  constructor(
    private readonly tx: PartitionTransactions,
    private readonly window: SourceIdWindow = { ms: SOURCE_ID_WINDOW_MS, ids: MAX_SOURCE_IDS },
  ) {
    tx.onRollback(() => (this.ids = undefined));
  }

  /** Whether a record with this id was appended within the window. */
  has(id: string, now: number): boolean {
    return this.current(now).has(id);
  }

  /** Ids just appended at `now` (call after the append's transaction succeeded). */
  remember(ids: readonly string[], now: number): void {
    const known = this.current(now);
    for (const id of ids) known.set(id, now);
    this.evict(known, now);
  }

  /** How many ids are remembered now (tests). */
  size(now: number): number {
    return this.current(now).size;
  }

  private current(now: number): Map<string, number> {
    const known = this.ids ?? this.rebuild(now);
    this.ids = known;
    this.evict(known, now);
    return known;
  }

  /** Drops ids from the oldest on: those past the window's time, and those beyond its count. */
  private evict(known: Map<string, number>, now: number): void {
    const since = now - this.window.ms;
    for (const [id, at] of known) {
      if (at >= since && known.size <= this.window.ids) break;
      known.delete(id);
    }
  }

  /**
   * The ids of the newest rows, read newest first until one older than the window or the
   * window's count of ids: a start-up reads the window's rows at most, whatever the partition
   * holds, and parses only those that carry ids.
   */
  private rebuild(now: number): Map<string, number> {
    const since = now - this.window.ms;
    const rows = this.tx.db.cursor<{ append_time: number; records: string | null }>(
      sql`SELECT append_time, CASE WHEN instr(records, ${HEADER_IN_JSON}) > 0 THEN records END AS records
          FROM record_batches ORDER BY base_offset DESC`,
    );
    const newestFirst: [string, number][][] = [];
    let count = 0;
    for (const row of rows) {
      if (row.append_time < since) break;
      if (row.records === null) continue;
      const found: [string, number][] = [];
      for (const entry of JSON.parse(row.records) as Entry[]) {
        const id = sourceIdOf(entry);
        if (id !== undefined) found.push([id, row.append_time]);
      }
      newestFirst.push(found);
      count += found.length;
      if (count >= this.window.ids) break;
    }
    const known = new Map<string, number>();
    for (let i = newestFirst.length - 1; i >= 0; i--) {
      // An id appended again (after it left the window) counts from its latest append.
      for (const [id, at] of newestFirst[i]!) {
        known.delete(id);
        known.set(id, at);
      }
    }
    return known;
  }
}

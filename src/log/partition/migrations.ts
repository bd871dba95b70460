/**
 * The schema of a log partition's SQLite storage, as numbered migrations (see
 * src/storage/migrations.ts): the kept range (`partition_meta`), the stored batches
 * (`record_batches`), the idempotent producers' state, consumer groups' committed offsets, the
 * subscribers woken after appends, the topic's configuration and compaction's index and progress.
 * Shipped migrations never change; a new table or column is a new migration at the end.
 */
import type { Migration } from "../../storage/migrations";
import { sql } from "../../storage/sql";
import { toEntry } from "../record-batch";
import type { Header } from "../types";

export const partitionMigrations: readonly Migration[] = [
  {
    id: 1,
    description: "records, kept range, producers, committed offsets",
    up: (db) =>
      db.script(`
        CREATE TABLE partition_meta (
          only INTEGER PRIMARY KEY CHECK (only = 1),
          topic TEXT NOT NULL, partition INTEGER NOT NULL,
          log_start INTEGER NOT NULL, log_end INTEGER NOT NULL);
        CREATE TABLE records (
          offset INTEGER PRIMARY KEY, key TEXT, value TEXT NOT NULL, headers TEXT,
          timestamp INTEGER NOT NULL, bytes INTEGER NOT NULL);
        CREATE TABLE producers (
          producer_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL, last_seen INTEGER NOT NULL);
        CREATE TABLE producer_batches (
          producer_id TEXT NOT NULL, sequence INTEGER NOT NULL, base_offset INTEGER NOT NULL,
          count INTEGER NOT NULL, digest TEXT NOT NULL, PRIMARY KEY (producer_id, sequence));
        CREATE TABLE committed_offsets (
          group_id TEXT PRIMARY KEY, offset INTEGER NOT NULL, metadata TEXT NOT NULL,
          committed_at INTEGER NOT NULL);
      `),
  },
  {
    id: 2,
    description: "subscribers woken after appends",
    up: (db) => db.script(`CREATE TABLE subscribers (name TEXT PRIMARY KEY, since INTEGER NOT NULL);`),
  },
  {
    id: 3,
    description: "the epoch of the last committer of each group, for fencing",
    up: (db) => db.script(`ALTER TABLE committed_offsets ADD COLUMN epoch INTEGER;`),
  },
  {
    id: 4,
    description: "one row per appended batch instead of one per record; retries compared with the stored records",
    up: (db) => {
      db.script(`
        CREATE TABLE record_batches (
          base_offset INTEGER PRIMARY KEY, count INTEGER NOT NULL, bytes INTEGER NOT NULL,
          max_timestamp INTEGER NOT NULL, append_time INTEGER NOT NULL,
          sizes BLOB NOT NULL, records TEXT NOT NULL);
        ALTER TABLE producer_batches DROP COLUMN digest;
      `);
      // Records kept so far become batches of one (their appends' boundaries were not kept).
      for (let from = 0; ; ) {
        const rows = db.all<{ offset: number; key: string | null; value: string; headers: string | null; timestamp: number; bytes: number }>(
          sql`SELECT offset, key, value, headers, timestamp, bytes FROM records WHERE offset >= ${from} ORDER BY offset LIMIT 256`,
        );
        for (const row of rows) {
          const headers = row.headers ? (JSON.parse(row.headers) as Header[]) : [];
          const entry = toEntry({ key: row.key, value: row.value, headers, timestamp: row.timestamp });
          db.run(sql`INSERT INTO record_batches (base_offset, count, bytes, max_timestamp, append_time, sizes, records)
                     VALUES (${row.offset}, 1, ${row.bytes}, ${row.timestamp}, ${row.timestamp}, ${new Uint32Array([row.bytes]).buffer},
                             ${JSON.stringify([entry])})`);
        }
        if (rows.length < 256) break;
        from = rows[rows.length - 1]!.offset + 1;
      }
      db.script(`DROP TABLE records;`);
    },
  },
  {
    id: 5,
    description: "rows that compaction thinned (span, offsets), the topic's configuration, compaction's index and progress",
    up: (db) =>
      db.script(`
        ALTER TABLE record_batches ADD COLUMN span INTEGER;
        UPDATE record_batches SET span = count;
        ALTER TABLE record_batches ADD COLUMN offsets BLOB;
        ALTER TABLE partition_meta ADD COLUMN config TEXT;
        CREATE TABLE compaction (
          only INTEGER PRIMARY KEY CHECK (only = 1),
          indexed_to INTEGER NOT NULL, sweep_cursor INTEGER, sweep_to INTEGER NOT NULL,
          tombstones_due INTEGER, last_retention INTEGER NOT NULL, clean_records INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE latest_keys (key TEXT PRIMARY KEY, offset INTEGER NOT NULL, tombstone INTEGER NOT NULL) WITHOUT ROWID;
      `),
  },
  {
    id: 6,
    description:
      "each row carries its producer (id, epoch, base sequence); the producers' state as a snapshot (a row per producer, its last batches within) covering offsets below `producers_at`; the log end derived from the last row",
    up: (db) => {
      db.script(`
        ALTER TABLE record_batches ADD COLUMN producer_id TEXT;
        ALTER TABLE record_batches ADD COLUMN producer_epoch INTEGER;
        ALTER TABLE record_batches ADD COLUMN base_sequence INTEGER;
        ALTER TABLE partition_meta ADD COLUMN producers_at INTEGER NOT NULL DEFAULT 0;
        UPDATE partition_meta SET producers_at = log_end;
        CREATE TABLE producer_snapshot (
          producer_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL, last_seen INTEGER NOT NULL,
          last_base INTEGER NOT NULL, batches TEXT NOT NULL) WITHOUT ROWID;
      `);
      // The producers and their remembered batches so far make the first snapshot, at the log end.
      const batches = new Map<string, [number, number, number][]>();
      for (const row of db.all<{ producer_id: string; sequence: number; base_offset: number; count: number }>(
        sql`SELECT producer_id, sequence, base_offset, count FROM producer_batches ORDER BY producer_id, sequence`,
      )) {
        const list = batches.get(row.producer_id) ?? [];
        list.push([row.sequence, row.base_offset, row.count]);
        batches.set(row.producer_id, list);
      }
      for (const row of db.all<{ producer_id: string; epoch: number; last_seen: number }>(sql`SELECT producer_id, epoch, last_seen FROM producers`)) {
        const list = batches.get(row.producer_id) ?? [];
        const lastBase = list.reduce((last, [, base]) => Math.max(last, base), -1);
        db.run(sql`INSERT INTO producer_snapshot (producer_id, epoch, last_seen, last_base, batches)
                   VALUES (${row.producer_id}, ${row.epoch}, ${row.last_seen}, ${lastBase}, ${JSON.stringify(list)})`);
      }
      db.script(`
        DROP TABLE producer_batches;
        DROP TABLE producers;
        ALTER TABLE producer_snapshot RENAME TO producers;
      `);
    },
  },
  {
    id: 7,
    description:
      "tiered storage: the segments moved to R2 (a row per segment, the records' offsets, count, size and times) and the objects whose segment went, still to delete",
    up: (db) =>
      db.script(`
        CREATE TABLE remote_segments (
          base_offset INTEGER PRIMARY KEY, last_offset INTEGER NOT NULL, records INTEGER NOT NULL, bytes INTEGER NOT NULL,
          max_timestamp INTEGER NOT NULL, max_append_time INTEGER NOT NULL, object_key TEXT NOT NULL);
        CREATE TABLE remote_deletions (object_key TEXT PRIMARY KEY) WITHOUT ROWID;
      `),
  },
];

/**
 * The storage of a task instance (one Durable Object per task and placement). Everything a commit
 * touches lives here, so one storage transaction covers state, checkpoint, input positions and
 * outgoing records (I2). Since migration 8 everything but the stores' rows is the task's book, one
 * row (task-book.ts): the tables migrations 1–6 made for it are carried into it and dropped.
 */
import type { Migration } from "../storage/migrations";
import { movePagesFromKv } from "./page-rows";
import { carryTablesIntoBook } from "./task-book-row";

export const taskMigrations: Migration[] = [
  {
    id: 1,
    description: "task identity, stores, checkpoints, input positions, outbox, producer sequences",
    up: (db) =>
      db.script(`
        CREATE TABLE task_meta (
          only INTEGER PRIMARY KEY CHECK (only = 1),
          task_id TEXT NOT NULL, placement TEXT NOT NULL,
          role TEXT NOT NULL, state TEXT NOT NULL,
          epoch INTEGER NOT NULL, incarnation INTEGER NOT NULL,
          next_commit INTEGER NOT NULL DEFAULT 1,
          failure TEXT);
        -- Every key-value store of the task, by store name. Keys sort as UTF-8 bytes (BINARY).
        CREATE TABLE kv (
          store TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
          PRIMARY KEY (store, key)) WITHOUT ROWID;
        -- Per changelog partition: the offset below which the store reflects the changelog.
        CREATE TABLE checkpoints (
          topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL,
          PRIMARY KEY (topic, partition));
        -- Per input partition: the next offset to process.
        CREATE TABLE input_positions (
          topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL,
          PRIMARY KEY (topic, partition));
        -- Records committed locally and not yet acknowledged by the log, one row per batch.
        -- phase 0 = changelog, 1 = output: a commit's changelog is sent before its output.
        CREATE TABLE outbox (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          commit_id INTEGER NOT NULL, phase INTEGER NOT NULL,
          topic TEXT NOT NULL, partition INTEGER NOT NULL,
          sequence INTEGER NOT NULL, records TEXT NOT NULL);
        -- The next producer sequence per partition, for the current producer epoch.
        CREATE TABLE producer_sequences (
          topic TEXT NOT NULL, partition INTEGER NOT NULL, next INTEGER NOT NULL,
          PRIMARY KEY (topic, partition));
      `),
  },
  {
    id: 2,
    description: "an uncaught error asked to shut the application down (until the coordinator is told)",
    up: (db) => db.script(`ALTER TABLE task_meta ADD COLUMN shutdown_requested INTEGER NOT NULL DEFAULT 0;`),
  },
  {
    id: 3,
    description: "per input partition, the offset known to be committed to the application's consumer group",
    up: (db) => db.script(`ALTER TABLE input_positions ADD COLUMN committed INTEGER;`),
  },
  {
    id: 4,
    description: "value timestamps in stores (Kafka's timestamped stores); partition time with each input position",
    // -1: not known. A value written before has no timestamp (Kafka reads -1 for values of a store
    // upgraded to timestamps too); a partition without a recorded time starts as Kafka's does.
    up: (db) =>
      db.script(`
        ALTER TABLE kv ADD COLUMN timestamp INTEGER NOT NULL DEFAULT -1;
        ALTER TABLE input_positions ADD COLUMN partition_time INTEGER NOT NULL DEFAULT -1;
      `),
  },
  {
    id: 5,
    description: "per changelog, the records applied by the instance's latest restoration",
    up: (db) => db.script(`ALTER TABLE checkpoints ADD COLUMN replayed INTEGER NOT NULL DEFAULT 0;`),
  },
  {
    id: 6,
    description:
      "where a failure stopped processing, records an operator asked to skip, the last input reset, and records processed (per input partition, and by earlier incarnations)",
    // The processed count lives in the input position rows every commit writes anyway (no row
    // written for it alone); a wipe, which deletes those rows, adds them to processed_before.
    up: (db) =>
      db.script(`
        ALTER TABLE task_meta ADD COLUMN failed_topic TEXT;
        ALTER TABLE task_meta ADD COLUMN failed_partition INTEGER;
        ALTER TABLE task_meta ADD COLUMN failed_offset INTEGER;
        ALTER TABLE task_meta ADD COLUMN skips TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE task_meta ADD COLUMN last_reset TEXT;
        ALTER TABLE task_meta ADD COLUMN processed_before INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE input_positions ADD COLUMN processed INTEGER NOT NULL DEFAULT 0;
      `),
  },
  {
    id: 7,
    description: "stores as pages of sorted keys, one row per page (kv's rows move there, in key order)",
    // A commit rewrites each page it touched once: rows written per commit = pages, not keys (the
    // row is billed the same whatever its size). `page` is an id; the order of pages is their first
    // keys' (`first_key`, JSON), compared in memory (src/task/paged-store.ts).
    up: (db) => {
      db.script(`
        CREATE TABLE kv_pages (
          store TEXT NOT NULL, page INTEGER NOT NULL, first_key TEXT NOT NULL, entries TEXT NOT NULL,
          PRIMARY KEY (store, page)) WITHOUT ROWID;
      `);
      movePagesFromKv(db);
      db.script("DROP TABLE kv;");
    },
  },
  {
    id: 8,
    description:
      "the task's book: meta, checkpoints, input positions, producer sequences and outbox batches in one row (task_book), outbox batches too big for it in rows of their own (outbox_spill)",
    up: carryTablesIntoBook,
  },
];

/**
 * The coordinator's schema: its numbered migrations (src/storage/migrations.ts), applied in one
 * transaction when the object starts. Migration 4 moves the single values the coordinator kept in
 * its KV storage into the `settings` row, carrying over what an object deployed before it holds.
 */
import type { Migration } from "../storage/migrations";
import { sql } from "../storage/sql";

/** What migration 4 reads and deletes of the object's KV storage (`ctx.storage.kv`). */
export interface LegacyKv {
  get<T = unknown>(key: string): T | undefined;
  delete(key: string): boolean;
}

/** The KV keys before migration 4, by the `settings` column that holds their value now. */
export const LEGACY_KV_KEYS = {
  generation: "generation",
  session_key: "session-key",
  failing_until: "failing-until",
  resuming: "resuming",
  next_sweep_at: "next-sweep-at",
  sweep_cursor: "sweep-cursor",
} as const;

export function coordinatorMigrations(kv: LegacyKv): Migration[] {
  return [
    {
      id: 1,
      description: "instances and epochs",
      up: (db) =>
        db.script(`
          CREATE TABLE epochs (only INTEGER PRIMARY KEY CHECK (only = 1), last INTEGER NOT NULL);
          CREATE TABLE instances (
            task_id TEXT NOT NULL, placement TEXT NOT NULL, role TEXT NOT NULL,
            epoch INTEGER NOT NULL, acknowledged INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (task_id, placement));
        `),
    },
    {
      id: 2,
      description: "application shutdown",
      up: (db) =>
        db.script(`
          CREATE TABLE shutdown (
            only INTEGER PRIMARY KEY CHECK (only = 1),
            task_id TEXT NOT NULL, placement TEXT NOT NULL, reason TEXT NOT NULL, at INTEGER NOT NULL);
        `),
    },
    {
      id: 3,
      description: "the last input reset, and per task what it did (null until the task applied it)",
      up: (db) =>
        db.script(`
          CREATE TABLE input_reset (
            only INTEGER PRIMARY KEY CHECK (only = 1),
            id TEXT NOT NULL, request TEXT NOT NULL, started_at INTEGER NOT NULL, finished_at INTEGER);
          CREATE TABLE input_reset_tasks (task_id TEXT PRIMARY KEY, applied TEXT);
        `),
    },
    {
      id: 4,
      description: "single values move from KV into one settings row, carried over; the KV keys deleted",
      // Runs in the migration's transaction, which covers the KV storage too (the same SQLite
      // database): a crash leaves either the KV keys and version 3, or the row and version 4.
      up: (db) => {
        db.script(`
          CREATE TABLE settings (
            only INTEGER PRIMARY KEY CHECK (only = 1),
            generation TEXT,
            session_key TEXT,
            failing_until INTEGER NOT NULL DEFAULT 0,
            resuming INTEGER NOT NULL DEFAULT 0,
            next_sweep_at INTEGER,
            sweep_cursor INTEGER NOT NULL DEFAULT 0);
        `);
        const text = (key: string) => {
          const value = kv.get(key);
          return typeof value === "string" ? value : null;
        };
        const number = (key: string) => {
          const value = kv.get(key);
          return typeof value === "number" && Number.isFinite(value) ? value : null;
        };
        const keys = LEGACY_KV_KEYS;
        db.run(sql`INSERT INTO settings (only, generation, session_key, failing_until, resuming, next_sweep_at, sweep_cursor)
                   VALUES (1, ${text(keys.generation)}, ${text(keys.session_key)}, ${number(keys.failing_until) ?? 0},
                     ${kv.get(keys.resuming) ? 1 : 0}, ${number(keys.next_sweep_at)}, ${number(keys.sweep_cursor) ?? 0})`);
        for (const key of Object.values(keys)) kv.delete(key);
      },
    },
  ];
}

/**
 * Numbered, ordered schema migrations for a Durable Object's SQLite storage. The id of the last
 * applied migration is stored once; every table the framework creates evolves through here.
 */
import type { Sql } from "./sql";
import { sql } from "./sql";

export interface Migration {
  /** Strictly increasing, starting at 1. Never renumber a migration that shipped. */
  readonly id: number;
  readonly description: string;
  readonly up: (db: Sql) => void;
}

/** Applies the migrations not yet applied, all in the caller's transaction. Returns the new id. */
export function migrate(db: Sql, migrations: readonly Migration[]): number {
  db.script("CREATE TABLE IF NOT EXISTS _schema (only INTEGER PRIMARY KEY CHECK (only = 1), version INTEGER NOT NULL)");
  const row = db.one<{ version: number }>(sql`SELECT version FROM _schema WHERE only = 1`);
  let version = row?.version ?? 0;
  for (const migration of [...migrations].sort((a, b) => a.id - b.id)) {
    if (migration.id <= version) continue;
    if (migration.id !== version + 1) {
      throw new Error(`migration ${migration.id} follows ${version}: migrations must be consecutive`);
    }
    migration.up(db);
    version = migration.id;
  }
  // Written only when it moved: every start of every object comes through here, and a row
  // rewritten with what it holds is still a row written (billed).
  if (!row || version !== row.version) {
    db.run(sql`INSERT INTO _schema (only, version) VALUES (1, ${version})
               ON CONFLICT (only) DO UPDATE SET version = excluded.version`);
  }
  return version;
}

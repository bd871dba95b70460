/**
 * Who wants to hear about appends to this partition (task instances that read it, restore workers
 * keeping standbys on it, subscription hubs holding sockets on it), so that an
 * idle task sleeps without polling and is woken when input arrives.
 */
import { Sql, sql, type StorageLike } from "../../storage/sql";

export class Subscribers {
  private readonly db: Sql;
  private cached: string[] | undefined;

  constructor(storage: StorageLike) {
    this.db = new Sql(storage.sql);
  }

  add(name: string): void {
    this.db.run(sql`INSERT INTO subscribers (name, since) VALUES (${name}, ${Date.now()}) ON CONFLICT (name) DO NOTHING`);
    this.cached = undefined;
  }

  remove(name: string): void {
    this.db.run(sql`DELETE FROM subscribers WHERE name = ${name}`);
    this.cached = undefined;
  }

  list(): string[] {
    this.cached ??= this.db.all<{ name: string }>(sql`SELECT name FROM subscribers ORDER BY name`).map((r) => r.name);
    return this.cached;
  }
}

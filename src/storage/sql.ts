/**
 * A tagged template for Durable Object SQLite: `${value}` becomes a bound parameter, so SQL reads
 * like SQL and cannot be injected. Statements are kept to one row's worth of parameters; the
 * platform allows at most 100 bound parameters per statement.
 */

/** What SQLite takes and gives back (the Durable Object's `SqlStorageValue`). */
export type SqlValue = string | number | null | ArrayBuffer;
export type Row = Record<string, SqlValue>;

/** A prepared query: the text with `?` placeholders and its bound values. */
export interface SqlQuery {
  readonly text: string;
  readonly values: SqlValue[];
}

export function sql(strings: TemplateStringsArray, ...values: SqlValue[]): SqlQuery {
  return { text: strings.join("?"), values };
}

/**
 * What the core uses of a Durable Object's `SqlStorage`, stated here so that the core needs no
 * Workers types (tsconfig.core.json): `ctx.storage.sql` satisfies it as it is.
 */
export interface SqlDatabase {
  exec<T extends Row>(query: string, ...bindings: SqlValue[]): SqlCursor<T>;
}

/** The rows of one statement, read lazily or all at once. */
export interface SqlCursor<T> extends Iterable<T> {
  toArray(): T[];
}

/**
 * What every store of the framework needs of a Durable Object's storage (task, log partition,
 * consumer group, coordinator, restore worker): its SQLite and synchronous transactions.
 * `ctx.storage` satisfies it.
 */
export interface StorageLike {
  readonly sql: SqlDatabase;
  transactionSync<T>(fn: () => T): T;
}

/** Thin, typed access to one object's SQLite storage. */
export class Sql {
  constructor(private readonly storage: SqlDatabase) {}

  /** Runs a statement and returns every row (read fully: cursors must not outlive an await). */
  all<T extends Row = Row>(query: SqlQuery): T[] {
    return this.storage.exec<T>(query.text, ...query.values).toArray();
  }

  /** The first row, or undefined. */
  one<T extends Row = Row>(query: SqlQuery): T | undefined {
    const cursor = this.storage.exec<T>(query.text, ...query.values);
    for (const row of cursor) return row;
    return undefined;
  }

  /** A lazy cursor, for reads bounded while iterating. Finish with it before any await. */
  cursor<T extends Row = Row>(query: SqlQuery): Iterable<T> {
    return this.storage.exec<T>(query.text, ...query.values);
  }

  run(query: SqlQuery): void {
    this.storage.exec(query.text, ...query.values);
  }

  /** Executes a script of statements without parameters (schema only). */
  script(text: string): void {
    this.storage.exec(text);
  }
}

/**
 * The coordinator's single values, one row of its SQLite storage (migration 4 of
 * src/coordinator/schema.ts): the generation naming its storage, the key signing browser
 * sessions, an injected outage, whether a lifted shutdown is still being pushed, and where the
 * sweep stands. Read from storage each time (a row, as the KV reads they replace), so a write made
 * in a transaction that fails leaves nothing behind in memory.
 */
import { newSessionKey } from "./session-key";
import { type Sql, sql } from "../storage/sql";

type Column = "generation" | "session_key" | "failing_until" | "resuming" | "next_sweep_at" | "sweep_cursor";

export class CoordinatorSettings {
  constructor(private readonly db: Sql) {}

  /** Names this coordinator's storage, for caches of its versioned assignment: made on first use. */
  generation(): string {
    const stored = this.read<string>("generation");
    if (stored !== null) return stored;
    const generation = crypto.randomUUID();
    this.db.run(sql`UPDATE settings SET generation = ${generation} WHERE only = 1`);
    return generation;
  }

  /** The key signing browser sessions (./session-key.ts), made on first use. */
  sessionKey(): string {
    // No await between the read and the write: two first calls cannot make two keys.
    return this.read<string>("session_key") ?? this.rotateSessionKey();
  }

  /** A new session key: every session signed with the old one ends. */
  rotateSessionKey(): string {
    const key = newSessionKey();
    this.db.run(sql`UPDATE settings SET session_key = ${key} WHERE only = 1`);
    return key;
  }

  /** Until when an injected outage lasts (epoch ms; 0: none). */
  failingUntil(): number {
    return this.read<number>("failing_until") ?? 0;
  }

  setFailingUntil(at: number): void {
    this.db.run(sql`UPDATE settings SET failing_until = ${at} WHERE only = 1`);
  }

  /** Set while the actives' assignments are pushed again after the shutdown was lifted (they carry `resume`). */
  resuming(): boolean {
    return this.read<number>("resuming") === 1;
  }

  setResuming(on: boolean): void {
    this.db.run(sql`UPDATE settings SET resuming = ${on ? 1 : 0} WHERE only = 1`);
  }

  /** When the next sweep is due (epoch ms); undefined before the first one is scheduled. */
  nextSweepAt(): number | undefined {
    return this.read<number>("next_sweep_at") ?? undefined;
  }

  setNextSweepAt(at: number): void {
    this.db.run(sql`UPDATE settings SET next_sweep_at = ${at} WHERE only = 1`);
  }

  /** Where the sweep under way stands: the index of the next instance to check. */
  sweepCursor(): number {
    return this.read<number>("sweep_cursor") ?? 0;
  }

  setSweepCursor(index: number): void {
    this.db.run(sql`UPDATE settings SET sweep_cursor = ${index} WHERE only = 1`);
  }

  private read<T extends string | number>(column: Column): T | null {
    // The column is one of the fixed names above, never input.
    const row = this.db.one<Record<string, T | null>>({ text: `SELECT ${column} AS value FROM settings WHERE only = 1`, values: [] });
    return row?.value ?? null;
  }
}

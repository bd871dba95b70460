/**
 * The outbox: records a task committed locally and the log has not yet acknowledged, one row per
 * batch (a commit's records for one partition). Each batch gets its producer sequence when it is
 * written, in the same transaction as the state it describes, so a resend after a crash is the
 * same batch with the same sequence and the log answers it as a retry (exactly once).
 */
import { Sql, sql } from "../../src/storage/sql";
import type { ProducerRecord, TopicPartition } from "../../src/log/types";

export const CHANGELOG_PHASE = 0;
export const OUTPUT_PHASE = 1;

export interface OutboxBatch extends TopicPartition {
  readonly id: number;
  readonly commitId: number;
  /** `CHANGELOG_PHASE` or `OUTPUT_PHASE`: a commit's changelog batches are sent first. */
  readonly phase: number;
  readonly sequence: number;
  readonly records: ProducerRecord[];
}

type BatchRow = { id: number; commit_id: number; phase: number; topic: string; partition: number; sequence: number; records: string };

export class Outbox {
  /** PROTOTYPE (`memory`): the batches this instance wrote, by row id, so flush needs no re-read. */
  private readonly written = new Map<number, OutboxBatch>();

  constructor(
    private readonly db: Sql,
    private readonly memory = false,
  ) {}

  /** PROTOTYPE: forgets the in-memory copies (the transaction that wrote them rolled back). */
  forget(): void {
    this.written.clear();
  }

  /** Adds a batch with the partition's next producer sequence. Call inside the commit's transaction. */
  add(commitId: number, phase: number, tp: TopicPartition, records: readonly ProducerRecord[]): void {
    const next = this.db.one<{ next: number }>(sql`SELECT next FROM producer_sequences WHERE topic = ${tp.topic} AND partition = ${tp.partition}`)?.next ?? 0;
    this.db.run(sql`INSERT INTO producer_sequences (topic, partition, next) VALUES (${tp.topic}, ${tp.partition}, ${next + 1})
                    ON CONFLICT (topic, partition) DO UPDATE SET next = excluded.next`);
    const text = JSON.stringify(records);
    if (!this.memory) {
      this.db.run(sql`INSERT INTO outbox (commit_id, phase, topic, partition, sequence, records)
                      VALUES (${commitId}, ${phase}, ${tp.topic}, ${tp.partition}, ${next}, ${text})`);
      return;
    }
    const row = this.db.one<{ id: number }>(sql`INSERT INTO outbox (commit_id, phase, topic, partition, sequence, records)
                    VALUES (${commitId}, ${phase}, ${tp.topic}, ${tp.partition}, ${next}, ${text}) RETURNING id`)!;
    this.written.set(row.id, { id: row.id, commitId, phase, topic: tp.topic, partition: tp.partition, sequence: next, records: [...records] });
  }

  /** The oldest commit's batches of its earliest unsent phase: the next group to send together. */
  nextGroup(): OutboxBatch[] {
    const head = this.db.one<{ commit_id: number; phase: number }>(sql`SELECT commit_id, phase FROM outbox ORDER BY commit_id, phase LIMIT 1`);
    if (!head) return [];
    if (this.memory) {
      const ids = this.db.all<{ id: number; sequence: number }>(
        sql`SELECT id, sequence FROM outbox WHERE commit_id = ${head.commit_id} AND phase = ${head.phase} ORDER BY id`,
      );
      const batches = ids.map((r) => this.written.get(r.id));
      if (batches.every((b, i) => b && b.commitId === head.commit_id && b.phase === head.phase && b.sequence === ids[i]!.sequence)) {
        return batches as OutboxBatch[];
      }
    }
    return this.db
      .all<BatchRow>(
        sql`SELECT id, commit_id, phase, topic, partition, sequence, records FROM outbox
            WHERE commit_id = ${head.commit_id} AND phase = ${head.phase} ORDER BY id`,
      )
      .map((row) => ({
        id: row.id,
        commitId: row.commit_id,
        phase: row.phase,
        topic: row.topic,
        partition: row.partition,
        sequence: row.sequence,
        records: JSON.parse(row.records) as ProducerRecord[],
      }));
  }

  remove(id: number): void {
    this.written.delete(id);
    this.db.run(sql`DELETE FROM outbox WHERE id = ${id}`);
  }

  isEmpty(): boolean {
    return !this.db.one(sql`SELECT 1 AS one FROM outbox LIMIT 1`);
  }

  pendingBatches(): number {
    return this.db.one<{ n: number }>(sql`SELECT COUNT(*) AS n FROM outbox`)?.n ?? 0;
  }

  /** Drops every unsent batch and restarts sequences: only with a new producer epoch (a wipe or a new assignment). */
  clear(): void {
    this.written.clear();
    this.db.run(sql`DELETE FROM outbox`);
    this.db.run(sql`DELETE FROM producer_sequences`);
  }
}

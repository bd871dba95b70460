/**
 * A consumer group's own state in its Durable Object's SQLite storage: the instances (with their
 * subscriptions, consumer settings and when they were last heard from) and the consumed-but-not-
 * yet-committed position of each partition an instance has read. Committed offsets are not here:
 * they live in the log (`Log.commitOffset`), which is their one owner.
 */
import type { AutoOffsetReset } from "../kafka-rest/dialect";
import type { TopicPartition } from "../log/types";
import { migrate, type Migration } from "../storage/migrations";
import { Sql, sql, type StorageLike } from "../storage/sql";

const migrations: Migration[] = [
  {
    id: 1,
    description: "group members, consumed positions, the directory of groups",
    up: (db) =>
      db.script(`
        CREATE TABLE members (
          instance TEXT PRIMARY KEY, topics TEXT NOT NULL, auto_commit INTEGER NOT NULL,
          auto_commit_interval INTEGER NOT NULL, offset_reset TEXT NOT NULL,
          last_seen INTEGER NOT NULL, last_commit INTEGER NOT NULL);
        CREATE TABLE positions (
          topic TEXT NOT NULL, partition INTEGER NOT NULL, owner TEXT NOT NULL,
          position INTEGER NOT NULL, uncommitted INTEGER NOT NULL,
          PRIMARY KEY (topic, partition));
        CREATE TABLE directory (group_id TEXT PRIMARY KEY);
      `),
  },
];

export interface Member {
  readonly instance: string;
  readonly topics: readonly string[];
  readonly autoCommit: boolean;
  readonly autoCommitInterval: number;
  readonly offsetReset: AutoOffsetReset;
  readonly lastSeen: number;
  readonly lastCommit: number;
}

export interface Position extends TopicPartition {
  readonly owner: string;
  readonly position: number;
  /** True while the position is ahead of what was last committed for it. */
  readonly uncommitted: boolean;
}

type MemberRow = {
  instance: string;
  topics: string;
  auto_commit: number;
  auto_commit_interval: number;
  offset_reset: string;
  last_seen: number;
  last_commit: number;
};
type PositionRow = { topic: string; partition: number; owner: string; position: number; uncommitted: number };

export class GroupStore {
  private readonly db: Sql;

  constructor(private readonly storage: StorageLike) {
    this.db = new Sql(storage.sql);
    storage.transactionSync(() => migrate(this.db, migrations));
  }

  transaction<T>(fn: () => T): T {
    return this.storage.transactionSync(fn);
  }

  members(): Member[] {
    return this.db.all<MemberRow>(sql`SELECT * FROM members ORDER BY instance`).map(toMember);
  }

  member(instance: string): Member | undefined {
    const row = this.db.one<MemberRow>(sql`SELECT * FROM members WHERE instance = ${instance}`);
    return row ? toMember(row) : undefined;
  }

  putMember(m: Member): void {
    this.db.run(sql`INSERT INTO members (instance, topics, auto_commit, auto_commit_interval, offset_reset, last_seen, last_commit)
                    VALUES (${m.instance}, ${JSON.stringify(m.topics)}, ${m.autoCommit ? 1 : 0}, ${m.autoCommitInterval},
                            ${m.offsetReset}, ${m.lastSeen}, ${m.lastCommit})
                    ON CONFLICT (instance) DO UPDATE SET topics = excluded.topics, auto_commit = excluded.auto_commit,
                      auto_commit_interval = excluded.auto_commit_interval, offset_reset = excluded.offset_reset,
                      last_seen = excluded.last_seen, last_commit = excluded.last_commit`);
  }

  /** Removes members last seen before `cutoff`; returns their names. */
  expireMembers(cutoff: number): string[] {
    const expired = this.db.all<{ instance: string }>(sql`SELECT instance FROM members WHERE last_seen < ${cutoff}`).map((r) => r.instance);
    for (const instance of expired) this.removeMember(instance);
    return expired;
  }

  /** Forgets a member and the positions it held (uncommitted progress is given up, as in Kafka). */
  removeMember(instance: string): void {
    this.db.run(sql`DELETE FROM members WHERE instance = ${instance}`);
    this.db.run(sql`DELETE FROM positions WHERE owner = ${instance}`);
  }

  position(tp: TopicPartition): Position | undefined {
    const row = this.db.one<PositionRow>(sql`SELECT * FROM positions WHERE topic = ${tp.topic} AND partition = ${tp.partition}`);
    return row ? toPosition(row) : undefined;
  }

  ownedPositions(owner: string): Position[] {
    return this.db.all<PositionRow>(sql`SELECT * FROM positions WHERE owner = ${owner} ORDER BY topic, partition`).map(toPosition);
  }

  putPosition(p: Position): void {
    this.db.run(sql`INSERT INTO positions (topic, partition, owner, position, uncommitted)
                    VALUES (${p.topic}, ${p.partition}, ${p.owner}, ${p.position}, ${p.uncommitted ? 1 : 0})
                    ON CONFLICT (topic, partition) DO UPDATE SET owner = excluded.owner, position = excluded.position,
                      uncommitted = excluded.uncommitted`);
  }

  /** Marks a partition's position committed if it still is at `offset` (it may have moved on). */
  markCommitted(tp: TopicPartition, offset: number): void {
    this.db.run(sql`UPDATE positions SET uncommitted = 0
                    WHERE topic = ${tp.topic} AND partition = ${tp.partition} AND position = ${offset}`);
  }

  // ---- the directory (only in the object that lists groups) ----

  addGroup(group: string): void {
    this.db.run(sql`INSERT INTO directory (group_id) VALUES (${group}) ON CONFLICT (group_id) DO NOTHING`);
  }

  removeGroup(group: string): void {
    this.db.run(sql`DELETE FROM directory WHERE group_id = ${group}`);
  }

  groups(): string[] {
    return this.db.all<{ group_id: string }>(sql`SELECT group_id FROM directory ORDER BY group_id`).map((r) => r.group_id);
  }
}

function toMember(row: MemberRow): Member {
  return {
    instance: row.instance,
    topics: JSON.parse(row.topics) as string[],
    autoCommit: row.auto_commit === 1,
    autoCommitInterval: row.auto_commit_interval,
    offsetReset: row.offset_reset as AutoOffsetReset,
    lastSeen: row.last_seen,
    lastCommit: row.last_commit,
  };
}

function toPosition(row: PositionRow): Position {
  return { topic: row.topic, partition: row.partition, owner: row.owner, position: row.position, uncommitted: row.uncommitted === 1 };
}

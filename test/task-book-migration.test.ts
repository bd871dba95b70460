/**
 * Migration 8 of a task instance (src/task/schema.ts, task-book-row.ts): an instance deployed
 * before it kept its meta, checkpoints, input positions, producer sequences and outbox in tables
 * of their own. Woken after the upgrade, it carries all of it into its book, and sends what its
 * outbox held with the ids and sequences it had.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { migrate } from "../src/storage/migrations";
import { Sql } from "../src/storage/sql";
import { Outbox } from "../src/task/outbox";
import { taskMigrations } from "../src/task/schema";
import { TaskStorage } from "../src/task/task-storage";

describe("a task instance deployed before its book", () => {
  it("keeps its meta, checkpoints, positions, sequences and outbox, and the old tables are gone", async () => {
    await runInDurableObject(env.TASK_OBJECT.getByName("book-migration@a"), (_object, state) => {
      const sql = state.storage.sql;
      // The storage as migration 6 left it.
      state.storage.transactionSync(() => {
        for (const { name } of sql
          .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
          .toArray())
          sql.exec(`DROP TABLE ${name}`);
        migrate(
          new Sql(sql),
          taskMigrations.filter((m) => m.id <= 6),
        );
        sql.exec(`INSERT INTO task_meta (only, task_id, placement, role, state, epoch, incarnation, next_commit, failure, skips, processed_before)
                  VALUES (1, '0_0', 'a', 'active', 'RUNNING', 4, 2, 9, NULL, '[{"topic":"in","partition":0,"offset":12}]', 3)`);
        sql.exec("INSERT INTO checkpoints (topic, partition, offset, replayed) VALUES ('app-changelog', 0, 17, 5)");
        sql.exec("INSERT INTO input_positions (topic, partition, offset, committed, partition_time, processed) VALUES ('in', 0, 11, 7, 1000, 6)");
        sql.exec("INSERT INTO producer_sequences (topic, partition, next) VALUES ('out', 0, 3), ('app-changelog', 0, 2)");
        sql.exec(`INSERT INTO outbox (commit_id, phase, topic, partition, sequence, records) VALUES
                  (8, 0, 'app-changelog', 0, 1, '[["k","v1",5]]'),
                  (8, 1, 'out', 0, 2, '[{"key":"k","value":"t1","timestamp":5}]')`);
        // An outbox that had held more: ids are never taken again.
        sql.exec("UPDATE sqlite_sequence SET seq = 40 WHERE name = 'outbox'");
        sql.exec("UPDATE outbox SET id = id + 30");
      });

      const storage = new TaskStorage(state.storage);
      expect(sql.exec<{ version: number }>("SELECT version FROM _schema").one().version).toBe(8);
      expect(storage.meta()).toMatchObject({ taskId: "0_0", epoch: 4, incarnation: 2, nextCommit: 9, failure: null, processedBefore: 3 });
      expect(storage.meta()?.skips).toEqual([{ topic: "in", partition: 0, offset: 12 }]);
      expect([...storage.checkpoints()]).toEqual([["app-changelog/0", 17]]);
      expect([...storage.replayed()]).toEqual([["app-changelog/0", 5]]);
      expect(storage.positions()).toEqual({ "in/0": 11 });
      expect(storage.committedPositions()).toEqual({ "in/0": 7 });
      expect(storage.partitionTimes()).toEqual({ in: 1000 });
      expect(storage.processedTotal()).toBe(9);

      const outbox = new Outbox(storage);
      const changelog = outbox.nextGroup();
      expect(changelog.map((b) => [b.id, b.commitId, b.phase, b.topic, b.sequence, b.records])).toEqual([
        [31, 8, 0, "app-changelog", 1, [{ key: "k", value: "v1", timestamp: 5 }]],
      ]);
      expect(outbox.nextGroup(new Set([31])).map((b) => [b.id, b.sequence, b.records])).toEqual([[32, 2, [{ key: "k", value: "t1", timestamp: 5 }]]]);
      // A new batch takes the partition's next sequence and a new id; nothing joins the batches carried over.
      storage.transaction(() => outbox.add(outbox.joinableCommit(9), 1, { topic: "out", partition: 0 }, [{ key: "k", value: "t2" }]));
      const added = outbox.nextGroup(new Set([31, 32]));
      expect(added.map((b) => [b.id, b.commitId, b.sequence])).toEqual([[41, 9, 3]]);

      const tables = sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' ORDER BY name")
        .toArray()
        .map((r) => r.name);
      expect(tables).toEqual(["_schema", "kv_pages", "outbox_spill", "task_book"]);
      // Acknowledged, a carried-over batch's row goes.
      storage.transaction(() => outbox.remove(31));
      expect(sql.exec<{ id: number }>("SELECT id FROM outbox_spill ORDER BY id").toArray()).toEqual([{ id: 32 }]);
    });
  });
});

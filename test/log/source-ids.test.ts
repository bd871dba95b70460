/**
 * A partition's `appendUnseen` (src/log/partition/source-ids.ts): records of an at-least-once
 * source carry their message's id, and a partition appends each id once within its window — in
 * memory, across a restart (the set rebuilt from the rows), after a failed transaction — at the
 * cost of the batch's one row and nothing else; the window bounded in time and in ids.
 */
import { env } from "cloudflare:workers";
import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DurableLog } from "../../src/log/durable-log";
import { InvalidRecord } from "../../src/log/errors";
import { PartitionStore } from "../../src/log/partition-store";
import { SOURCE_ID_HEADER, type SourceIdWindow } from "../../src/log/partition/source-ids";
import { encodeBatch } from "../../src/log/record-batch";
import { topicConfig } from "../../src/log/topic-config";
import { TopicCatalog } from "../../src/log/topics";
import type { ProducerRecord, TopicPartition } from "../../src/log/types";
import { counted } from "../support/counted-storage";

let scratch = 0;
const T0 = 1_700_000_000_000;
const all = { maxRecords: 1_000, maxBytes: 1 << 20 };
const WINDOW: SourceIdWindow = { ms: 60_000, ids: 5 };

/** A record of message `id`. */
const message = (id: string, value = id): ProducerRecord => ({ key: "k", value, timestamp: T0, headers: [{ key: SOURCE_ID_HEADER, value: id }] });

function withStorage<T>(fn: (storage: DurableObjectStorage, tp: TopicPartition) => T | Promise<T>): Promise<T> {
  const name = `source-ids-${++scratch}`;
  return runInDurableObject(env.LOG_PARTITION.getByName(`${name}/0`), (_object, state) => fn(state.storage, { topic: name, partition: 0 }));
}

function appendUnseen(store: PartitionStore, tp: TopicPartition, records: ProducerRecord[]) {
  const encoded = encodeBatch(records)!;
  return store.appendUnseen(tp, encoded.text, encoded.measure);
}

const values = (store: PartitionStore, tp: TopicPartition) => store.fetch(tp, 0, all).records.map((r) => r.value);

describe("a partition's appendUnseen", () => {
  it("appends a message once: a redelivery, alone or among new messages, writes only what is new, in one row", () =>
    withStorage((raw, tp) => {
      const c = counted(raw);
      const now = T0;
      const store = new PartitionStore(c.storage, () => now, WINDOW);
      store.configure(tp, topicConfig("user"));
      c.written();
      expect(appendUnseen(store, tp, [message("a"), message("b")])).toEqual({ baseOffset: 0, count: 2, duplicate: false, duplicates: 0 });
      expect(c.written()).toEqual({ record_batches: 1 });
      // Redelivered whole: nothing written.
      expect(appendUnseen(store, tp, [message("b"), message("a")])).toEqual({ baseOffset: 2, count: 0, duplicate: true, duplicates: 2 });
      expect(c.written()).toEqual({});
      // Redelivered with a new message, and a message twice in one batch: the new one, once.
      expect(appendUnseen(store, tp, [message("a"), message("c"), message("c", "c again")])).toEqual({
        baseOffset: 2,
        count: 1,
        duplicate: false,
        duplicates: 2,
      });
      expect(c.written()).toEqual({ record_batches: 1 });
      expect(values(store, tp)).toEqual(["a", "b", "c"]);
      // The id stays on the record, for readers.
      expect(store.fetch(tp, 2, all).records[0]!.headers).toEqual([{ key: SOURCE_ID_HEADER, value: "c" }]);
    }));

  it("remembers the ids across a restart: the set is rebuilt from the rows", () =>
    withStorage((raw, tp) => {
      const c = counted(raw);
      const first = new PartitionStore(c.storage, () => T0, WINDOW);
      appendUnseen(first, tp, [message("a"), message("b")]);
      // Rows without ids (HTTP ingest) are passed over.
      first.append(tp, [{ key: "k", value: "plain" }]);
      const restarted = new PartitionStore(c.storage, () => T0 + 1, WINDOW);
      c.written();
      expect(appendUnseen(restarted, tp, [message("a"), message("b")])).toMatchObject({ count: 0, duplicate: true });
      expect(c.written()).toEqual({});
      expect(values(restarted, tp)).toEqual(["a", "b", "plain"]);
    }));

  it("forgets ids past the window's time or beyond its count, in memory and when rebuilt", () =>
    withStorage((raw, tp) => {
      const c = counted(raw);
      let now = T0;
      const store = new PartitionStore(c.storage, () => now, WINDOW);
      appendUnseen(store, tp, [message("old")]);
      now += WINDOW.ms + 1;
      expect(appendUnseen(store, tp, [message("old", "old again")])).toMatchObject({ count: 1 });
      // Six more ids: the first of them is beyond the window's five.
      appendUnseen(
        store,
        tp,
        ["1", "2", "3", "4", "5", "6"].map((id) => message(id)),
      );
      expect(appendUnseen(store, tp, [message("1", "1 again")])).toMatchObject({ count: 1 });
      expect(appendUnseen(store, tp, [message("6")])).toMatchObject({ count: 0 });
      // Rebuilt after a restart: the newest five ids (1 again, 3 … 6), not older ones.
      const restarted = new PartitionStore(c.storage, () => now, WINDOW);
      expect(
        appendUnseen(
          restarted,
          tp,
          ["1", "3", "4", "5", "6"].map((id) => message(id)),
        ),
      ).toMatchObject({ count: 0, duplicates: 5 });
      expect(appendUnseen(restarted, tp, [message("2", "2 again")])).toMatchObject({ count: 1 });
    }));

  it("reads back only the window's rows when it rebuilds the set, however many older rows the partition holds", () =>
    withStorage((raw, tp) => {
      const c = counted(raw);
      let now = T0;
      const store = new PartitionStore(c.storage, () => now, WINDOW);
      for (let i = 0; i < 50; i++) appendUnseen(store, tp, [message(`old-${i}`)]);
      now += WINDOW.ms + 1;
      appendUnseen(store, tp, [message("new-1")]);
      store.append(tp, [{ key: "k", value: "plain" }]);
      appendUnseen(store, tp, [message("new-2")]);
      const restarted = new PartitionStore(c.storage, () => now, WINDOW);
      c.read();
      expect(appendUnseen(restarted, tp, [message("new-1"), message("new-2"), message("old-1", "old-1 again")])).toMatchObject({ count: 1, duplicates: 2 });
      // The rebuild's read: the three rows within the window, the first one past it (and the one
      // SQLite reads ahead), not the 50 older rows.
      expect(c.read(/instr\(records/)).toBeLessThanOrEqual(5);
    }));

  it("remembers nothing of a transaction that failed: the message is appended when it comes again", () =>
    withStorage((raw, tp) => {
      const c = counted(raw);
      const store = new PartitionStore(c.storage, () => T0, WINDOW);
      appendUnseen(store, tp, [message("a")]);
      c.failNextTransaction();
      expect(() => appendUnseen(store, tp, [message("b")])).toThrow("crash before commit");
      expect(appendUnseen(store, tp, [message("b"), message("a")])).toMatchObject({ baseOffset: 1, count: 1, duplicates: 1 });
      expect(values(store, tp)).toEqual(["a", "b"]);
    }));

  it("refuses a record without its id", () =>
    withStorage((raw, tp) => {
      const store = new PartitionStore(counted(raw).storage, () => T0, WINDOW);
      expect(() => appendUnseen(store, tp, [message("a"), { key: "k", value: "no id" }])).toThrow(InvalidRecord);
      expect(values(store, tp)).toEqual([]);
    }));

  it("through the log's partition object: a redelivery after the object was aborted is left out", async () => {
    const log = new DurableLog(env.LOG_PARTITION, new TopicCatalog({ "source-ids-abort": 1 }));
    const tp = { topic: "source-ids-abort", partition: 0 };
    expect(await log.appendUnseen(tp, [message("a"), message("b")])).toEqual({ baseOffset: 0, count: 2, duplicate: false, duplicates: 0 });
    await abortAllDurableObjects();
    expect(await log.appendUnseen(tp, [message("b"), message("c")])).toEqual({ baseOffset: 2, count: 1, duplicate: false, duplicates: 1 });
    expect((await log.fetch(tp, 0, all)).records.map((r) => r.value)).toEqual(["a", "b", "c"]);
  });
});

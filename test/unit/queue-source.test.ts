/**
 * How a Queue's delivered batch becomes appends (src/connectors/queue-source.ts, pure): one batch
 * per partition in delivery order, each record carrying its message's id; a message that cannot
 * become a record a dead letter on a partition fixed by the message, or, without a dead-letter
 * topic, left to the Queue's retries.
 */
import { describe, expect, it } from "vitest";
import { planQueueBatch, QUEUE_HEADER, type QueueMessage, type QueueSource } from "../../src/connectors/queue-source";
import { partitionForKey } from "../../src/log/partitioner";
import { SOURCE_ID_HEADER } from "../../src/log/partition/source-ids";
import { ordersTotalsTopology } from "../../examples/orders-totals/topology";
import { inputSerdes } from "../../src/streams/topology/input-encoding";
import { DEAD_LETTER_HEADERS } from "../../src/streams/runtime/dead-letter";

const T0 = 1_700_000_000_000;
const serdes = inputSerdes(ordersTotalsTopology("fail"), "orders");
const message = (id: string, body: unknown): QueueMessage => ({ id, body, timestamp: new Date(T0), attempts: 1 });
const target = (deadLetterTopic?: string) => ({ serdes, partitions: (topic: string) => (topic === "orders" ? 4 : 2), deadLetterTopic });
const source: QueueSource = { topic: "orders", key: "customer" };

describe("planQueueBatch", () => {
  it("groups records by the key's partition, in delivery order, each with its message's id and time", () => {
    const messages = ["a", "b", "a", "c"].map((customer, i) => message(`m${i}`, { customer, amount: i }));
    const plan = planQueueBatch("q", messages, source, target());
    expect(plan.unplaced).toEqual([]);
    const a = plan.appends.find((x) => x.partition === partitionForKey("a", 4) && x.messageIds.includes("m0"))!;
    expect(a.messageIds.filter((id) => id === "m0" || id === "m2")).toEqual(["m0", "m2"]);
    expect(plan.appends.flatMap((x) => x.messageIds).sort()).toEqual(["m0", "m1", "m2", "m3"]);
    for (const append of plan.appends) {
      expect(append.topic).toBe("orders");
      append.records.forEach((record, i) => {
        expect(partitionForKey(record.key!, 4)).toBe(append.partition);
        expect(record.timestamp).toBe(T0);
        expect(record.headers).toEqual([{ key: SOURCE_ID_HEADER, value: append.messageIds[i] }]);
      });
    }
  });

  it("takes the key and value from the source's functions", () => {
    const plan = planQueueBatch(
      "q",
      [message("m", { who: "z", amount: 1, noise: true })],
      {
        topic: "orders",
        key: (body) => (body as { who: string }).who.toUpperCase(),
        value: (body) => ({ amount: (body as { amount: number }).amount }),
      },
      target(),
    );
    expect(plan.appends[0]!.records[0]).toMatchObject({ key: "Z", value: '{"amount":1}' });
  });

  it("dead-letters what cannot become a record, on a partition fixed by the message; without a dead-letter topic leaves it to the Queue", () => {
    const bad = [message("no-key", { amount: 1 }), message("bytes", new Uint8Array([1, 2, 3])), message("refused", { customer: "x", amount: "ten" })];
    const planned = planQueueBatch("q", bad, source, target("dlq"));
    expect(planned.unplaced).toEqual([]);
    const letters = planned.appends.flatMap((a) => a.records.map((record) => ({ partition: a.partition, record })));
    expect(planned.appends.every((a) => a.topic === "dlq")).toBe(true);
    const byId = (id: string) => letters.find((l) => l.record.headers!.some((h) => h.key === SOURCE_ID_HEADER && h.value === id))!;
    expect(byId("no-key").partition).toBe(partitionForKey("no-key", 2));
    expect(byId("no-key").record).toMatchObject({ key: null, value: '{"amount":1}', timestamp: T0 });
    expect(byId("bytes").record.value).toBe("AQID");
    expect(byId("refused")).toMatchObject({ partition: partitionForKey("x", 2), record: { key: "x" } });
    const headers = Object.fromEntries(byId("refused").record.headers!.map((h) => [h.key, h.value]));
    expect(headers).toMatchObject({ [QUEUE_HEADER]: "q", [DEAD_LETTER_HEADERS.exception]: "RefusedRecord", [DEAD_LETTER_HEADERS.offset]: "-1" });

    const unplaced = planQueueBatch("q", bad, source, target(undefined));
    expect(unplaced.appends).toEqual([]);
    expect(unplaced.unplaced.map((u) => u.id)).toEqual(["no-key", "bytes", "refused"]);
  });
});

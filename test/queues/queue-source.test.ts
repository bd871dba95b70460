/**
 * A Cloudflare Queue as the input of the default example's `orders` (docs/connectors.md), on
 * miniflare's queues: the Worker's `queue()` handler (`defineEdgeStreams`' `queues`) appends each
 * batch and acknowledges a message only once its append resolved; a redelivered message is
 * appended once, also after the invocation died between the append and its acknowledgement; a
 * failed append is retried, not acknowledged; a message that cannot become an order is
 * dead-lettered (with Kafka's error headers) and acknowledged. Batches are made with
 * `createMessageBatch` and handed to the Worker's handler; the last test sends through the
 * Worker's real producer binding and lets miniflare deliver.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, createMessageBatch, getQueueResult, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { SOURCE_ID_HEADER } from "../../src/log/partition/source-ids";
import { DEAD_LETTER_HEADERS } from "../../src/streams";
import { TestDriver, type TestOutput } from "../../platform/testing/test-driver";
import { call } from "../support/api";
import { keyOn } from "../support/keys";
import { until } from "../support/until";
import { FAILED_ORDERS, type OrderMessage, streams } from "./app";
import { DEAD_LETTER_TOPIC } from "../../examples/orders-totals/app";

const application = streams.applicationFor(env);
const driver = new TestDriver(env, application);
const T0 = 1_700_000_000_000;
let ids = 0;

type Delivered = { id: string; body: OrderMessage; attempts?: number; timestamp?: Date };

/** A message of an order, with an id of its own unless given. */
const order = (customer: string | undefined, amount: unknown, id = `msg-${++ids}`): Delivered => ({ id, body: { customer, amount } });

/** Delivers `messages` to the Worker's queue handler as one batch; what it acknowledged and retried, or the error it died of. */
async function deliver(queue: string, messages: readonly Delivered[], tamper?: (batch: MessageBatch<OrderMessage>) => void) {
  const batch = createMessageBatch<OrderMessage>(
    queue,
    messages.map((m) => ({ id: m.id, timestamp: m.timestamp ?? new Date(T0), body: m.body, attempts: m.attempts ?? 1 })),
  );
  tamper?.(batch);
  const ctx = createExecutionContext();
  const died = await streams.queue(batch as MessageBatch, env as never, ctx).then(
    () => undefined,
    (error: unknown) => error,
  );
  const result = await getQueueResult(batch, ctx);
  return {
    died,
    acked: [...(result.explicitAcks as string[])].sort(),
    retried: (result.retryMessages as { msgId: string }[]).map((m) => m.msgId).sort(),
    ackAll: result.ackAll,
  };
}

const ordersOf = async (customer: string) => (await driver.read("orders")).filter((r) => r.key === customer);
const lettersOf = async (id: string) => (await driver.read(DEAD_LETTER_TOPIC)).filter((r) => header(r, SOURCE_ID_HEADER) === id);
const header = (record: TestOutput, name: string) => record.headers.find((h) => h.key === name)?.value;
const sorted = (list: readonly string[]) => [...list].sort();

/** Rows a partition of `orders` holds (`record_batches`): what its appends wrote. */
const rowsOf = (partition: number) =>
  runInDurableObject(
    env.LOG_PARTITION.getByName(`orders/${partition}`),
    (_o, state) => state.storage.sql.exec<{ rows: number }>("SELECT COUNT(*) AS rows FROM record_batches").one().rows,
  );

describe("a Queue feeding orders", () => {
  it("appends each batch's messages, one row per partition, acknowledges them, and they are processed into totals", async () => {
    const alice = keyOn(0, "queue-alice");
    const bob = keyOn(1, "queue-bob");
    await driver.instances();
    const before = [await rowsOf(0), await rowsOf(1)];
    const messages = [order(alice, 2), order(bob, 5), order(alice, 3), order(bob, -1), order(alice, 10)];
    const result = await deliver("orders-queue", messages);
    expect(result).toEqual({ died: undefined, acked: sorted(messages.map((m) => m.id)), retried: [], ackAll: false });
    // Five messages, two partitions: two rows written.
    expect([(await rowsOf(0)) - before[0]!, (await rowsOf(1)) - before[1]!]).toEqual([1, 1]);
    await driver.runUntilQuiet();
    expect(await driver.get("totals", alice)).toEqual({ count: 3, sum: 15 });
    expect(await driver.get("totals", bob)).toEqual({ count: 2, sum: 4 });
    // Each record: the body through the topic's serde, the message's time, its id.
    const [first] = await ordersOf(alice);
    expect(first).toMatchObject({ value: JSON.stringify(messages[0]!.body), timestamp: T0 });
    expect(header(first!, SOURCE_ID_HEADER)).toBe(messages[0]!.id);
  });

  it("writes 0.04 rows per message for a full batch (100 messages) over the four partitions", async () => {
    const customers = [0, 1, 2, 3].map((p) => keyOn(p, "queue-full"));
    await driver.instances();
    const before = await Promise.all([0, 1, 2, 3].map(rowsOf));
    const messages = Array.from({ length: 100 }, (_, i) => order(customers[i % 4], 1));
    expect((await deliver("orders-queue", messages)).acked).toHaveLength(100);
    const after = await Promise.all([0, 1, 2, 3].map(rowsOf));
    expect(after.map((rows, p) => rows - before[p]!)).toEqual([1, 1, 1, 1]);
    // Delivered again: no row.
    expect((await deliver("orders-queue", messages)).acked).toHaveLength(100);
    expect(await Promise.all([0, 1, 2, 3].map(rowsOf))).toEqual(after);
    await driver.runUntilQuiet();
    for (const customer of customers) expect(await driver.get("totals", customer)).toEqual({ count: 25, sum: 25 });
  });

  it("appends a redelivered message once", async () => {
    const carol = keyOn(2, "queue-carol");
    await driver.instances();
    const [a, b, c] = [order(carol, 1), order(carol, 2), order(carol, 4)];
    expect((await deliver("orders-queue", [a, b])).acked).toEqual(sorted([a.id, b.id]));
    // Queues delivers at least once: b again (its second attempt), with a new message.
    expect((await deliver("orders-queue", [{ ...b, attempts: 2 }, c])).acked).toEqual(sorted([b.id, c.id]));
    // Both again, in another order and batch.
    expect((await deliver("orders-queue", [c, a])).acked).toEqual(sorted([a.id, c.id]));
    await driver.runUntilQuiet();
    expect((await ordersOf(carol)).map((r) => header(r, SOURCE_ID_HEADER))).toEqual([a.id, b.id, c.id]);
    expect(await driver.get("totals", carol)).toEqual({ count: 3, sum: 7 });
  });

  it("retries the messages of a failed append, acknowledging the other partitions'; the retry appends them", async () => {
    const dave = keyOn(3, "queue-dave");
    const erin = keyOn(0, "queue-erin");
    await driver.instances();
    // The fault route: partition 3 of orders fails its next call.
    expect((await call("/admin/log/fail", { body: { topic: "orders", partition: 3, times: 1 } })).status).toBe(200);
    const [d1, d2, e1] = [order(dave, 1), order(dave, 2), order(erin, 8)];
    const first = await deliver("orders-queue", [d1, e1, d2]);
    expect(first).toMatchObject({ died: undefined, acked: [e1.id], retried: sorted([d1.id, d2.id]) });
    expect(await ordersOf(dave)).toEqual([]);
    // Queues delivers the retried messages again.
    const retry = await deliver("orders-queue", [
      { ...d1, attempts: 2 },
      { ...d2, attempts: 2 },
    ]);
    expect(retry).toMatchObject({ acked: sorted([d1.id, d2.id]), retried: [] });
    await driver.runUntilQuiet();
    expect(await driver.get("totals", dave)).toEqual({ count: 2, sum: 3 });
    expect(await driver.get("totals", erin)).toEqual({ count: 1, sum: 8 });
  });

  it("appends once across a crash between the append and the acknowledgement", async () => {
    const frank = keyOn(1, "queue-frank");
    const grace = keyOn(2, "queue-grace");
    await driver.instances();
    const messages = [order(frank, 3), order(grace, 6), order(frank, 4)];
    // The invocation dies as it acknowledges: the appends are durable, Queues heard of no ack.
    const crashed = await deliver("orders-queue", messages, (batch) => {
      for (const message of batch.messages) {
        message.ack = () => {
          throw new Error("the invocation died before acknowledging");
        };
      }
    });
    expect(String(crashed.died)).toMatch(/died before acknowledging/);
    expect(crashed.acked).toEqual([]);
    expect((await ordersOf(frank)).map((r) => header(r, SOURCE_ID_HEADER))).toEqual([messages[0]!.id, messages[2]!.id]);
    // So Queues delivers the whole batch again.
    const again = await deliver(
      "orders-queue",
      messages.map((m) => ({ ...m, attempts: 2 })),
    );
    expect(again).toMatchObject({ died: undefined, acked: sorted(messages.map((m) => m.id)), retried: [] });
    await driver.runUntilQuiet();
    expect(await ordersOf(frank)).toHaveLength(2);
    expect(await driver.get("totals", frank)).toEqual({ count: 2, sum: 7 });
    expect(await driver.get("totals", grace)).toEqual({ count: 1, sum: 6 });
  });

  it("dead-letters a message that cannot become an order, acknowledges it, and goes on with the rest", async () => {
    const heidi = keyOn(3, "queue-heidi");
    await driver.instances();
    const noKey = order(undefined, 1);
    const badAmount = order(heidi, "ten");
    const poison: Delivered = { id: `msg-${++ids}`, body: { customer: heidi, amount: 1, poison: true } };
    const good = order(heidi, 5);
    const byField = await deliver("orders-queue", [noKey, badAmount, good]);
    expect(byField).toMatchObject({ died: undefined, acked: sorted([noKey.id, badAmount.id, good.id]), retried: [] });
    const byFunction = await deliver("orders-by-function", [poison]);
    expect(byFunction).toMatchObject({ died: undefined, acked: [poison.id], retried: [] });
    // A bad message delivered again is dead-lettered once.
    expect((await deliver("orders-queue", [{ ...badAmount, attempts: 2 }])).acked).toEqual([badAmount.id]);

    const [missing] = await lettersOf(noKey.id);
    expect(missing).toMatchObject({ key: null, value: JSON.stringify(noKey.body), timestamp: T0 });
    expect(header(missing!, DEAD_LETTER_HEADERS.exception)).toBe("TypeError");
    expect(header(missing!, DEAD_LETTER_HEADERS.message)).toMatch(/no field "customer"/);
    expect(header(missing!, "edge-streams.queue")).toBe("orders-queue");
    const refused = await lettersOf(badAmount.id);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ key: heidi, value: JSON.stringify(badAmount.body) });
    // What the serdes threw, as HTTP ingest would refuse the order.
    expect(header(refused[0]!, DEAD_LETTER_HEADERS.exception)).toBe("RefusedRecord");
    expect(header(refused[0]!, DEAD_LETTER_HEADERS.message)).toMatch(/does not match the schema: amount/);
    const [poisoned] = await lettersOf(poison.id);
    expect(header(poisoned!, DEAD_LETTER_HEADERS.exception)).toBe("PoisonOrder");
    expect(header(poisoned!, "edge-streams.queue")).toBe("orders-by-function");

    await driver.runUntilQuiet();
    expect(await driver.get("totals", heidi)).toEqual({ count: 1, sum: 5 });
  });

  it("fails a batch of a queue it was not told of, or one feeding a topic the application writes: Queues retries it", async () => {
    const stray = order("someone", 1);
    const unknown = await deliver("unknown-queue", [stray]);
    expect(String(unknown.died)).toMatch(/ConfigError: queue "unknown-queue" is consumed by this Worker but not named/);
    expect(unknown).toMatchObject({ acked: [], retried: [], ackAll: false });
    const written = await deliver("into-totals", [{ id: stray.id, body: { customer: "someone", amount: 1 } }]);
    expect(String(written.died)).toMatch(/the application writes totals itself/);
    expect(await driver.read("totals")).not.toContainEqual(expect.objectContaining({ key: "someone" }));
  });

  it("takes what the Worker sends to the queue: miniflare delivers it to the handler", async () => {
    const ivan = keyOn(0, "queue-ivan");
    await driver.instances();
    const queue = (env as unknown as { ORDERS_QUEUE: Queue<OrderMessage> }).ORDERS_QUEUE;
    await queue.sendBatch([{ body: { customer: ivan, amount: 20 } }, { body: { customer: ivan, amount: 22 } }]);
    await until(async () => (await ordersOf(ivan)).length === 2, 20_000, "the queue's batch appended to orders");
    await driver.runUntilQuiet();
    expect(await driver.get("totals", ivan)).toEqual({ count: 2, sum: 42 });
  });

  it("leaves a message whose append keeps failing to the Queue: retried max_retries times, then its dead-letter queue", async () => {
    const judy = keyOn(2, "queue-judy");
    await driver.instances();
    // Partition 2 of orders fails every call for now (the tasks' reads too: they catch up after).
    expect((await call("/admin/log/fail", { body: { topic: "orders", partition: 2, times: 1_000 } })).status).toBe(200);
    try {
      const queue = (env as unknown as { ORDERS_QUEUE: Queue<OrderMessage> }).ORDERS_QUEUE;
      await queue.send({ customer: judy, amount: 9 });
      await until(async () => (await driver.read(FAILED_ORDERS)).some((r) => r.key === judy), 30_000, "the order in the dead-letter queue's topic");
    } finally {
      // The route takes 1 or more: the partition's own call ends it.
      await env.LOG_PARTITION.getByName("orders/2").injectFailures(0);
    }
    const [failed] = (await driver.read(FAILED_ORDERS)).filter((r) => r.key === judy);
    expect(JSON.parse(failed!.value)).toEqual({ customer: judy, amount: 9 });
    expect(await ordersOf(judy)).toEqual([]);
  });
});

/**
 * Records checked at the door, on the default example (`orders` read with a zod schema serde:
 * `{"amount": n}`, n finite within ±1e15): a request with one order that does not match is
 * refused whole (400 InvalidRecord with the order's index) and nothing of it is appended; keys
 * are 1 to 4,096 bytes and every accepted key reads back by path; a record over
 * `MAX_INPUT_RECORD_BYTES` is 413 `record_too_large`; an overflowing sum never reaches a
 * customer's totals, through the door or around it (`/kafka`); validation errors name their
 * place as `records[0].key`.
 */
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_INPUT_KEY_BYTES, MAX_INPUT_RECORD_BYTES, utf8Length } from "../src/log/records";
import { TestDriver } from "../platform/testing/test-driver";
import { call, json, TOKEN } from "./support/api";
import { kafka, ok } from "./kafka-rest/support";
import { application, DEAD_LETTER_TOPIC, streams } from "./support/orders-app";

const driver = new TestDriver(env, application);
const PARTITIONS = application.catalog.partitions("orders");

async function endOffsets(topic = "orders"): Promise<number[]> {
  return Promise.all(Array.from({ length: PARTITIONS }, async (_, partition) => (await driver.log.offsets({ topic, partition })).latest));
}

const post = (records: unknown[]) => call("/topics/orders/records", { body: { records } });

describe("orders checked with the example's schema serde", () => {
  it("refuses the whole request for one order that does not match: 400 InvalidRecord with its index, nothing appended", async () => {
    const before = await endOffsets();
    const response = await post([
      { key: "door-a", value: { amount: 1 } },
      { key: "door-b", value: { amount: 2 } },
      { key: "door-c", value: { amount: "ten" } },
      { key: "door-d", value: { amount: 4 } },
    ]);
    expect(response.status).toBe(400);
    const body = await json(response);
    expect(body).toEqual({ error: "InvalidRecord", index: 2, message: expect.stringMatching(/^records\[2\]\.value: does not match the schema: amount: /) });
    expect(await endOffsets()).toEqual(before);
  });

  it.each([
    ["not an object", "ten"],
    ["no amount", { total: 3 }],
    ["an amount over the bound", { amount: 1e308 }],
    ["an amount just over the bound", { amount: 1e15 + 1 }],
  ])("refuses %s", async (_name, value) => {
    const before = await endOffsets();
    const response = await post([{ key: "door-e", value }]);
    expect(response.status).toBe(400);
    expect(await json(response)).toMatchObject({ error: "InvalidRecord", index: 0 });
    expect(await endOffsets()).toEqual(before);
  });

  it("refuses an amount JSON reads as Infinity (1e309)", async () => {
    const response = await call("/topics/orders/records", { rawBody: '{"records":[{"key":"door-inf","value":{"amount":1e309}}]}' });
    expect(response.status).toBe(400);
    expect(await json(response)).toMatchObject({ error: "InvalidRecord", index: 0 });
  });

  it("accepts an amount at the bound and drops fields the schema does not know when it reads the order", async () => {
    const response = await post([{ key: "door-bound", value: { amount: -1e15, note: "refund" } }]);
    expect(response.status).toBe(200);
    await driver.runUntilQuiet();
    expect(await driver.get("totals", "door-bound")).toEqual({ count: 1, sum: -1e15 });
  });
});

describe("an overflowing sum never reaches the totals", () => {
  it("dead-letters {amount: 1e308} written around the door (/kafka), twice, and the customer's sum stays a number", async () => {
    const key = "door-overflow";
    expect((await post([{ key, value: { amount: 5 } }])).status).toBe(200);
    const huge = { topic: "orders", key, value: JSON.stringify({ amount: 1e308 }) };
    await ok(kafka("/produce", { body: [huge, huge] }));
    expect((await post([{ key, value: { amount: 2 } }])).status).toBe(200);
    await driver.runUntilQuiet();
    expect(await driver.get("totals", key)).toEqual({ count: 2, sum: 7 });
    const letters = (await driver.read(DEAD_LETTER_TOPIC)).filter((r) => r.key === key);
    expect(letters.map((r) => r.value)).toEqual([huge.value, huge.value]);
  });
});

describe("keys", () => {
  it("refuses an empty key with a clear 400 naming records[i].key, appending nothing", async () => {
    const before = await endOffsets();
    const response = await post([
      { key: "door-k", value: { amount: 1 } },
      { key: "", value: { amount: 1 } },
    ]);
    expect(response.status).toBe(400);
    expect(await json(response)).toMatchObject({ error: "invalid_input", index: 1, message: expect.stringMatching(/^records\[1\]\.key: a key is not empty/) });
    expect(await endOffsets()).toEqual(before);
  });

  it(`accepts a key of ${MAX_INPUT_KEY_BYTES} bytes (UTF-8), reads it back percent-encoded, and refuses one byte more`, async () => {
    // Two-, three- and four-byte characters: the worst case of percent-encoding, three characters per byte.
    const key = `${"é".repeat(1_000)}${"€".repeat(500)}${"😀".repeat(147)}${"x".repeat(8)}`;
    expect(utf8Length(key)).toBe(MAX_INPUT_KEY_BYTES);
    expect((await post([{ key, value: { amount: 3 } }])).status).toBe(200);
    await driver.runUntilQuiet();
    const read = await call(`/stores/totals/keys/${encodeURIComponent(key)}`);
    expect(read.status).toBe(200);
    expect(await json(read)).toMatchObject({ key, value: { count: 1, sum: 3 } });

    const before = await endOffsets();
    const longer = await post([{ key: `${key}x`, value: { amount: 3 } }]);
    expect(longer.status).toBe(400);
    expect(await json(longer)).toMatchObject({
      error: "invalid_input",
      message: expect.stringMatching(new RegExp(`^records\\[0\\]\\.key: a key is at most ${MAX_INPUT_KEY_BYTES} bytes`)),
    });
    expect(await endOffsets()).toEqual(before);
  });
});

describe("records over MAX_INPUT_RECORD_BYTES", () => {
  it("answer 413 record_too_large naming the index, appending nothing", async () => {
    // The test project's MAX_BODY_BYTES (64 KiB) is far below a record's limit: this request runs
    // the same Worker with the default body limit's worth and more.
    const vars = { ...env, MAX_BODY_BYTES: String(2 << 20) };
    const note = "x".repeat(MAX_INPUT_RECORD_BYTES);
    const body = JSON.stringify({
      records: [
        { key: "door-small", value: { amount: 1 } },
        { key: "door-big", value: { amount: 1, note } },
      ],
    });
    const before = await endOffsets();
    const response = await streams.fetch(
      new Request("http://edge.test/topics/orders/records", {
        method: "POST",
        headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
        body,
      }),
      vars,
      createExecutionContext(),
    );
    expect(response.status).toBe(413);
    expect(await json(response)).toMatchObject({
      error: "record_too_large",
      index: 1,
      message: expect.stringMatching(/^records\[1\]: the record is \d+ bytes/),
    });
    expect(await endOffsets()).toEqual(before);
  });
});

describe("validation errors", () => {
  it.each([
    [{ records: [{ key: "a", value: 1, partition: -1 }] }, /^records\[0\]\.partition: /],
    [
      {
        records: [
          { key: "a", value: 1 },
          { key: 7, value: 1 },
        ],
      },
      /^records\[1\]\.key: /,
    ],
    [{ records: [{ key: "a", value: 1, timestamp: 1.5 }] }, /^records\[0\]\.timestamp: /],
  ])("name their place as records[i].field: %j", async (body, message) => {
    const response = await call("/topics/orders/records", { body });
    expect(response.status).toBe(400);
    expect((await json(response)).message).toMatch(message);
  });
});

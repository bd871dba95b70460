/**
 * Bad records on the real runtime, with the default example (issues #30 and #31): an order that
 * cannot be read — produced through `/kafka`, which stores what it is given, as a Kafka broker
 * does — goes to `orders-dead-letters` as it was, with Kafka's error headers (KIP-1034), exactly
 * once whatever crashes, and its partition goes on; a bad order as large as any input may be still
 * fits in its dead letter; and what cannot be dead-lettered (an order too large for it, or a
 * dead letter an earlier version left that the log refuses) stops its task with the reason,
 * instead of a partition that stays RUNNING while it retries the same send for ever.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_INPUT_RECORD_BYTES, MAX_RECORD_BYTES, recordBytes } from "../src/log/records";
import { COORDINATOR_NAME } from "../src/names";
import { DEAD_LETTER_HEADERS } from "../src/streams";
import type { TaskDescription } from "../src/task/describe";
import type { CommitStep } from "../src/task/protocol";
import { TestDriver, type TestOutput } from "../platform/testing/test-driver";
import { kafka, ok } from "./kafka-rest/support";
import { keyOn } from "./support/keys";
import { application, DEAD_LETTER_TOPIC } from "./support/orders-app";
import { oversizedDeadLetter, plantOutboxRow } from "./support/outbox-rows";
import { until } from "./support/until";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);

const describeOf = async (taskId: string) =>
  (await driver.task(await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), taskId)).describe()) as TaskDescription;
const lettersOf = async (key: string) => (await driver.read(DEAD_LETTER_TOPIC)).filter((r) => r.key === key);
const header = (record: TestOutput, name: string) => record.headers.find((h) => h.key === name)?.value;

describe("a bad order goes to orders-dead-letters and its partition goes on", { timeout: 60_000 }, () => {
  it("through /kafka: the order as it was, with Kafka's error headers; later orders processed, totals exact", async () => {
    const key = keyOn(1, "dead-letter-kafka");
    await driver.instances();
    const produced = await ok<{ partition: number; offset: number }[]>(
      kafka("/produce", {
        body: [
          { topic: "orders", key, value: '{"amount":2}' },
          { topic: "orders", key, value: '{"amount":"ten"}', headers: [{ key: "trace", value: "t-1" }], timestamp: 1_234 },
          { topic: "orders", key, value: '{"amount":3}' },
        ],
      }),
    );
    await driver.runUntilQuiet();

    const letters = await lettersOf(key);
    expect(letters).toHaveLength(1);
    const [letter] = letters;
    expect(letter).toMatchObject({ key, value: '{"amount":"ten"}', timestamp: 1_234 });
    expect(letter!.headers.map((h) => h.key)).toEqual([
      "trace",
      "__streams.errors.exception",
      "__streams.errors.message",
      "__streams.errors.stacktrace",
      "__streams.errors.topic",
      "__streams.errors.partition",
      "__streams.errors.offset",
    ]);
    expect(header(letter!, "trace")).toBe("t-1");
    // What the serde threw: serdes throw DeserializationError, as Kafka's deserializers throw SerializationException.
    expect(header(letter!, DEAD_LETTER_HEADERS.exception)).toBe("DeserializationError");
    expect(header(letter!, DEAD_LETTER_HEADERS.message)).not.toBe("");
    expect(header(letter!, DEAD_LETTER_HEADERS.stacktrace)).toMatch(/^DeserializationError: /);
    expect(header(letter!, DEAD_LETTER_HEADERS.topic)).toBe("orders");
    expect(header(letter!, DEAD_LETTER_HEADERS.partition)).toBe("1");
    expect(header(letter!, DEAD_LETTER_HEADERS.offset)).toBe(String(produced[1]!.offset));

    expect(await driver.get("totals", key)).toEqual({ count: 2, sum: 5 });
    const described = await describeOf("0_1");
    expect(described).toMatchObject({ state: "RUNNING", failure: null, lag: 0 });
    expect(described.droppedRecords).toBeGreaterThanOrEqual(1);
  });

  const steps: CommitStep[] = ["before-commit", "after-commit", "mid-send", "after-send"];
  it.each(steps)("exactly once across a crash at %s: one dead letter, totals exact", async (step) => {
    const key = keyOn(2, `dead-letter-crash-${step}`);
    await driver.instances();
    await driver.pipe("orders", [{ key, value: { amount: 1 } }]);
    await driver.runUntilQuiet();
    const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), "0_2");
    // The next commit takes a bad order and a good one; the object dies at `step` of it.
    await driver.task(active).crash(step);
    await driver.log.append({ topic: "orders", partition: 2 }, [
      { key, value: "not json" },
      { key, value: '{"amount":4}' },
    ]);
    const died = await driver
      .task(active)
      .drain()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(String(died)).toMatch(new RegExp(`injected crash at ${step}`));
    // Nobody drives it: its alarm (or the partition's wake-ups) bring it back.
    await until(
      async () => {
        const d = await describeOf("0_2").catch(() => undefined);
        return d?.state === "RUNNING" && d.lag === 0 && d.pendingBatches === 0;
      },
      30_000,
      "the task to recover on its own",
    );
    expect(await lettersOf(key)).toHaveLength(1);
    expect(await driver.get("totals", key)).toEqual({ count: 2, sum: 5 });
    const updates = (await driver.read("totals")).filter((r) => r.key === key).map((r) => JSON.parse(r.value).count);
    expect(updates).toEqual([1, 2]);
  });

  it("as large as any input may be (MAX_INPUT_RECORD_BYTES): its dead letter still fits, whole", async () => {
    const key = keyOn(1, "dead-letter-large");
    await driver.instances();
    const filler = MAX_INPUT_RECORD_BYTES - recordBytes(key, '{"amount":""}', []);
    const value = `{"amount":"${"9".repeat(filler)}"}`;
    expect(recordBytes(key, value, [])).toBe(MAX_INPUT_RECORD_BYTES);
    // Straight to the log: the test Worker's request bodies are capped far below a megabyte.
    await driver.log.append({ topic: "orders", partition: 1 }, [{ key, value }]);
    await driver.pipe("orders", [{ key, value: { amount: 7 } }]);
    await driver.runUntilQuiet();

    const [letter] = await lettersOf(key);
    expect(letter?.value).toBe(value);
    expect(recordBytes(letter!.key, letter!.value, letter!.headers)).toBeLessThanOrEqual(MAX_RECORD_BYTES);
    expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 7 });
    expect(await describeOf("0_1")).toMatchObject({ state: "RUNNING", failure: null, lag: 0, pendingBatches: 0 });
  });
});

describe("what cannot be dead-lettered stops its task with the reason, never a partition stuck RUNNING", { timeout: 60_000 }, () => {
  it("an order too large for its dead letter (issue #31: 999,990 bytes)", async () => {
    const key = keyOn(3, "big"); // short: the order is as large as the log takes
    await driver.instances();
    await driver.pipe("orders", [{ key, value: { amount: 1 } }]);
    await driver.runUntilQuiet();
    const bad = (await driver.log.append({ topic: "orders", partition: 3 }, [{ key, value: "x".repeat(999_990) }])).baseOffset;
    await driver.pipe("orders", [{ key, value: { amount: 2 } }]);
    await driver.runUntilQuiet();

    const stopped = await describeOf("0_3");
    expect(stopped.failure).toMatch(
      new RegExp(`its dead letter cannot be written: the dead letter of orders/3 offset ${bad} would be 1000\\d{3} bytes; a record holds at most 1000000`),
    );
    expect(stopped.lag).toBe(2);
    expect(stopped.pendingBatches).toBe(0);
    expect(await lettersOf(key)).toEqual([]);
    expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 1 });
  });

  it('a dead letter an earlier version left in the outbox, which the log refuses: the production handler ("fail") stops the task', async () => {
    const key = keyOn(0, "dead-letter-left");
    await driver.instances();
    await driver.pipe("orders", [{ key, value: { amount: 1 } }]);
    await driver.runUntilQuiet();
    const active = await activeInstance(env.COORDINATOR.getByName(COORDINATOR_NAME).assignments(), "0_0");
    // As it was left by a version that built dead letters without bounds; the upgrade restarts the object.
    await runInDurableObject(driver.task(active), (_object, state) =>
      plantOutboxRow(state.storage, { topic: DEAD_LETTER_TOPIC, partition: 0 }, [oversizedDeadLetter(key, { topic: "orders", partition: 0, offset: 1 })]),
    );
    await runInDurableObject(driver.task(active), (_object, state) => state.abort("injected crash: the upgrade restarts it")).catch(() => undefined);
    await driver.pipe("orders", [{ key, value: { amount: 2 } }]);
    await driver.runUntilQuiet();

    const stopped = await describeOf("0_0");
    expect(stopped.failure).toMatch(/^production failed: the log refused a record for orders-dead-letters\/0: record 0 is 1000\d{3} bytes/);
    expect(stopped.pendingBatches).toBe(1);
    expect(await lettersOf(key)).toEqual([]);
    // It stays stopped (nothing sent again, nothing processed) until an operator acts.
    await driver.task(active).drain();
    expect((await describeOf("0_0")).failure).toBe(stopped.failure);
    expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 1 });
  });
});

/**
 * What only the application writes: its changelog (and repartition) topics and its consumer
 * group's committed offsets. Writes from outside — ingest, every produce form of the `/kafka`
 * dialect, commits — are refused with 403 and change nothing; reading them stays allowed. A record
 * slipped into a changelog would be covered by the task's next checkpoint although its store never
 * wrote it (I1).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { TaskDescription } from "../src/task/describe";
import { TestDriver } from "../platform/testing/test-driver";
import { application } from "./support/orders-app";
import { call, json } from "./support/api";
import { keysOn } from "./support/keys";
import { endOffsets, failure, kafka, ok } from "./kafka-rest/support";
import { activeInstance } from "./support/active";

const driver = new TestDriver(env, application);
const CHANGELOG = "edge-streams-totals-changelog";
const GROUP = "edge-streams";

/** End offsets of the changelog and of the orders topic: what a refused write must leave as it was. */
async function ends() {
  return { changelog: await endOffsets(CHANGELOG, 4), orders: await endOffsets("orders", 4) };
}

async function committed(group: string): Promise<number[]> {
  const tps = Array.from({ length: 4 }, (_, partition) => ({ topic: "orders", partition }));
  return (await ok<{ offset: number }[]>(kafka(`/committed/${group}/reader`, { body: tps }))).map((o) => o.offset);
}

describe("the application's internal topics", () => {
  it("are the changelog of every store (and the repartition topics, none in this application)", () => {
    expect([...application.internalTopics]).toEqual([CHANGELOG]);
  });

  it("refuse POST /topics/:topic/records with 403, with or without an Idempotency-Key, appending nothing", async () => {
    await driver.pipe("orders", [{ key: "internal-seed", value: { amount: 1 } }]);
    await driver.runUntilQuiet();
    const before = await ends();
    for (const headers of [{}, { "Idempotency-Key": "internal-1" }] as Record<string, string>[]) {
      const response = await call(`/topics/${CHANGELOG}/records`, {
        body: { records: [{ key: "internal-seed", value: { count: 99, sum: 999 }, partition: 0 }] },
        headers,
      });
      expect(response.status).toBe(403);
      expect(await json(response)).toMatchObject({ error: "forbidden", message: expect.stringContaining("internal") });
    }
    expect(await ends()).toEqual(before);
  });

  it("refuse every produce form of /kafka with 403 in the dialect's shape, appending nothing (also the other topics of the request)", async () => {
    const before = await ends();
    const forbidden = async (path: string, options: Parameters<typeof kafka>[1]) => {
      const body = await failure(kafka(path, options), 403);
      expect(body.error).toContain("internal");
    };
    await forbidden("/produce", { body: { topic: CHANGELOG, value: "v", partition: 0 } });
    await forbidden("/produce", {
      body: [
        { topic: "orders", value: JSON.stringify({ amount: 1 }), partition: 0 },
        { topic: CHANGELOG, value: "v", partition: 0 },
      ],
    });
    await forbidden(`/produce/${CHANGELOG}`, { body: { value: "v", partition: 1 } });
    await forbidden(`/produce/${CHANGELOG}`, { body: [{ value: "v", partition: 1 }] });
    await forbidden(`/produce/${CHANGELOG}`, { raw: "a raw value" });
    // A GET never writes (404), nor does a body that is not JSON (415).
    await failure(kafka(`/produce/${CHANGELOG}/a-value?key=k`, { method: "GET" }), 404);
    await failure(kafka(`/produce/${CHANGELOG}`, { raw: "a raw value", headers: { "Content-Type": "text/plain" } }), 415);
    expect(await ends()).toEqual(before);
  });

  it("can still be read: fetch, and consume in another group", async () => {
    const keys = keysOn(2, 1, "internal-read");
    await driver.pipe("orders", [{ key: keys[0]!, value: { amount: 5 } }]);
    await driver.runUntilQuiet();
    const [, , end] = await endOffsets(CHANGELOG, 4);
    const fetched = await ok<{ key: string; value: string }[]>(kafka("/fetch", { body: { topic: CHANGELOG, partition: 2, offset: end! - 1 } }));
    expect(fetched.map((r) => [r.key, JSON.parse(r.value)])).toEqual([[keys[0], { count: 1, sum: 5 }]]);
    const consumed = await ok<unknown[]>(
      kafka("/consume/internal-readers/r1", { body: { topics: [CHANGELOG] }, headers: { "Kafka-Auto-Offset-Reset": "earliest" } }),
    );
    expect(consumed.length).toBeGreaterThan(0);
  });

  it("keep checkpoints true: after refused writes, a restore from the changelog gives exactly the store's values", async () => {
    const keys = keysOn(3, 2, "internal-i1");
    await driver.pipe(
      "orders",
      keys.map((key) => ({ key, value: { amount: 7 } })),
    );
    await driver.runUntilQuiet();
    await call(`/topics/${CHANGELOG}/records`, { body: { records: [{ key: keys[0]!, value: { count: 50, sum: 50 }, partition: 3 }] } });
    await kafka("/produce", { body: { topic: CHANGELOG, key: keys[1], value: JSON.stringify({ count: 60, sum: 60 }), partition: 3 } });
    const active = await activeInstance(driver.instances(), "0_3");
    const before = (await driver.task(active).describe()) as TaskDescription;
    expect(before.changelogs[0]!.checkpoint).toBe(before.changelogs[0]!.end);
    await driver.task(active).corrupt();
    await driver.runUntilQuiet();
    for (const key of keys) expect(await driver.get("totals", key)).toEqual({ count: 1, sum: 7 });
  });
});

describe("the application's consumer group", () => {
  it("refuses /kafka/commit with 403 (with and without offsets), committing nothing; /committed still reads it", async () => {
    await driver.pipe("orders", [{ key: "group-seed", value: { amount: 1 } }]);
    await driver.runUntilQuiet();
    const before = await committed(GROUP);
    expect(before.some((o) => o > 0)).toBe(true);
    const forbidden = await failure(kafka(`/commit/${GROUP}/outsider`, { body: [{ topic: "orders", partition: 0, offset: 0 }] }), 403);
    expect(forbidden.error).toContain(GROUP);
    await failure(kafka(`/commit/${GROUP}/outsider`, { method: "POST" }), 403);
    expect(await committed(GROUP)).toEqual(before);
  });

  it("refuses consuming in it with auto-commit on (403), allows it with auto-commit off", async () => {
    const before = await committed(GROUP);
    await failure(kafka(`/consume/${GROUP}/outsider`, { body: { topics: ["orders"] } }), 403);
    await failure(kafka(`/consume/${GROUP}/outsider/orders`, { method: "GET", headers: { "Kafka-Enable-Auto-Commit": "true" } }), 403);
    await ok(kafka(`/consume/${GROUP}/reader`, { body: { topics: ["orders"] }, headers: { "Kafka-Enable-Auto-Commit": "false" } }));
    await ok(kafka(`/delete-consumer/${GROUP}/reader`, { method: "POST" }));
    expect(await committed(GROUP)).toEqual(before);
  });

  it("leaves other groups' commits alone", async () => {
    await ok(kafka("/commit/someone-else/i", { body: [{ topic: "orders", partition: 0, offset: 0 }] }));
    expect((await committed("someone-else"))[0]).toBe(0);
  });
});

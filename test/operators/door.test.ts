/**
 * The door, on the real runtime (test/operators/door-topology.ts): HTTP ingest encodes a record
 * with the serdes of the source reading its topic — a string topic stores the string itself, a
 * number topic the number's text, JSON as JSON — exactly the bytes `TestDriver.pipe` and
 * `TopologyTestDriver.pipeInput` store; a record its serdes cannot read back refuses the whole
 * request (400 InvalidRecord with its index) and appends nothing; a null value is a tombstone;
 * store routes take the key as text and serialize it with the store's key serde; windows reads
 * accept `stale=true` as key reads do.
 */
import { env } from "cloudflare:workers";
import { TopologyTestDriver } from "edge-streams/testing";
import { describe, expect, it } from "vitest";
import { partitionForKey } from "../../src/log/partitioner";
import { TOMBSTONE_HEADER } from "../../src/log/stored-batch";
import type { TaskDescription } from "../../src/task/describe";
import { TestDriver } from "../../platform/testing/test-driver";
import { call, json } from "../support/api";
import { application } from "./app";
import { DOOR_TOPICS, MINUTE_MS } from "./door-topology";
import { operatorsTopology } from "./topology";
import { activeInstance } from "../support/active";

const driver = new TestDriver(env, application);
type DoorTopic = keyof typeof DOOR_TOPICS;

/** Within every topic's retention and window stores' reach: an hour ahead, minute-aligned. */
const BASE = Math.ceil((Date.now() + 3_600_000) / MINUTE_MS) * MINUTE_MS;

async function ends(topic: DoorTopic): Promise<number[]> {
  return Promise.all(Array.from({ length: DOOR_TOPICS[topic] }, async (_, partition) => (await driver.log.offsets({ topic, partition })).latest));
}

async function post(topic: DoorTopic, records: readonly { key: string; value: unknown; timestamp?: number }[]): Promise<Response> {
  return call(`/topics/${topic}/records`, { body: { records } });
}

/** The record at an offset, as the log holds it. */
async function stored(topic: string, partition: number, offset: number) {
  const page = await driver.log.fetch({ topic, partition }, offset, { maxRecords: 1, maxBytes: 1 << 20 });
  const record = page.records[0]!;
  return { partition, key: record.key, value: record.value, headers: record.headers };
}

/** The one record a `TestDriver.pipe` of `input` appended. */
async function piped(topic: DoorTopic, input: { key: string | null; value: unknown; timestamp?: number }) {
  const before = await ends(topic);
  await driver.pipe(topic, [input]);
  const after = await ends(topic);
  const partition = after.findIndex((end, p) => end !== before[p]);
  expect(after[partition]! - before[partition]!).toBe(1);
  return stored(topic, partition, before[partition]!);
}

describe("POST /topics/:topic/records encodes with the topic's serdes", () => {
  it("stores a Serdes.string() topic's string itself, and the store reads back `hello world`", async () => {
    const response = await post("notes", [{ key: "alice", value: "hello world" }]);
    expect(response.status).toBe(200);
    const [at] = (await json<{ offsets: { partition: number; offset: number }[] }>(response)).offsets;
    expect(await stored("notes", at!.partition, at!.offset)).toMatchObject({ key: "alice", value: "hello world", headers: [] });
    await driver.runUntilQuiet();
    const read = await call("/stores/latest-note/keys/alice");
    expect(read.status).toBe(200);
    expect(await json(read)).toMatchObject({ key: "alice", value: "hello world" });
  });

  it.each([
    ["notes", "parity-note", "hello world", { key: "parity-note", value: "hello world" }],
    ["scores", "parity-score", 42.5, { key: "parity-score", value: "42.5" }],
    ["tags", "NL", { color: "orange" }, { key: '"NL"', value: '{"color":"orange"}' }],
  ] as const)("stores the same bytes for %s over HTTP, TestDriver.pipe and TopologyTestDriver.pipeInput", async (topic, key, value, bytes) => {
    const response = await post(topic, [{ key, value, timestamp: BASE }]);
    expect(response.status, await response.clone().text()).toBe(200);
    const [at] = (await json<{ offsets: { partition: number; offset: number }[] }>(response)).offsets;
    const overHttp = await stored(topic, at!.partition, at!.offset);
    expect(overHttp).toEqual({ partition: partitionForKey(bytes.key, DOOR_TOPICS[topic]), ...bytes, headers: [] });

    expect(await piped(topic, { key, value, timestamp: BASE })).toEqual(overHttp);

    const oracle = new TopologyTestDriver(operatorsTopology());
    oracle.pipeInput(topic, key, value, { timestamp: BASE });
    const [inMemory] = oracle.records(topic);
    expect({ partition: inMemory!.partition, key: inMemory!.key, value: inMemory!.value }).toEqual({ partition: overHttp.partition, ...bytes });
  });

  it("reads the same value back on every path: the number topic's sum and the JSON-keyed store by its key as text", async () => {
    expect((await post("scores", [{ key: "sum-of-both", value: 1.5, timestamp: BASE }])).status).toBe(200);
    await driver.pipe("scores", [{ key: "sum-of-both", value: 2, timestamp: BASE }]);
    expect((await post("tags", [{ key: "BE", value: { color: "red" }, timestamp: BASE }])).status).toBe(200);
    await driver.runUntilQuiet();
    expect(await json(await call("/stores/score-sums/windows/sum-of-both"))).toMatchObject({
      key: "sum-of-both",
      windows: [{ window: { start: BASE }, value: 3.5 }],
    });
    // The tags store's keys are JSON ("BE" with quotes): the path takes the key itself.
    const tag = await call("/stores/tags/keys/BE");
    expect(tag.status).toBe(200);
    expect(await json(tag)).toMatchObject({ key: "BE", value: { color: "red" } });
    const scan = await json<{ items: { key: unknown; value: unknown }[] }>(await call("/stores/tags/keys?prefix=B"));
    expect(scan.items).toContainEqual({ key: "BE", value: { color: "red" } });
    expect(scan.items.every((item) => typeof item.key === "string" && item.key.startsWith("B"))).toBe(true);
    const bounded = await json<{ items: { key: unknown }[] }>(await call("/stores/tags/keys?from=BE&to=BE"));
    expect(bounded.items.map((item) => item.key)).toEqual(["BE"]);
  });

  it("appends a tombstone for a null value, piped or posted, and the table forgets the key", async () => {
    await driver.pipe("notes", [{ key: "bob", value: "first" }]);
    const tombstone = await piped("notes", { key: "bob", value: null });
    expect(tombstone).toMatchObject({ key: "bob", value: "", headers: [{ key: TOMBSTONE_HEADER, value: "1" }] });
    await driver.runUntilQuiet();
    expect((await call("/stores/latest-note/keys/bob")).status).toBe(404);

    await driver.pipe("notes", [{ key: "carol", value: "first" }]);
    const response = await post("notes", [{ key: "carol", value: null }]);
    const [at] = (await json<{ offsets: { partition: number; offset: number }[] }>(response)).offsets;
    expect(await stored("notes", at!.partition, at!.offset)).toEqual({ ...tombstone, partition: at!.partition, key: "carol" });
    await driver.runUntilQuiet();
    expect((await call("/stores/latest-note/keys/carol")).status).toBe(404);
  });
});

describe("records checked at the door", () => {
  it("refuses the whole request when one record does not read back with its topic's serdes: 400 InvalidRecord with its index, nothing appended", async () => {
    const before = await ends("scores");
    const response = await post("scores", [
      { key: "ok-1", value: 1 },
      { key: "ok-2", value: 2 },
      { key: "bad", value: "abc" },
    ]);
    expect(response.status).toBe(400);
    const body = await json(response);
    expect(body).toMatchObject({ error: "InvalidRecord", index: 2 });
    expect(body.message).toMatch(/^records\[2\]\.value: not a number/);
    expect(await ends("scores")).toEqual(before);
  });

  it("refuses a value a string topic's serializer cannot write as text", async () => {
    const before = await ends("notes");
    const response = await post("notes", [{ key: "n", value: 5 }]);
    expect(response.status).toBe(400);
    expect(await json(response)).toMatchObject({ error: "InvalidRecord", index: 0, message: expect.stringMatching(/^records\[0\]\.value: /) });
    expect(await ends("notes")).toEqual(before);
  });

  it("lets TestDriver.pipe refuse what HTTP ingest refuses, appending nothing", async () => {
    const before = await ends("scores");
    await expect(
      driver.pipe("scores", [
        { key: "fine", value: 1 },
        { key: "bad", value: "abc" as unknown as number },
      ]),
    ).rejects.toThrow(/record 1 of scores, its value: not a number/);
    expect(await ends("scores")).toEqual(before);
  });
});

describe("GET /stores/:store/windows/:key?stale=true", () => {
  it("answers from the restoring instance once it restored part of the store, marked stale, as key reads do", async () => {
    const key = "stale-windows";
    // More updates than a restore round's window (two batches of 25 in tests, RESTORE_READ_AHEAD=1): restoring stops part-way.
    const scores = 80;
    const found = application.store("score-sums")!;
    const taskId = `${found.subtopology.id}_${partitionForKey(key, found.subtopology.partitions)}`;
    await driver.pipe(
      "scores",
      Array.from({ length: scores }, (_, i) => ({ key, value: 1, timestamp: BASE + i })),
    );
    await driver.runUntilQuiet();
    const path = `/stores/score-sums/windows/${key}`;
    expect(await json(await call(`${path}?stale=true`))).toEqual({
      key,
      task: taskId,
      windows: [{ window: { start: BASE, end: BASE + MINUTE_MS }, value: scores }],
      stale: false,
    });

    expect((await call("/admin/restore/pause", { method: "POST" })).status).toBe(200);
    try {
      expect((await call(`/admin/tasks/${taskId}/corrupt`, { method: "POST" })).status).toBe(200);
      // Nothing restored yet: no instance can answer, stale or not.
      expect((await call(`${path}?stale=true`)).status).toBe(503);
      const active = await activeInstance(driver.instances(), taskId);
      const changelog = `operators-score-sums-changelog`;
      const restoredOf = async () => ((await driver.task(active).describe()) as TaskDescription).changelogs.find((c) => c.topic === changelog)!;
      for (let batch = 0; (await restoredOf()).checkpoint === null; batch++) {
        expect(batch, "batches until the window store's changelog restores some").toBeLessThan(20);
        expect((await call("/admin/restore/resume", { body: { maxBatches: 1 } })).status).toBe(200);
        await driver.restoreRound();
      }
      const described = (await driver.task(active).describe()) as TaskDescription;
      expect(described.state).toBe("RESTORING");

      const partial = await call(`${path}?stale=true`);
      expect(partial.status).toBe(200);
      const body = await json<{ windows: { value: number }[]; stale: boolean }>(partial);
      expect(body.stale).toBe(true);
      // What is restored so far: the 50 records of one window at most, compacted to the window's latest sum.
      expect(body.windows.every((w) => w.value < scores)).toBe(true);
      expect((await call(path)).status).toBe(503);
    } finally {
      expect((await call("/admin/restore/resume", { body: {} })).status).toBe(200);
    }
    await driver.runUntilQuiet();
    expect(await json(await call(`${path}?stale=true`))).toMatchObject({ windows: [{ value: scores }], stale: false });
  });

  it("refuses a stale value that is not true or false with a clear message", async () => {
    const response = await call("/stores/score-sums/windows/x?stale=yes");
    expect(response.status).toBe(400);
    expect((await json(response)).message).toMatch(/^stale: /);
  });
});

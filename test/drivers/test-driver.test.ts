/**
 * `TestDriver` reads a key-value, a window and a session store of the real runtime by typed keys,
 * as `TopologyTestDriver` does: the key is serialized with the store's key serde (here JSON, so a
 * store key differs from the key as written) to find the task that owns it and the entry. Each read
 * equals the same read of `TopologyTestDriver` fed the same records, and the values expected by
 * hand. A read of the wrong kind of store is refused, naming the read that fits.
 */
import { env } from "cloudflare:workers";
import { TopologyTestDriver } from "edge-streams/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { TestDriver } from "../../platform/testing/test-driver";
import { application } from "./app";
import { driversTopology, type Reading, type SensorKey, WINDOW_MS } from "./topology";

const driver = new TestDriver(env, application);
const oracle = new TopologyTestDriver(driversTopology());

/** Window-aligned, near the wall clock (inside the topics' retention). */
const BASE = Math.floor(Date.now() / WINDOW_MS) * WINDOW_MS;

const eu7: SensorKey = { site: "eu", sensor: 7 };
const us7: SensorKey = { site: "us", sensor: 7 };
const eu8: SensorKey = { site: "eu", sensor: 8 };

/**
 * [reading, ms after BASE]: eu/7 twice in the first minute and once 70 s in (a second window, a
 * second session). All from one gateway, so one input partition: the sensors' records reach the
 * windows in time order (from two, one task could forward 70 s before the other forwards 5 s,
 * which would then be too late for its window, as in Kafka).
 */
const READINGS: readonly [Reading, number][] = [
  [eu7, 0],
  [us7, 5_000],
  [eu7, 10_000],
  [eu8, 20_000],
  [eu7, 70_000],
];

beforeAll(async () => {
  const records = READINGS.map(([reading, at]) => ({ key: "gateway-1", value: reading, timestamp: BASE + at }));
  await driver.pipe("readings", records);
  for (const r of records) oracle.pipe("readings", r.key, JSON.stringify(r.value), { timestamp: r.timestamp });
  await driver.runUntilQuiet();
});

describe("TestDriver reads by typed keys", () => {
  it("get: a key-value store, by a key serialized with the store's key serde", async () => {
    expect(application.store("readings-per-sensor")!.store.keySerde.serialize(eu7)).toBe('{"site":"eu","sensor":7}');
    expect(await driver.get<SensorKey, number>("readings-per-sensor", eu7)).toBe(3);
    expect(await driver.get<SensorKey, number>("readings-per-sensor", us7)).toBe(1);
    expect(await driver.get<SensorKey, number>("readings-per-sensor", eu8)).toBe(1);
    expect(await driver.get<SensorKey, number>("readings-per-sensor", { site: "eu", sensor: 9 })).toBeUndefined();
    for (const key of [eu7, us7, eu8]) expect(await driver.get("readings-per-sensor", key)).toEqual(oracle.get("readings-per-sensor", key));
  });

  it("windows: a window store's windows of a key, oldest first, within [from, to] by start", async () => {
    const first = { start: BASE, end: BASE + WINDOW_MS };
    const second = { start: BASE + WINDOW_MS, end: BASE + 2 * WINDOW_MS };
    expect(await driver.windows<SensorKey, number>("readings-per-minute", eu7)).toEqual([
      { window: first, value: 2 },
      { window: second, value: 1 },
    ]);
    expect(await driver.windows("readings-per-minute", eu7, BASE + WINDOW_MS, BASE + WINDOW_MS)).toEqual([{ window: second, value: 1 }]);
    expect(await driver.windows("readings-per-minute", us7)).toEqual([{ window: first, value: 1 }]);
    expect(await driver.windows("readings-per-minute", { site: "eu", sensor: 9 })).toEqual([]);
    for (const key of [eu7, us7, eu8]) expect(await driver.windows("readings-per-minute", key)).toEqual(oracle.windows("readings-per-minute", key));
  });

  it("sessions: a session store's sessions of a key, oldest first", async () => {
    expect(await driver.sessions<SensorKey, number>("reading-sessions", eu7)).toEqual([
      { window: { start: BASE, end: BASE + 10_000 }, value: 2 },
      { window: { start: BASE + 70_000, end: BASE + 70_000 }, value: 1 },
    ]);
    expect(await driver.sessions("reading-sessions", eu8)).toEqual([{ window: { start: BASE + 20_000, end: BASE + 20_000 }, value: 1 }]);
    expect(await driver.sessions("reading-sessions", { site: "eu", sensor: 9 })).toEqual([]);
    for (const key of [eu7, us7, eu8]) expect(await driver.sessions("reading-sessions", key)).toEqual(oracle.sessions("reading-sessions", key));
  });

  it("refuses a read of the wrong kind of store, naming the one that fits", async () => {
    await expect(driver.get("readings-per-minute", eu7)).rejects.toThrow("store readings-per-minute is a window store: read it with windows()");
    await expect(driver.get("reading-sessions", eu7)).rejects.toThrow("store reading-sessions is a session store: read it with sessions()");
    await expect(driver.windows("readings-per-sensor", eu7)).rejects.toThrow("store readings-per-sensor is a key-value store: read it with get()");
    await expect(driver.sessions("readings-per-minute", eu7)).rejects.toThrow("store readings-per-minute is a window store: read it with windows()");
    await expect(driver.get("no-such-store", eu7)).rejects.toThrow("unknown store no-such-store");
  });
});

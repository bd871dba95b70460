/**
 * Versioned tables on the platform-independent runtime: a versioned store's history and a
 * stream-table join's grace buffer restored from their changelogs join exactly as the wiped ones
 * would have; history beyond the retention is deleted from the companion store; out-of-order
 * updates reach `toStream()` (as Kafka's), updates older than the retention are dropped and counted.
 */
import { describe, expect, it } from "vitest";
import { Materialized, Serdes, StreamsBuilder, Stores, TopologyTestDriver } from "../../src/streams";
import { versionsStoreName } from "../../src/streams/topology/graph";

const str = { key: Serdes.string(), value: Serdes.string() };

/** Stream `s` joined with versioned table `t` (retention 100 ms), optionally through a grace period, to `out`. */
function versionedJoin(gracePeriodMs?: number) {
  const builder = new StreamsBuilder();
  const table = builder.table("t", str, Materialized.as(Stores.persistentVersionedKeyValueStore("rows", 100)));
  builder
    .stream("s", str)
    .join(table, (value, row) => `${value}+${row}`, { ...str, name: "j", ...(gracePeriodMs === undefined ? {} : { gracePeriodMs }) })
    .to("out", str);
  table.toStream().to("changes", str);
  return new TopologyTestDriver(builder.build({ applicationId: "versioned", topics: { s: 1, t: 1, out: 1, changes: 1 } }));
}

const out = (driver: TopologyTestDriver, topic = "out") => driver.records(topic).map((r) => [r.key, r.value, r.timestamp]);

describe("versioned tables", () => {
  it("join a stream record with the row as of its timestamp", () => {
    const driver = versionedJoin();
    driver.pipe("t", "k", "v1", { timestamp: 10 });
    driver.pipe("t", "k", "v2", { timestamp: 20 });
    driver.pipe("s", "k", "a", { timestamp: 15 });
    driver.pipe("s", "k", "b", { timestamp: 25 });
    driver.pipe("s", "k", "c", { timestamp: 5 });
    expect(out(driver)).toEqual([
      ["k", "a+v1", 15],
      ["k", "b+v2", 25],
    ]);
    // Queries read the latest row from the store itself.
    expect(driver.get("rows", "k")).toBe("v2");
  });

  it("forward out-of-order updates to toStream, and drop (and count) those older than the history retention", () => {
    const driver = versionedJoin();
    driver.pipe("t", "k", "v2", { timestamp: 200 });
    driver.pipe("t", "k", "v1", { timestamp: 150 });
    driver.pipe("t", "k", "v0", { timestamp: 99 });
    expect(out(driver, "changes")).toEqual([
      ["k", "v2", 200],
      ["k", "v1", 150],
    ]);
    expect(driver.tasks.get("0_0")!.eventMetrics.invalidRecordsDropped).toBe(1);
    expect(driver.get("rows", "k")).toBe("v2");
  });

  it("delete versions no read may see any more from the companion store", () => {
    const driver = versionedJoin();
    driver.pipe("t", "k", "v1", { timestamp: 0 });
    driver.pipe("t", "k", "v2", { timestamp: 50 });
    driver.pipe("t", "k", "v3", { timestamp: 151 });
    const versions = () => Object.keys(driver.backends.get("0_0")!.contents(versionsStoreName("rows"))).filter((k) => k.startsWith("v"));
    // Stream time 151, retention 100: v1 (valid until 50) can no longer be read; v2 (until 151) can.
    expect(versions()).toHaveLength(1);
    driver.pipe("s", "k", "late", { timestamp: 45 });
    driver.pipe("s", "k", "kept", { timestamp: 60 });
    expect(out(driver)).toEqual([["k", "kept+v2", 60]]);
    driver.pipe("t", "other", "x", { timestamp: 260 });
    expect(versions()).toHaveLength(0);
  });

  it("restored from their changelogs, a versioned table and a grace buffer join exactly as before the wipe", () => {
    const before: [string, string, string, number][] = [
      ["t", "k", "v1", 10],
      ["s", "k", "a", 12],
      ["t", "k", "v2", 14],
      ["s", "k", "b", 16],
    ];
    const after: [string, string, string, number][] = [
      ["t", "k", "v0", 11],
      ["s", "k", "c", 30],
      ["s", "k", "d", 13],
      ["s", "k", "e", 60],
    ];
    const run = (restore: boolean) => {
      const driver = versionedJoin(10);
      for (const [topic, key, value, timestamp] of before) driver.pipe(topic, key, value, { timestamp });
      if (restore) driver.restoreTask("0_0");
      for (const [topic, key, value, timestamp] of after) driver.pipe(topic, key, value, { timestamp });
      return driver;
    };
    const reference = run(false);
    const restored = run(true);
    // a and b waited 10 ms, so the late v0 (valid from 11 to 14) is what a (at 12) joins; d (at 13)
    // is too late to wait and joins v0 at once; c waits for e.
    expect(out(restored)).toEqual([
      ["k", "a+v0", 12],
      ["k", "b+v2", 16],
      ["k", "d+v0", 13],
      ["k", "c+v2", 30],
    ]);
    expect(out(restored)).toEqual(out(reference));
    for (const store of ["rows", versionsStoreName("rows"), "j-Buffer"]) {
      expect(restored.backends.get("0_0")!.contents(store), store).toEqual(reference.backends.get("0_0")!.contents(store));
    }
  });
});

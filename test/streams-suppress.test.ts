import { describe, expect, it } from "vitest";
import {
  changelogTopicName,
  Materialized,
  Serdes,
  SessionWindows,
  StreamsBuilder,
  Suppressed,
  TimeWindows,
  TopologyError,
  TopologyTestDriver,
  type KGroupedStream,
  type KTable,
  type Windowed,
} from "../src/streams";

const str = { key: Serdes.string(), value: Serdes.string() };

function suppressed<V, T extends null>(table: (grouped: KGroupedStream<string, string>) => KTable<Windowed<string>, V, T>) {
  const builder = new StreamsBuilder();
  table(builder.stream("in", str).groupByKey()).suppress(Suppressed.untilWindowCloses({ name: "final" })).toStream().to("out");
  return new TopologyTestDriver(builder.build({ applicationId: "sup", topics: { in: 1, out: 1 } }));
}

const pipeAll = (driver: TopologyTestDriver, records: [string, number][]) => records.forEach(([key, timestamp]) => driver.pipe("in", key, "x", { timestamp }));
const out = (driver: TopologyTestDriver) => driver.records("out").map((r) => [r.key, r.value]);
const tumblingCounts = (g: KGroupedStream<string, string>) => g.windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).count(Materialized.as("counts"));

describe("suppress(untilWindowCloses)", () => {
  it("emits each window once, with its final value, when stream time reaches end + grace", () => {
    const driver = suppressed(tumblingCounts);
    pipeAll(driver, [["a", 1], ["a", 3], ["b", 4], ["a", 12], ["a", 14], ["a", 9]]);
    expect(out(driver)).toEqual([]);
    pipeAll(driver, [["c", 15]]);
    expect(out(driver)).toEqual([
      ["a@0/10", "3"],
      ["b@0/10", "1"],
    ]);
    pipeAll(driver, [["a", 2], ["a", 26]]); // the first is late: no second result for a@0/10
    expect(out(driver).slice(2)).toEqual([
      ["a@10/20", "2"],
      ["c@10/20", "1"],
    ]);
    // The buffer held the pending windows; what it emitted it deleted, through the changelog.
    const changelog = driver.records(changelogTopicName("sup", "final"), 0);
    expect(changelog.filter((r) => r.value === null).length).toBeGreaterThanOrEqual(8);
    expect(Object.keys(driver.backends.get("0_0")!.contents("final")).filter((k) => k.startsWith("d"))).toHaveLength(1);
  });

  it("emits only the final session: merged-away sessions never leave the buffer", () => {
    const driver = suppressed((g) => g.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(10)).count(Materialized.as("sessions")));
    pipeAll(driver, [["a", 0], ["a", 5], ["b", 7], ["a", 100]]);
    expect(out(driver)).toEqual([
      ["a@0/5", "2"],
      ["b@7/7", "1"],
    ]);
    pipeAll(driver, [["a", 111]]);
    expect(out(driver).slice(2)).toEqual([["a@100/100", "1"]]);
  });

  it("works on derived windowed tables; a filtered-out window is simply never emitted", () => {
    const driver = suppressed((g) => tumblingCounts(g).filter((_w, count) => count >= 2).mapValues((count) => `${count} records`));
    // Only updates that pass the filter reach suppress and move its stream time (the filter, which
    // has old values, drops z's first count as Kafka's does): z's second record closes the windows.
    pipeAll(driver, [["a", 1], ["a", 2], ["b", 3], ["c", 4], ["c", 5], ["c", 6], ["z", 40]]);
    expect(out(driver)).toEqual([]);
    pipeAll(driver, [["z", 41]]);
    expect(out(driver)).toEqual([
      ["a@0/10", '"2 records"'],
      ["c@0/10", '"3 records"'],
    ]);
  });

  it("needs a windowed table", () => {
    const builder = new StreamsBuilder();
    const table = builder.stream("in", str).groupByKey().count();
    expect(() => table.suppress(Suppressed.untilWindowCloses())).toThrow(TopologyError);
  });

  it("a buffer replayed from its changelog emits exactly what the old one would have", () => {
    const before: [string, number][] = [["a", 1], ["b", 2], ["a", 11], ["b", 16]];
    const after: [string, number][] = [["a", 12], ["a", 3], ["b", 25], ["c", 50]];
    const run = (restore: boolean) => {
      const driver = suppressed(tumblingCounts);
      pipeAll(driver, before);
      if (restore) driver.restoreTask("0_0");
      pipeAll(driver, after);
      return driver;
    };
    const reference = run(false);
    const restored = run(true);
    expect(out(restored)).toEqual([
      ["a@0/10", "1"],
      ["b@0/10", "1"],
      ["a@10/20", "2"],
      ["b@10/20", "1"],
      ["b@20/30", "1"],
    ]);
    expect(out(restored)).toEqual(out(reference));
    expect(restored.backends.get("0_0")!.contents("final")).toEqual(reference.backends.get("0_0")!.contents("final"));
  });
});
